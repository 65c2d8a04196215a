#!/bin/sh
# callgrind-per-op.sh N COMMAND [ARGS...] - instructions per operation of
# COMMAND, counted with valgrind --tool=callgrind: COMMAND runs once with N
# and once with 2N appended as its last argument, and the difference of
# the two totals over N cancels start-up and exit.  Prints the count with
# one decimal, or FAILED (exit 1).  Run from a build tree ($top_builddir,
# for libtool's wrapper scripts).
set -u
: "${top_builddir:=.}"
n=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for k in 1 2; do
  "$top_builddir/libtool" --mode=execute valgrind --tool=callgrind \
    --callgrind-out-file="$tmp/cg.$k" "$@" $((n * k)) > /dev/null 2>&1
done
a=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$tmp/cg.1" 2>/dev/null | head -n1)
b=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$tmp/cg.2" 2>/dev/null | head -n1)
if [ -z "$a" ] || [ -z "$b" ]; then echo FAILED; exit 1; fi
awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%.1f\n", (b - a) / n }'
