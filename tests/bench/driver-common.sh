# driver-common.sh - the preamble every benchmark driver sources, after it
# sets name (its own name: the CSV and notes files are named after it):
#
#   name=sync-bench
#   . "$(dirname "$0")/driver-common.sh"
#
# It reads the driver contract's variables (doc/benchmarks.md) into
#   reps    JPSYNC_BENCH_REPS, the repetitions (default 5)
#   quick   JPSYNC_BENCH_QUICK, 1 for the short runs (default 0)
#   out     JPSYNC_BENCH_OUT, the results folder (default
#           $top_builddir/tests/bench/results)
# refusing a bad value with a one-line message and exit status 2; sets
# top_srcdir and top_builddir where make did not (the source tree above this
# file; the current folder), top_builddir made absolute; makes the folder; starts $csv (the contract's
# header line) and $notes (empty); and sets median_awk, median.awk's
# functions to put before an inline awk program: awk "$median_awk"'...'.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=.}"
# Absolute: a driver runs programs from other folders (mimalloc-bench.sh
# from its build), where a relative path to the preload module left the
# allocator unloaded and the cell measuring glibc's malloc.
top_builddir=$(CDPATH='' cd "$top_builddir" && pwd) || exit 2
median_awk=$(cat "$top_srcdir/tests/bench/median.awk") || exit 2
reps=${JPSYNC_BENCH_REPS:-5}
quick=${JPSYNC_BENCH_QUICK:-0}
out=${JPSYNC_BENCH_OUT:-$top_builddir/tests/bench/results}
case $reps in
  ''|*[!0-9]*|0) echo "$name: JPSYNC_BENCH_REPS='$reps' is not a positive integer" >&2; exit 2 ;;
esac
case $quick in
  0|1) ;;
  *) echo "$name: JPSYNC_BENCH_QUICK='$quick' is not 0 or 1" >&2; exit 2 ;;
esac
mkdir -p "$out" || { echo "$name: cannot make the results folder $out" >&2; exit 2; }
csv=$out/$name.csv
notes=$out/$name.notes
: > "$notes"
echo "benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb" > "$csv"
