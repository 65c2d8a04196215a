#!/bin/sh
# What users of other preload allocators hit: tests/test-preload-compat run
# under ./shim/jpsync-run, one case per process (see the top of
# test-preload-compat.c).  Each run has a timeout, so that a deadlock fails.
set -u
. "${top_srcdir:-.}/tests/preload-common.sh"
skip_if_no_preload
prog="$top_builddir/tests/test-preload-compat"
hook="$top_builddir/tests/.libs/libpreload-hook.so"
dltest="$top_builddir/tests/.libs/libpreload-dltest.so"
[ -x "$prog" ] || fail "$prog not built"
[ -f "$hook" ] || fail "$hook not built"
[ -f "$dltest" ] || fail "$dltest not built"
limit=${JPSYNC_PRELOAD_TIMEOUT:-120}
status=0

# check NAME COMMAND...: run it, show its output, record a failure.
check() {
  name=$1; shift
  out=$(timeout -k 5 "$limit" "$@" 2>&1); rc=$?
  [ -n "$out" ] && printf '%s\n' "$out"
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "FAIL: $name: no answer within ${limit}s (deadlock?)"; status=1
  elif [ $rc -eq 142 ]; then
    echo "FAIL: $name: killed by its watchdog (SIGALRM: deadlock?)"; status=1
  elif [ $rc -ne 0 ]; then
    echo "FAIL: $name: exit status $rc"; status=1
  fi
}

for c in names errors libc trim fork-signal fork-stdio threads; do
  check "$c" "$run" "$prog" "$c"
done

# The module after a library that wraps malloc with dlsym(RTLD_NEXT) (as
# tracing tools do): that library's malloc is the program's, ours is next.
preload=$("$run" --print-env | sed -n 's/^LD_PRELOAD=//p')
[ -n "$preload" ] || fail "jpsync-run --print-env printed no LD_PRELOAD"
check hook env LD_PRELOAD="$hook:$preload" "$prog" hook
# The same library already in LD_PRELOAD: jpsync-run puts the module first.
check hook-after env LD_PRELOAD="$hook" "$run" "$prog" hook-after

# No module here: a program that did not link libjpsync dlopens a library
# that did.
check dlopen "$prog" dlopen "$dltest"
exit $status
