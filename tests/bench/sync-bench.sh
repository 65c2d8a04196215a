#!/bin/sh
# sync-bench.sh - the synchronisation benchmarks (driver contract: see
# doc/benchmarks.md).
#
#   lock        short, mixed and fairness workloads at 1, 2, 4, 8, 16
#               threads for jp_mutex, pthread_mutex, pthread_spin,
#               ck_spinlock_fas, ck_spinlock_mcs (throughput, average wait,
#               spread of acquisitions per thread)
#   uncontended instructions per lock+unlock pair (callgrind), jp_mutex and
#               pthread_mutex
#   notify-17   17 waiters on flags 64 bytes apart, jp_wait against C++20
#               std::atomic<bool>::wait (CPU and wall time and context
#               switches per notify)
#
# JPSYNC_BENCH_REPS (default 5), JPSYNC_BENCH_QUICK=1 (1, 2, 4 threads, short
# runs), JPSYNC_BENCH_LOCK_SECONDS (each lock run, default 1),
# JPSYNC_BENCH_OUT (default $top_builddir/tests/bench/results).
set -u
name=sync-bench
. "$(dirname "$0")/driver-common.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

bin=$top_builddir/tests/bench
prog=$bin/sync-bench
cxx=$bin/atomic-wait-bench
if [ ! -x "$prog" ]; then echo "sync-bench: $prog not built (make check builds it)"; exit 1; fi

if [ "$quick" = 1 ]; then
  threads="1 2 4"; secs=0.05; rounds=100
else
  # 1 s: long enough for 16 threads on 2 cores to get many scheduler
  # slices each, so that the fewest share measures the lock.
  threads="1 2 4 8 16"; secs=${JPSYNC_BENCH_LOCK_SECONDS:-1}; rounds=1000
fi
failed=0

impls=""
for i in jp_mutex pthread_mutex pthread_spin ck_spinlock_fas ck_spinlock_mcs; do
  if "$prog" avail $i 2>/dev/null; then
    impls="$impls $i"
  else
    echo "$i: not built in (Concurrency Kit's <ck_spinlock.h> not found, or a sanitizer build; install libck-dev)" >> "$notes"
  fi
done
if [ ! -x "$cxx" ]; then
  echo "std_atomic_wait: tests/bench/atomic-wait-bench not built (no C++ compiler)" >> "$notes"
fi

# run REP BENCHMARK WORKLOAD THREADS IMPL COMMAND... : append the rows the
# command prints; when it crashes or fails its check, its rows (or one row
# named by the arguments) with the value FAILED.
run() {
  rep=$1 b=$2 wl=$3 th=$4 im=$5; shift 5
  if "$@" > "$tmp/rows" 2> "$tmp/err"; then
    awk -F, -v rep="$rep" 'BEGIN { OFS = "," } NF == 8 { print $1, $2, $3, $4, rep, $5, $6, $7, $8 }' "$tmp/rows" >> "$csv"
  else
    failed=1
    echo "sync-bench: FAILED: $*" >&2; cat "$tmp/err" >&2
    if [ -s "$tmp/rows" ]; then
      awk -F, -v rep="$rep" 'BEGIN { OFS = "," } NF == 8 { print $1, $2, $3, $4, rep, "FAILED", $6, $7, $8 }' "$tmp/rows" >> "$csv"
    else
      echo "$b,$wl,$th,$im,$rep,FAILED,,," >> "$csv"
    fi
  fi
}

# ---- lock: every implementation interleaved within each repetition -------
rep=1
while [ $rep -le "$reps" ]; do
  for wl in short mixed fairness; do
    for t in $threads; do
      for i in $impls; do
        run $rep lock $wl $t $i "$prog" lock $wl $i $t $secs
      done
    done
  done
  for how in handshake burst; do
    run $rep notify-17 $how 18 jp_wait "$prog" notify jp_wait $rounds $how
    if [ -x "$cxx" ]; then
      run $rep notify-17 $how 18 std_atomic_wait "$cxx" $rounds $how
    fi
  done
  rep=$((rep + 1))
done

# ---- uncontended lock+unlock: instructions, by callgrind -----------------
if command -v valgrind >/dev/null 2>&1; then
  for i in jp_mutex pthread_mutex; do
    v=$(sh "$top_srcdir/tests/bench/callgrind-per-op.sh" 20000 "$prog" pairs $i) || failed=1
    # Deterministic: one measurement stands for every repetition.
    echo "uncontended,lock+unlock,1,$i,1,$v,instructions,lower," >> "$csv"
  done
else
  echo "uncontended: valgrind not found, instruction counts skipped" >> "$notes"
fi

# ---- the table of medians, with the ratio of jpsync to the best peer -----
sh "$top_srcdir/tests/bench/medians.sh" "$csv"
echo "csv: $csv"
[ -s "$notes" ] && { echo "notes:"; cat "$notes"; }
exit $failed
