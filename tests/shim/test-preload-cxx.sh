#!/bin/sh
# C++ operators new and delete under the module: tests/shim/test-preload-cxx run
# through ./shim/jpsync-run (see the top of test-preload-cxx.cc), and again
# with --check: an alignas(64) object freed and its block taken by a plain
# new made check mode report a "write after free" (a false alarm of
# jpsync 1.1 before its fix).
set -u
. "${top_srcdir:-.}/tests/shim/preload-common.sh"
skip_if_no_preload
prog="$top_builddir/tests/shim/test-preload-cxx"
[ -x "$prog" ] || fail "$prog not built"
# Under an emulator each run took over a minute on a loaded machine.
limit=120; [ -z "${JP_EMULATOR:-}" ] || limit=660
for opt in "" --check; do
  timeout -k 5 $limit $run_module $opt "$prog"; rc=$?
  case $rc in
    0) ;;
    124|137) fail "jpsync-run $opt: no answer within ${limit}s (deadlock?)" ;;
    142) fail "jpsync-run $opt: the program's own alarm went off (deadlock?)" ;;
    *) fail "jpsync-run $opt: exit status $rc" ;;
  esac
done
