#!/bin/sh
# queue-bench.sh - the driver of queue-bench (see doc/benchmarks.md):
# throughput of jp_spsc/jp_mpsc/jp_mpmc against ck_ring and a pthread_mutex
# ring, producers:consumers 1:1, 2:1, 2:2 and 4:4, one element per call and
# (KIND:P:C:16) batches of 16, interleaved and repeated; then, once, the CPU
# time of a jp_mpsc/jp_mpmc caller blocked for 2 seconds (the wait rows).
set -u
name=queue-bench
. "$(dirname "$0")/driver-common.sh"
prog="$top_builddir/tests/bench/queue-bench"

items=2000000
limit=${JPSYNC_BENCH_TIMEOUT_RUN:-60}	# seconds per run
# KIND:P:C[:BATCH[:pin]]; pin: each thread on its own CPU in turn (a pair
# never shares a core; see doc/bench-costs.md for why the spsc row needs it).
workloads="spsc:1:1 spsc:1:1:1:pin spsc:1:1:16 mpsc:1:1 mpsc:2:1 mpmc:1:1 mpmc:1:1:1:pin mpmc:1:1:16 mpmc:2:1 mpmc:2:1:16 mpmc:2:2 mpmc:4:4"
wait_s=2
if [ "$quick" = 1 ]; then
  items=100000
  workloads="spsc:1:1 spsc:1:1:1:pin spsc:1:1:16 mpsc:2:1 mpmc:2:2"
  wait_s=0.5
fi

impls=""
for impl in jpsync ck_ring pthread_mutex; do
  "$prog" "$impl" spsc 1 1 10 > /dev/null 2>&1
  case $? in
    0) impls="$impls $impl" ;;
    77) echo "$impl: not available in this build (Concurrency Kit's <ck_ring.h> missing, or a sanitizer build); skipped" >> "$notes" ;;
    *) echo "$impl: does not run; skipped" >> "$notes" ;;
  esac
done

fail=0
rep=1
while [ "$rep" -le "$reps" ]; do
  for w in $workloads; do
    kind=${w%%:*}; r=${w#*:}; p=${r%%:*}; r=${r#*:}; c=${r%%:*}
    batch=1; pin=0
    case $r in *:*) batch=${r#*:} ;; esac
    case $batch in *:pin) batch=${batch%:pin}; pin=1 ;; esac
    wl=${kind}_${p}p${c}c
    [ "$batch" = 1 ] || wl=${wl}_b$batch
    pinarg=
    [ "$pin" = 0 ] || { wl=${wl}_pinned; pinarg=pin; }
    for impl in $impls; do
      out=$(timeout "$limit" "$prog" "$impl" "$kind" "$p" "$c" "$items" "$batch" $pinarg 2>/dev/null)
      rc=$?
      if [ $rc -eq 0 ]; then
        set -- $out
        echo "$name,$wl,$((p + c)),$impl,$rep,$1,Mitems/s,higher,$2" >> "$csv"
      elif [ $rc -eq 124 ] && [ "$impl" != jpsync ]; then
        # A peer that does not finish is a finding, not a failure of ours:
        # ck_ring's MPMC producers spin while a preempted peer holds the
        # ring, which with more threads than cores can last a long time.
        echo "$impl $wl repetition $rep: did not finish in $limit s; no row" >> "$notes"
      else
        echo "$name,$wl,$((p + c)),$impl,$rep,FAILED,Mitems/s,higher," >> "$csv"
        fail=1
      fi
    done
  done
  rep=$((rep + 1))
done

# The wait rows: one run, every case at once (queue-bench.c); the goal is
# under 1% of a CPU.  ck_ring and the mutex ring have no blocking call.
if out=$(timeout "$limit" "$prog" wait "$wait_s" 2>/dev/null); then
  echo "$out" | while read -r case pct; do
    echo "$name,wait_$case,1,jpsync,1,$pct,%CPU,lower," >> "$csv"
  done
  echo "wait rows: %CPU of a caller blocked $wait_s s (getrusage RUSAGE_THREAD / wall time)" >> "$notes"
  echo "$out" | sed 's/^/  /' >> "$notes"
else
  echo "$name,wait,1,jpsync,1,FAILED,%CPU,lower," >> "$csv"
  fail=1
fi

# Medians, and jpsync against the best peer of the same workload.
awk -F, -v ours=jpsync "$median_awk"'
NR == 1 || $7 == "%CPU" { next }	# the wait rows are in the notes
$6 != "FAILED" { v[$2 SUBSEP $4] = v[$2 SUBSEP $4] " " $6; if (!($2 in seenw)) { seenw[$2] = 1; w[nw++] = $2 } if (!($4 in seeni)) { seeni[$4] = 1; im[ni++] = $4 } }
END {
  printf "%-20s", "workload"; for (i = 0; i < ni; i++) printf " %14s", im[i]; printf " %18s\n", "jpsync/best peer"
  for (k = 0; k < nw; k++) {
    printf "%-20s", w[k]; best = 0; mine = 0
    for (i = 0; i < ni; i++) {
      key = w[k] SUBSEP im[i]
      if (key in v) { m = median_str(v[key]); printf " %14.2f", m; if (im[i] == ours) mine = m; else if (m > best) best = m }
      else printf " %14s", "-"
    }
    if (best > 0) printf " %17.2fx\n", mine / best; else printf " %18s\n", "-"
  }
  print "(million elements per second, medians)"
}' "$csv"
[ -s "$notes" ] && cat "$notes"
exit $fail
