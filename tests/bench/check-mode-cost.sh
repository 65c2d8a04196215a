#!/bin/sh
# check-mode-cost.sh - what check mode costs a real program: gcc -O2 -c on
# a generated C file of about 1 MB (gen-c-file.sh), run through
# `jpsync-run --check` and through plain `jpsync-run`, interleaved, RUNS
# times each (default 5); prints each run's seconds (elapsed, then user +
# system) and the medians and their ratio.  Not a test: nothing is timed in
# make check (doc/benchmarks.md).  MODE=--leaks measures leak mode instead.
#
#   cd build && [MODE=--leaks] sh ../tests/bench/check-mode-cost.sh [RUNS] [SIZE]
set -e
runs=${1:-5}
size=${2:-1000000}
mode=${MODE:---check}
here=$(cd "$(dirname "$0")" && pwd)
run=${JPSYNC_RUN:-shim/jpsync-run}
cc=${CC:-gcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh "$here/gen-c-file.sh" "$size" > "$tmp/big.c"
echo "file: $(wc -c < "$tmp/big.c") bytes; compiler: $($cc --version | head -n 1)"
# One run: elapsed and CPU seconds on one line.
one() {
	/usr/bin/time -f '%e %U %S' -o "$tmp/t" "$run" "$@" -- "$cc" -O2 -c "$tmp/big.c" -o "$tmp/big.o"
	awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$tmp/t"
}
i=0
while [ "$i" -lt "$runs" ]; do
	d=$(one)
	c=$(one "$mode")
	echo "run $i: default $d; $mode $c"
	echo "$d" >> "$tmp/default"
	echo "$c" >> "$tmp/check"
	i=$((i + 1))
done
median() { awk -v k="$2" "$(cat "$here/median.awk")"'{ v[0, NR] = $k } END { print median(v, 0, NR) }' "$1"; }
de=$(median "$tmp/default" 1); dc=$(median "$tmp/default" 2)
ce=$(median "$tmp/check" 1); cc2=$(median "$tmp/check" 2)
echo "medians: default ${de}s elapsed, ${dc}s CPU; $mode ${ce}s elapsed, ${cc2}s CPU"
awk -v a="$ce" -v b="$de" -v c="$cc2" -v d="$dc" \
	-v m="$mode" 'BEGIN { printf "%s / default: %.2fx elapsed, %.2fx CPU\n", m, a / b, c / d }'
