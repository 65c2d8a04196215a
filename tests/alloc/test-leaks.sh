#!/bin/sh
# The leak report (jpsync-run --leaks, JPSYNC_LEAKS) on
# tests/alloc/leak-prog, whose leaks are known exactly:
#   - leak: exactly 3 blocks (one huge), 1048876 bytes, allocated in leak_three; exit
#     status 23, the program's own (0) with --leaks-exitcode=0, and the one
#     asked for with JPSYNC_LEAKS_EXITCODE;
#   - reach: blocks kept through a global (one of them only through another
#     block, at an interior offset) and on the stack of a thread still
#     running at exit: no leak, exit 0;
#   - blocked: as reach, but the thread blocks every signal: the report
#     comes (no hang), says "1 threads not scanned", and finds no leak;
#   - thread: 2 blocks, 2000 bytes, allocated in leak_in_thread by a second
#     thread;
#   - a bad --leaks-exitcode is refused (exit 2), and a bad
#     JPSYNC_LEAKS_EXITCODE draws the library's one-line warning naming it;
#   - without --leaks: no report.
# Skipped (77) under valgrind or a sanitizer (no preload).  Under qemu-user
# the cases of a thread still running at exit are left out (a signal to a
# thread blocked in the emulator is not delivered the same way).
set -u
. "${top_srcdir:-.}/tests/shim/preload-common.sh"
skip_if_no_preload
prog=$top_builddir/tests/alloc/leak-prog
[ -x "$prog" ] || fail "$prog not built"
make_tmp
status=0
bad() { echo "FAIL: $*"; status=1; }

# leaks ARGS...: run, stderr into $tmp/err, the exit status into $rc.
leaks() {
  rc=0
  timeout 60 $run_module "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
  cat "$tmp/err"
}
summary() { grep '^jpsync: leaks: [0-9]* bytes in' "$tmp/err"; }

leaks --leaks "$prog" leak
[ "$rc" -eq 23 ] || bad "leak: exit status $rc, not 23"
summary | grep -q '^jpsync: leaks: 1048876 bytes in 3 blocks (' ||
  bad "leak: the summary is not 1048876 bytes in 3 blocks: $(summary)"
[ "$(grep -c '^Direct leak: ' "$tmp/err")" -ge 1 ] || bad "leak: no Direct leak line"
grep -q '^    #[0-9]* leak_three+' "$tmp/err" || bad "leak: leak_three not in the stack"

leaks --leaks --leaks-exitcode=0 "$prog" leak
[ "$rc" -eq 0 ] || bad "leak, --leaks-exitcode=0: exit status $rc, not the program's 0"
summary | grep -q '^jpsync: leaks: 1048876 bytes in 3 blocks (' ||
  bad "leak, --leaks-exitcode=0: no report"

leaks JPSYNC_LEAKS=1 JPSYNC_LEAKS_EXITCODE=7 "$prog" leak
[ "$rc" -eq 7 ] || bad "JPSYNC_LEAKS_EXITCODE=7: exit status $rc"

if [ -n "${JP_EMULATOR:-}" ]; then
  echo "not run here (qemu-user): reach, a thread still running at exit"
else
  leaks --leaks "$prog" reach
  [ "$rc" -eq 0 ] || bad "reach: exit status $rc, not 0"
  summary | grep -q '^jpsync: leaks: 0 bytes in 0 blocks (6 reachable blocks, ' ||
    bad "reach: not 0 leaks and the 6 blocks reachable: $(summary)"
  ! grep -q '^Direct leak' "$tmp/err" || bad "reach: a leak reported"
  ! grep -q 'not scanned' "$tmp/err" || bad "reach: a thread not scanned"

  leaks --leaks "$prog" blocked
  [ "$rc" -eq 0 ] || bad "blocked: exit status $rc, not 0"
  grep -q '^jpsync: leaks: 1 threads not scanned' "$tmp/err" ||
    bad "blocked: the thread that blocks the signal not named as not scanned"
  summary | grep -q '^jpsync: leaks: 0 bytes in 0 blocks (6 reachable blocks, ' ||
    bad "blocked: not 0 leaks and the 6 blocks reachable: $(summary)"
fi

leaks --leaks "$prog" thread
[ "$rc" -eq 23 ] || bad "thread: exit status $rc, not 23"
summary | grep -q '^jpsync: leaks: 2000 bytes in 2 blocks (' ||
  bad "thread: the summary is not 2000 bytes in 2 blocks: $(summary)"
grep -q '^    #[0-9]* leak_in_thread+' "$tmp/err" || bad "thread: leak_in_thread not in the stack"

leaks "$prog" leak
[ "$rc" -eq 0 ] || bad "without --leaks: exit status $rc"
! grep -q 'leaks' "$tmp/err" || bad "without --leaks: a report"

# A bad value: jpsync-run refuses it; the library warns, naming it.
if ! foreign && [ -z "${JP_EMULATOR:-}" ]; then
  rc=0
  "$run" --leaks --leaks-exitcode=300 "$prog" leak > /dev/null 2> "$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] || bad "--leaks-exitcode=300: exit status $rc, not 2"
  head -n 1 "$tmp/err" | grep -q "invalid value '300' for --leaks-exitcode" ||
    bad "--leaks-exitcode=300: $(cat "$tmp/err")"
fi
leaks JPSYNC_LEAKS=1 JPSYNC_LEAKS_EXITCODE=abc "$prog" leak
grep -q 'JPSYNC_LEAKS_EXITCODE' "$tmp/err" || bad "JPSYNC_LEAKS_EXITCODE=abc: no warning naming it"
exit $status
