#!/bin/sh
# pool-bench.sh - the driver of pool-bench (see doc/benchmarks.md): pool
# get/put per thread at 1, 2, 4, 8 threads (jp_pool through the inline
# jp_pool_local handle, with the thread cache through jp_pool_get/put, and
# without it; jp_alloc when built in; glibc malloc/free; a free list under
# a pthread_mutex), the instructions of one get+put pair (callgrind), and
# the 3-stage pipeline (pool + jp_spsc against malloc/free + a mutex queue).
set -u
name=pool-bench
. "$(dirname "$0")/driver-common.sh"
prog="$top_builddir/tests/bench/pool-bench"

ops=5000000; items=1000000; threads="1 2 4 8"; pairs="1 2 4"
if [ "$quick" = 1 ]; then
  ops=200000; items=50000; threads="1 4"; pairs="1 2"
fi

gp_impls=""
for impl in jp_pool_local jp_pool_tc jp_pool jpsync glibc mutex_list; do
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
while [ "$rep" -le "$reps" ]; do
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

# One get+put pair on one thread: instructions, by callgrind (with the
# benchmark's loop, 3 instructions; deterministic, one row stands for all).
if command -v valgrind >/dev/null 2>&1; then
  for impl in $gp_impls; do
    v=$(sh "$top_srcdir/tests/bench/callgrind-per-op.sh" 100000 "$prog" pairs "$impl") || fail=1
    echo "$name,getput-instructions,1,$impl,1,$v,instructions,lower," >> "$csv"
  done
else
  echo "getput-instructions: valgrind not found, instruction counts skipped" >> "$notes"
fi

# Medians; the two ratios pool-bench reports: the handle against glibc, the
# uncached pool against the mutex-protected free list.
awk -F, "$median_awk"'
NR == 1 { next }
$6 != "FAILED" { key = $2 " " $3; v[key SUBSEP $4] = v[key SUBSEP $4] " " $6; better[key] = $8
  if (!(key in seenw)) { seenw[key] = 1; w[nw++] = key } if (!($4 in seeni)) { seeni[$4] = 1; im[ni++] = $4 } }
function ratio(a, b, k) { return better[k] == "lower" ? b / a : a / b }
END {
  printf "%-26s", "workload thr"; for (i = 0; i < ni; i++) printf " %13s", im[i]
  printf "  %s\n", "ratios (>1: ours better)"
  for (k = 0; k < nw; k++) {
    printf "%-26s", w[k]; delete m
    for (i = 0; i < ni; i++) {
      key = w[k] SUBSEP im[i]
      if (key in v) { m[im[i]] = median_str(v[key]); printf " %13.2f", m[im[i]] }
      else printf " %13s", "-"
    }
    r = ""
    if (("jp_pool_local" in m) && ("glibc" in m) && m["glibc"] > 0)
      r = r sprintf("  local/glibc %.2f", ratio(m["jp_pool_local"], m["glibc"], w[k]))
    if (("jp_pool" in m) && ("mutex_list" in m) && m["mutex_list"] > 0)
      r = r sprintf("  pool/mutex_list %.2f", ratio(m["jp_pool"], m["mutex_list"], w[k]))
    if (("jpsync" in m) && ("glibc_mutex" in m) && m["glibc_mutex"] > 0)
      r = r sprintf("  jpsync/glibc_mutex %.2f", ratio(m["jpsync"], m["glibc_mutex"], w[k]))
    print r
  }
  print "(getput: million get+put pairs per second per thread of CPU time; pipeline:"
  print " million items per second; getput-instructions: per pair, callgrind; medians)"
}' "$csv"
[ -s "$notes" ] && cat "$notes"
exit $fail
