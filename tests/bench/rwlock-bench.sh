#!/bin/sh
# rwlock-bench.sh - reader-writer locks (driver contract: see
# tests/bench/README).
#
#   rwlock      0, 10 and 50% writes at 1, 2, 4, 8, 16 threads for
#               jp_rwlock, pthread_rwlock (glibc's default),
#               pthread_rwlock_wp (glibc's writer-preferring kind) and
#               ck_rwlock (throughput, spread of acquisitions per thread)
#   uncontended instructions per read lock+unlock pair (callgrind)
#
# JPSYNC_BENCH_REPS (default 5), JPSYNC_BENCH_QUICK=1 (1, 2, 4 threads,
# short runs), JPSYNC_BENCH_OUT (default $top_builddir/tests/bench/results).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
reps=${JPSYNC_BENCH_REPS:-5}
quick=${JPSYNC_BENCH_QUICK:-0}
out=${JPSYNC_BENCH_OUT:-$top_builddir/tests/bench/results}
mkdir -p "$out" || exit 1
csv=$out/rwlock-bench.csv
notes=$out/rwlock-bench.notes
: > "$notes"
echo "benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb" > "$csv"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prog=$top_builddir/tests/bench/rwlock-bench
if [ ! -x "$prog" ]; then echo "rwlock-bench: $prog not built (make check builds it)"; exit 1; fi

if [ "$quick" = 1 ]; then
  threads="1 2 4"; secs=0.05
else
  threads="1 2 4 8 16"; secs=0.3
fi
failed=0

impls=""
for i in jp_rwlock pthread_rwlock pthread_rwlock_wp ck_rwlock; do
  if "$prog" avail $i 2>/dev/null; then
    impls="$impls $i"
  else
    echo "$i: not built in (Concurrency Kit's <ck_rwlock.h> not found, or a sanitizer build; install libck-dev)" >> "$notes"
  fi
done

# run REP THREADS IMPL COMMAND...: append the rows the command prints, or
# FAILED rows.
run() {
  rep=$1 th=$2 im=$3 wl=$4; shift 4
  if "$@" > "$tmp/rows" 2> "$tmp/err"; then
    awk -F, -v rep="$rep" 'BEGIN { OFS = "," } NF == 8 { print $1, $2, $3, $4, rep, $5, $6, $7, $8 }' "$tmp/rows" >> "$csv"
  else
    failed=1
    echo "rwlock-bench: FAILED: $*" >&2; cat "$tmp/err" >&2
    echo "rwlock,$wl,$th,$im,$rep,FAILED,Mops/s,higher," >> "$csv"
  fi
}

rep=1
while [ $rep -le "$reps" ]; do
  for pct in 0 10 50; do
    for t in $threads; do
      for i in $impls; do
        run $rep $t $i "writes-${pct}pct" "$prog" mix $pct $i $t $secs
      done
    done
  done
  rep=$((rep + 1))
done

# Uncontended read lock+unlock: instructions, by callgrind (2N - N pairs).
if command -v valgrind >/dev/null 2>&1; then
  n=20000
  for i in jp_rwlock pthread_rwlock; do
    for k in 1 2; do
      "$top_builddir/libtool" --mode=execute valgrind --tool=callgrind \
        --callgrind-out-file="$tmp/cg.$k" "$prog" pairs $i $((n * k)) > /dev/null 2>&1
    done
    a=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$tmp/cg.1" | head -n1)
    b=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$tmp/cg.2" | head -n1)
    if [ -n "$a" ] && [ -n "$b" ]; then
      v=$(awk -v a="$a" -v b="$b" -v n=$n 'BEGIN { printf "%.1f", (b - a) / n }')
    else
      v=FAILED; failed=1
    fi
    echo "uncontended,read lock+unlock,1,$i,1,$v,instructions,lower," >> "$csv"
  done
else
  echo "uncontended: valgrind not found, instruction counts skipped" >> "$notes"
fi

# Medians, and jp_rwlock against pthread_rwlock and against the best peer.
grep -v '^benchmark,' "$csv" | grep -v ',FAILED,' |
  sort -t, -k1,1 -k2,2 -k3,3n -k4,4 -k6,6g |
  awk -F, '
    function flush() {
      if (n == 0) return
      m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      print key "," impl "," m "," unit "," better
      n = 0
    }
    {
      k = $1 "," $2 "," $3
      if (k != key || $4 != impl) { flush(); key = k; impl = $4 }
      v[++n] = $6; unit = $7; better = $8
    }
    END { flush() }' > "$tmp/medians"
awk -F, '
  {
    k = $1 "," $2 "," $3
    if (!(k in seen)) { order[++nk] = k; seen[k] = 1 }
    unit[k] = $6; better[k] = $7
    line[k] = line[k] sprintf(" %s=%s", $4, $5)
    if ($4 == "jp_rwlock") jp[k] = $5
    else {
      if ($4 == "pthread_rwlock") pt[k] = $5
      if (!(k in best) || (($7 == "higher") ? $5 > best[k] : $5 < best[k])) { best[k] = $5; bestname[k] = $4 }
    }
  }
  END {
    printf "%-36s %s\n", "benchmark,workload,threads (unit)", "medians; jp_rwlock/pthread_rwlock; jp_rwlock/best peer"
    for (i = 1; i <= nk; i++) {
      k = order[i]
      r = ""
      if ((k in jp) && (k in pt) && pt[k] > 0 && jp[k] > 0)
        r = sprintf("  vs pthread %.2f", (better[k] == "higher") ? jp[k] / pt[k] : pt[k] / jp[k])
      if ((k in jp) && (k in best) && best[k] > 0 && jp[k] > 0)
        r = r sprintf("  vs best (%s) %.2f", bestname[k], (better[k] == "higher") ? jp[k] / best[k] : best[k] / jp[k])
      printf "%-36s%s%s\n", k " (" unit[k] ")", line[k], r
    }
  }' "$tmp/medians"
echo "csv: $csv"
[ -s "$notes" ] && { echo "notes:"; cat "$notes"; }
exit $failed
