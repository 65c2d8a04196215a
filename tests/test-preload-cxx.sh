#!/bin/sh
# C++ operators new and delete under the module: tests/test-preload-cxx run
# through ./shim/jpsync-run (see the top of test-preload-cxx.cc).
set -u
. "${top_srcdir:-.}/tests/preload-common.sh"
skip_if_no_preload
prog="$top_builddir/tests/test-preload-cxx"
[ -x "$prog" ] || fail "$prog not built"
timeout -k 5 120 "$run" "$prog"; rc=$?
case $rc in
  0) ;;
  124|137) fail "no answer within 120s (deadlock?)" ;;
  *) fail "exit status $rc" ;;
esac
