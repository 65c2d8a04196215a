#!/bin/sh
# What users of other preload allocators hit: tests/shim/test-preload-compat run
# under ./shim/jpsync-run, one case per process (see the top of
# test-preload-compat.c).  Each run has a timeout, so that a deadlock fails.
set -u
. "${top_srcdir:-.}/tests/shim/preload-common.sh"
skip_if_no_preload
prog="$top_builddir/tests/shim/test-preload-compat"
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

# ($run_module: jpsync-run, or under emulation qemu -E LD_PRELOAD=... with
# what jpsync-run would set; see tests/run-module.sh.)
# Under qemu-user two cases fail with glibc's own malloc as well, so they
# say nothing about the module there: they are left out by name (and run
# natively and on i386).
for c in names errors libc trim mallinfo fork-signal fork-stdio threads; do
  if [ -n "${JP_EMULATOR:-}" ]; then
    case $c in
      fork-signal) echo "not run here (qemu-user deadlocks on fork() in a signal handler, glibc's malloc too): $c"; continue ;;
      threads) echo "not run here (qemu-user: RSS grows by the emulator's ~280 KiB per thread, glibc's malloc too): $c"; continue ;;
    esac
  fi
  check "$c" $run_module "$prog" "$c"
done

# The module after a library that wraps malloc with dlsym(RTLD_NEXT) (as
# tracing tools do): that library's malloc is the program's, ours is next.
preload=$($tx "$run" --print-env | sed -n 's/^LD_PRELOAD=//p')
[ -n "$preload" ] || fail "jpsync-run --print-env printed no LD_PRELOAD"
check hook $tx LD_PRELOAD="$hook:$preload" "$prog" hook
# The same library already in LD_PRELOAD: jpsync-run puts the module first.
check hook-after $run_module LD_PRELOAD="$hook" "$prog" hook-after

# No module here: a program that did not link libjpsync dlopens a library
# that did.
check dlopen $tx "$prog" dlopen "$dltest"
exit $status
