#!/bin/sh
# cxx-queue-elems.sh: the cells of doc/benchmarks.md's "C++ queue
# elements", interleaved (slot, then ptr, for every cell, JPSYNC_BENCH_REPS
# times, default 7), under glibc malloc and under jp_alloc through the
# preload module; prints the median ns per element of each cell.
# Run from the build tree: top_builddir=$PWD sh ../tests/bench/cxx-queue-elems.sh
set -eu
b=${top_builddir:-.}
prog=$b/tests/bench/cxx-queue-elems
pre=$b/shim/.libs/libjpsync-preload.so
reps=${JPSYNC_BENCH_REPS:-7}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
export LD_LIBRARY_PATH="$b/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
r=0
while [ "$r" -lt "$reps" ]; do
  r=$((r + 1))
  for malloc in glibc jp_alloc; do
    for cell in "spsc str 1 1 1000000 10" "spsc str 1 1 1000000 40" "spsc uptr 1 1 1000000 1" \
                "mpmc str 2 2 1000000 10" "mpmc str 2 2 1000000 40" "mpmc uptr 2 2 1000000 1"; do
      for way in slot ptr; do
        if [ "$malloc" = jp_alloc ]; then
          out=$(LD_PRELOAD=$pre "$prog" $way $cell)
        else
          out=$("$prog" $way $cell)
        fi
        echo "$malloc $out" >> "$raw"
      done
    done
  done
done
# malloc way kind type P C L ns -> median per (malloc kind type P C L way)
awk '{ k = $1 " " $3 " " $4 " " $5 " " $6 " " $7 " " $2; v[k] = v[k] " " $8 }
     END { for (k in v) print k, v[k] }' "$raw" | sort | while read -r m k t p c l w rest; do
  med=$(awk -v s="$rest" "$(cat "$(dirname "$0")/median.awk")"'BEGIN { print median_str(s) }')
  echo "$m $k $t $p $c $l $w $med"
done
