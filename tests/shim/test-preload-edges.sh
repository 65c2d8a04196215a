#!/bin/sh
# Every allocation entry point of the module (malloc, calloc, realloc,
# reallocarray, aligned_alloc, posix_memalign, memalign, valloc, pvalloc) at
# every size from SIZE_MAX - 65536 to SIZE_MAX, free and errno, and the
# map-count limit: tests/shim/preload-edges (tests/alloc/alloc-edges.c on the
# C names) run through ./shim/jpsync-run in the default mode, in check mode
# and with the cache and magazine at their minimum and maximum.  C++ new at
# those sizes is in tests/shim/test-preload-cxx.cc.
set -u
. "${top_srcdir:-.}/tests/shim/preload-common.sh"
skip_if_no_preload
prog="$top_builddir/tests/shim/preload-edges"
[ -x "$prog" ] || fail "$prog not built"
limit=${JPSYNC_PRELOAD_TIMEOUT:-300}
status=0

# run OPTIONS MODE: preload-edges MODE under jpsync-run OPTIONS; its output
# is kept in $out.
run() {
  opts=$1 mode=$2
  # shellcheck disable=SC2086 # the options are words
  out=$(timeout -k 5 "$limit" $run_module $opts "$prog" "$mode" 2>&1); rc=$?
  printf '[%s %s] %s\n' "${opts:-default}" "$mode" "$out"
  case $rc in
    0) ;;
    77) ;;
    124|137) echo "FAIL: $opts $mode: no answer within ${limit}s"; status=1 ;;
    *) echo "FAIL: $opts $mode: exit status $rc"; status=1 ;;
  esac
}

for opts in "" --check "--cache=1 --magazine=1" "--cache=4096 --magazine=1024"; do
  run "$opts" walk
  run "$opts" free-errno
done
run "" map-limit
run --check map-limit
# Check mode at the limit says once why freed huge blocks no longer fault.
if [ $rc -eq 0 ]; then
  n=$(printf '%s\n' "$out" | grep -c 'jpsync: check mode: cannot make a freed block inaccessible')
  [ "$n" -eq 1 ] || { echo "FAIL: --check map-limit: the fallback said $n times, not once"; status=1; }
fi
exit $status
