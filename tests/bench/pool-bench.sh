#!/bin/sh
# pool-bench.sh - the driver of pool-bench (see tests/bench/README): pool
# get/put per thread at 1, 2, 4, 8 threads (jp_pool with and without the
# thread cache, jp_alloc when built in, glibc malloc/free), and the 3-stage
# pipeline (pool + jp_spsc against malloc/free + a mutex queue).
set -u
: "${top_builddir:=.}"
REPS=${JPSYNC_BENCH_REPS:-5}
QUICK=${JPSYNC_BENCH_QUICK:-0}
OUT=${JPSYNC_BENCH_OUT:-$top_builddir/tests/bench/results}
prog="$top_builddir/tests/bench/pool-bench"
name=pool-bench
mkdir -p "$OUT"
csv="$OUT/$name.csv"
notes="$OUT/$name.notes"
echo "benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb" > "$csv"
: > "$notes"

ops=5000000; items=1000000; threads="1 2 4 8"; pairs="1 2 4"
if [ "$QUICK" = 1 ]; then
  ops=200000; items=50000; threads="1 4"; pairs="1 2"
fi

gp_impls=""
for impl in jp_pool_tc jp_pool jpsync glibc; do
  "$prog" getput "$impl" 1 10 > /dev/null 2>&1
  case $? in
    0) gp_impls="$gp_impls $impl" ;;
    77) echo "$impl (jp_alloc/jp_free): the allocator is not in this build of libjpsync; skipped" >> "$notes" ;;
    *) echo "$impl: does not run; skipped" >> "$notes" ;;
  esac
done

fail=0
row() {	# workload threads impl rep unit -- command...
  wl=$1 th=$2 impl=$3 r=$4 unit=$5; shift 5
  if out=$("$@" 2>/dev/null); then
    set -- $out
    echo "$name,$wl,$th,$impl,$r,$1,$unit,higher,$2" >> "$csv"
  else
    echo "$name,$wl,$th,$impl,$r,FAILED,$unit,higher," >> "$csv"
    fail=1
  fi
}

rep=1
while [ "$rep" -le "$REPS" ]; do
  for t in $threads; do
    for impl in $gp_impls; do
      row getput "$t" "$impl" "$rep" "Mops/s/thread" "$prog" getput "$impl" "$t" "$ops"
    done
  done
  for p in $pairs; do
    for impl in jpsync glibc_mutex; do
      row pipeline "$((2 * p))" "$impl" "$rep" "Mitems/s" "$prog" pipeline "$impl" "$p" "$items"
    done
  done
  rep=$((rep + 1))
done

awk -F, '
NR == 1 { next }
$6 != "FAILED" { key = $2 " " $3; v[key SUBSEP $4] = v[key SUBSEP $4] " " $6; if (!(key in seenw)) { seenw[key] = 1; w[nw++] = key } if (!($4 in seeni)) { seeni[$4] = 1; im[ni++] = $4 } }
function median(s,   n, a, i, j, t) {
  n = split(s, a, " ")
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
  printf "%-12s", "workload thr"; for (i = 0; i < ni; i++) printf " %12s", im[i]; printf " %14s\n", "ours/baseline"
  for (k = 0; k < nw; k++) {
    printf "%-12s", w[k]; mine = 0; base = 0
    for (i = 0; i < ni; i++) {
      key = w[k] SUBSEP im[i]
      if (key in v) { m = median(v[key]); printf " %12.2f", m
        if (im[i] == "jp_pool_tc" || (im[i] == "jpsync" && w[k] ~ /^pipeline/)) mine = m
        if (im[i] == "glibc" || im[i] == "glibc_mutex") base = m }
      else printf " %12s", "-"
    }
    if (base > 0) printf " %13.2fx\n", mine / base; else printf " %14s\n", "-"
  }
  print "(getput: million get+put pairs per second per thread, jp_pool_tc/glibc;"
  print " pipeline: million items per second, jpsync/glibc_mutex; medians)"
}' "$csv"
[ -s "$notes" ] && cat "$notes"
exit $fail
