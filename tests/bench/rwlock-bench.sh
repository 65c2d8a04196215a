#!/bin/sh
# rwlock-bench.sh - reader-writer locks (driver contract: see
# doc/benchmarks.md).
#
#   rwlock      0, 1, 10 and 50% writes at 1, 2, 4, 8, 16 threads, with
#               critical sections of 0, 100 and 1000 steps of work, for
#               jp_rwlock, pthread_rwlock (glibc's default),
#               pthread_rwlock_wp (glibc's writer-preferring kind) and
#               ck_rwlock (throughput, spread of acquisitions per thread)
#   uncontended instructions per read lock+unlock pair (callgrind)
#
# JPSYNC_BENCH_REPS (default 5), JPSYNC_BENCH_QUICK=1 (1, 2, 4 threads,
# short runs, empty critical sections only), JPSYNC_RWLOCK_CS (the
# critical-section lengths, default "0 100 1000"), JPSYNC_BENCH_OUT (default $top_builddir/tests/bench/results).
set -u
name=rwlock-bench
. "$(dirname "$0")/driver-common.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prog=$top_builddir/tests/bench/rwlock-bench
if [ ! -x "$prog" ]; then echo "rwlock-bench: $prog not built (make check builds it)"; exit 1; fi

if [ "$quick" = 1 ]; then
  threads="1 2 4"; secs=0.05; css=${JPSYNC_RWLOCK_CS:-0}
else
  threads="1 2 4 8 16"; secs=0.3; css=${JPSYNC_RWLOCK_CS:-0 100 1000}
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
  for cs in $css; do
    for pct in 0 1 10 50; do
      wl=writes-${pct}pct; [ "$cs" = 0 ] || wl=$wl-cs$cs
      for t in $threads; do
        for i in $impls; do
          run $rep $t $i "$wl" "$prog" mix $pct $i $t $secs $cs
        done
      done
    done
  done
  rep=$((rep + 1))
done

# Uncontended read lock+unlock: instructions, by callgrind (deterministic:
# one measurement stands for every repetition).
if command -v valgrind >/dev/null 2>&1; then
  for i in jp_rwlock pthread_rwlock; do
    v=$(sh "$top_srcdir/tests/bench/callgrind-per-op.sh" 20000 "$prog" pairs $i) || failed=1
    echo "uncontended,read lock+unlock,1,$i,1,$v,instructions,lower," >> "$csv"
  done
else
  echo "uncontended: valgrind not found, instruction counts skipped" >> "$notes"
fi

sh "$top_srcdir/tests/bench/medians.sh" "$csv" pthread_rwlock
echo "csv: $csv"
[ -s "$notes" ] && { echo "notes:"; cat "$notes"; }
exit $failed
