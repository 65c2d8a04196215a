#!/bin/sh
# guard-cost.sh - what catching small underflows and overflows in the
# default mode would cost (README, "What the checks catch"): alloc-bench
# and alloc-bench-guard (every block with a 16-byte header and an 8-byte
# trailing canary, checked at free) run the same workloads on jpsync,
# interleaved, RUNS times each (default 5).  Prints, per workload and
# thread count, the median CPU seconds (user + system) and peak RSS of
# each and their ratios (guard / plain).  Not a test: nothing is timed in
# make check (doc/benchmarks.md).
#
#   cd build && sh ../tests/bench/guard-cost.sh [RUNS] [SCALE]
#   (GUARD_WORKLOADS, GUARD_THREADS: the lists to run; PRELOAD: another
#   allocator's library instead of jpsync's)
set -e
runs=${1:-5}
scale=${2:-1}
here=$(cd "$(dirname "$0")" && pwd)
workloads=${GUARD_WORKLOADS:-balanced alloc-heavy small xthread larson realloc xsizes falseshare shortmixed}
threads=${GUARD_THREADS:-1 2}
preload=${PRELOAD:-$PWD/shim/.libs/libjpsync-preload.so}
for p in tests/bench/alloc-bench tests/bench/alloc-bench-guard "$preload"; do
	[ -e "$p" ] || { echo "guard-cost.sh: $p not found (make bench-programs; run from the build tree)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One run: CPU seconds and peak RSS (KiB) on one line.
one() {
	LD_PRELOAD=$preload LD_LIBRARY_PATH=$PWD/lib/.libs \
		/usr/bin/time -f '%U %S %M' -o "$tmp/t" "$1" -w "$2" -t "$3" -s "$scale" > /dev/null
	awk '{ printf "%.3f %s\n", $1 + $2, $3 }' "$tmp/t"
}
median() { awk -v k="$2" "$(cat "$here/median.awk")"'{ v[0, NR] = $k } END { print median(v, 0, NR) }' "$1"; }
echo "allocator: $preload; $runs runs of each, interleaved; scale $scale"
echo "| workload | threads | CPU s, plain | CPU s, guard | CPU ratio | peak RSS KiB, plain | guard | RSS ratio |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for w in $workloads; do
	for t in $threads; do
		: > "$tmp/plain"; : > "$tmp/guard"
		i=0
		while [ "$i" -lt "$runs" ]; do
			one tests/bench/alloc-bench "$w" "$t" >> "$tmp/plain"
			one tests/bench/alloc-bench-guard "$w" "$t" >> "$tmp/guard"
			i=$((i + 1))
		done
		pc=$(median "$tmp/plain" 1); gc=$(median "$tmp/guard" 1)
		pr=$(median "$tmp/plain" 2); gr=$(median "$tmp/guard" 2)
		awk -v w="$w" -v t="$t" -v pc="$pc" -v gc="$gc" -v pr="$pr" -v gr="$gr" 'BEGIN {
			printf "| %s | %s | %.2f | %.2f | %.2fx | %d | %d | %.2fx |\n",
			       w, t, pc, gc, gc / pc, pr, gr, gr / pr }'
	done
done
# Instructions per operation (callgrind: exact, whatever the load), one
# thread, where valgrind is installed.
command -v valgrind > /dev/null || { echo "(valgrind not found: no instruction counts)"; exit 0; }
echo
echo "| workload | instructions per op, plain | guard | ratio |"
echo "| --- | ---: | ---: | ---: |"
for w in ${GUARD_CG_WORKLOADS:-balanced alloc-heavy small larson xsizes}; do
	export LD_PRELOAD="$preload" LD_LIBRARY_PATH="$PWD/lib/.libs"
	a=$(sh "$here/callgrind-per-op.sh" 20000 tests/bench/alloc-bench -w "$w" -t 1 -n)
	b=$(sh "$here/callgrind-per-op.sh" 20000 tests/bench/alloc-bench-guard -w "$w" -t 1 -n)
	unset LD_PRELOAD LD_LIBRARY_PATH
	awk -v w="$w" -v a="$a" -v b="$b" 'BEGIN { printf "| %s | %s | %s | %.2fx |\n", w, a, b, b / a }'
done
