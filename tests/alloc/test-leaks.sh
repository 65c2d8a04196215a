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
#     comes, stopped by the ptrace helper (no "not scanned" line), and finds
#     no leak; where ptrace is not permitted (the report says so), it says
#     "1 threads not scanned" instead;
#   - inreg (x86_64): a thread that blocks every signal holds the only
#     pointer to a block in a register, asleep in the kernel: no leak, as
#     its registers are read through ptrace (a report of 3000 bytes before
#     the helper, which read its stack only);
#   - thread: 2 blocks, 2000 bytes, allocated in leak_in_thread by a second
#     thread;
#   - closed: as leak, but the program closes its stderr before it exits:
#     the report still comes, on the copy of stderr the library kept;
#   - forked: a forked child does not hold the copy of stderr kept for the
#     report (a daemon would keep its caller's stderr open);
#   - chain: blocks reached only from leaked blocks are indirect leaks, and
#     of a cycle that nothing else reaches one block is direct: 2 direct
#     leaks of 420 bytes (leak_list, leak_cycle) and 3 indirect of 200;
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
# expect CASE STATUS SUMMARY: run leak-prog CASE under --leaks; its exit
# status must be STATUS, and its summary line begin with
# "jpsync: leaks: SUMMARY" (a basic regular expression).
expect() {
  leaks --leaks "$prog" "$1"
  [ "$rc" -eq "$2" ] || bad "$1: exit status $rc, not $2"
  summary | grep -q "^jpsync: leaks: $3" ||
    bad "$1: the summary does not begin with '$3': $(summary)"
}

expect leak 23 '1048876 bytes in 3 blocks (3 direct, 0 indirect; '
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
  expect reach 0 '0 bytes in 0 blocks (0 direct, 0 indirect; 6 reachable blocks, '
  ! grep -q '^Direct leak' "$tmp/err" || bad "reach: a leak reported"
  ! grep -q 'not scanned' "$tmp/err" || bad "reach: a thread not scanned"

  expect blocked 0 '0 bytes in 0 blocks (0 direct, 0 indirect; 6 reachable blocks, '
  if grep -q 'ptrace is not permitted here' "$tmp/err"; then
    echo "note: ptrace is not permitted here: blocked and inreg check the fallback only"
    grep -q '^jpsync: leaks: 1 threads not scanned' "$tmp/err" ||
      bad "blocked: the thread that blocks the signal not named as not scanned"
    traced=no
  else
    ! grep -q 'not scanned' "$tmp/err" ||
      bad "blocked: the thread that blocks the signal was not stopped by ptrace"
    traced=yes
  fi

  leaks --leaks "$prog" inreg
  if [ "$rc" -eq 77 ]; then
    echo "not run here (not x86_64): inreg"
  elif [ "$traced" = yes ]; then
    [ "$rc" -eq 0 ] || bad "inreg: exit status $rc, not 0"
    summary | grep -q '^jpsync: leaks: 0 bytes in 0 blocks (' ||
      bad "inreg: a block held in a register reported: $(summary)"
  fi
fi

expect thread 23 '2000 bytes in 2 blocks (2 direct, 0 indirect; '
grep -q '^    #[0-9]* leak_in_thread+' "$tmp/err" || bad "thread: leak_in_thread not in the stack"

expect closed 23 '1048876 bytes in 3 blocks (3 direct, 0 indirect; '

expect forked 0 '0 bytes in 0 blocks (0 direct, 0 indirect; '
grep -q '^close-on-exec fds above 2: 0$' "$tmp/out" ||
  bad "forked: the child holds the copy of stderr: $(cat "$tmp/out")"

expect chain 23 '620 bytes in 5 blocks (2 direct, 3 indirect; '
# kind_bytes KIND: the bytes of the KIND ("Direct" or "Indirect") lines.
kind_bytes() {
  sed -n "s/^$1 leak: \([0-9]*\) bytes in .*/\1/p" "$tmp/err" | awk '{ s += $1 } END { print s + 0 }'
}
[ "$(kind_bytes Direct)" = 420 ] || bad "chain: direct leaks of $(kind_bytes Direct) bytes, not 420"
[ "$(kind_bytes Indirect)" = 200 ] || bad "chain: indirect leaks of $(kind_bytes Indirect) bytes, not 200"
# The direct lines come first, then the indirect ones.
[ "$(grep -E '^(Direct|Indirect) leak: ' "$tmp/err" | cut -d' ' -f1 | uniq | tr '\n' ' ')" = "Direct Indirect " ] ||
  bad "chain: the direct leaks are not all listed before the indirect ones"
grep -q '^    #[0-9]* leak_list+' "$tmp/err" || bad "chain: leak_list not in the stacks"
grep -q '^    #[0-9]* leak_cycle+' "$tmp/err" || bad "chain: leak_cycle not in the stacks"

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
