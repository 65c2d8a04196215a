#!/bin/sh
# selftest-bench.sh: the driver of tests/bench/selftest-bench, used by
# tests/bench/check-bench-report.sh to test the benchmark report's plumbing.  It
# follows the driver contract of doc/benchmarks.md (and is the smallest
# example of it): JPSYNC_BENCH_REPS, JPSYNC_BENCH_QUICK, JPSYNC_BENCH_OUT in;
# selftest-bench.csv and selftest-bench.notes out; a table of medians on
# stdout; exit status non-zero when any run failed.
#
# JPSYNC_SELFTEST_PEER_LIB names the library the pretend peer `peer_lib`
# needs (default: one that does not exist, so it is skipped with a note).
set -u
name=selftest-bench
. "$(dirname "$0")/driver-common.sh"
prog=$top_builddir/tests/bench/$name
peer_lib=${JPSYNC_SELFTEST_PEER_LIB:-/nonexistent/libselftest-peer.so}

[ -x "$prog" ] || { echo "$name: $prog is not built (make check builds it)" >&2; exit 2; }

impls="jpsync peer_mutex peer_atomic"
if [ -e "$peer_lib" ]; then
  impls="$impls peer_lib"
else
  echo "peer_lib: skipped, $peer_lib is not installed" >> "$notes"
fi
if [ "$quick" = 1 ]; then count_threads="1 2"; else count_threads="1 2 4"; fi

failed=0
# One run: append its row, or a FAILED row when it crashed or failed its check.
run() { # workload threads impl rep unit better
  impl=$3
  [ "$impl" = peer_lib ] && impl=peer_atomic # the pretend peer runs like one
  if res=$("$prog" "$1" "$2" "$impl"); then
    # shellcheck disable=SC2086 # two words: the value and the peak RSS
    set -- "$@" $res
    echo "$name,$1,$2,$3,$4,$7,$5,$6,${8:-}" >> "$csv"
  else
    echo "$name,$1,$2,$3,$4,FAILED,$5,$6," >> "$csv"
    failed=1
  fi
}
rep=1
while [ "$rep" -le "$reps" ]; do
  # Interleaved: every implementation runs once per thread count per
  # repetition, so slow drifts in machine load hit them all alike.
  for t in $count_threads; do
    for i in $impls; do run count "$t" "$i" "$rep" increments/s higher; done
  done
  for i in $impls; do run footprint 2 "$i" "$rep" bytes lower; done
  rep=$((rep + 1))
done

# Medians, and the ratio of jpsync to the best peer (>1 is a win when higher
# is better, <1 when lower is).
awk -F, "$median_awk"'NR > 1 && $6 != "FAILED" {
  k = $2 SUBSEP $3 SUBSEP $4; n[k]++; v[k, n[k]] = $6; u[$2] = $7; b[$2] = $8
  if (!($2 SUBSEP $3 in seen)) { seen[$2, $3] = 1; rows[++nr] = $2 SUBSEP $3 }
}
END {
  printf "%-10s %7s %-12s %14s %12s\n", "workload", "threads", "impl", "median", "jpsync/best"
  for (r = 1; r <= nr; r++) {
    split(rows[r], rt, SUBSEP); best = ""; ours = ""
    for (k in n) {
      split(k, kt, SUBSEP)
      if (kt[1] != rt[1] || kt[2] != rt[2]) continue
      m = median(v, k, n[k])
      if (kt[3] == "jpsync") ours = m
      else if (best == "" || (b[rt[1]] == "higher" ? m > best : m < best)) best = m
      printf "%-10s %7s %-12s %14.6g %12s\n", rt[1], rt[2], kt[3], m, ""
    }
    if (ours != "" && best != "" && best != 0)
      printf "%-10s %7s %-12s %14s %12.3f\n", rt[1], rt[2], "(ratio)", u[rt[1]], ours / best
  }
}' "$csv"
if [ "$failed" -ne 0 ]; then
  echo "$name: some runs FAILED (see $csv)" >&2
  exit 1
fi
exit 0
