#!/bin/sh
# check-time-limit.sh - tests/time-limit.sh, which make check runs every
# test through: a test past JPSYNC_TEST_TIMEOUT is stopped and named, a
# test's own status passes through, and a bad limit is refused.
set -u
tl="$top_srcdir/tests/time-limit.sh"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT

# A hang is stopped at the limit (1 s, not the 60 s it asks for).
t0=$(date +%s)
JPSYNC_TEST_TIMEOUT=1 $SHELL "$tl" sleep 60 2>"$out"; rc=$?
t1=$(date +%s)
[ $rc -eq 124 ] || bad "a hang: status $rc, expected 124"
[ $((t1 - t0)) -lt 30 ] || bad "a hang with a 1 s limit ran $((t1 - t0)) s"
grep -q 'FAIL: 60 ran past JPSYNC_TEST_TIMEOUT=1s' "$out" || bad "a hang is not named: $(cat "$out")"

# Leading zeros are decimal (010 is 10 s, not octal 8) and a test's own
# status, success or failure, passes through.
JPSYNC_TEST_TIMEOUT=010 $SHELL "$tl" true || bad "true under a 10 s limit failed"
JPSYNC_TEST_TIMEOUT=5 $SHELL "$tl" sh -c 'exit 77'; rc=$?
[ $rc -eq 77 ] || bad "a skipped test's 77 became $rc"
JPSYNC_TEST_TIMEOUT=0 $SHELL "$tl" sh -c 'exit 3'; rc=$?
[ $rc -eq 3 ] || bad "with no limit, status 3 became $rc"
JPSYNC_TEST_TIMEOUT=99999999999999999999 $SHELL "$tl" true || bad "a huge limit failed"

# A limit that is not a whole number is a hard error that says so.
for v in abc -5 1.5 ' '; do
  JPSYNC_TEST_TIMEOUT=$v $SHELL "$tl" true 2>"$out"; rc=$?
  [ $rc -eq 99 ] || bad "JPSYNC_TEST_TIMEOUT='$v': status $rc, expected 99"
  grep -q 'JPSYNC_TEST_TIMEOUT must be a whole number' "$out" || bad "JPSYNC_TEST_TIMEOUT='$v': no message"
done
[ $fail -eq 0 ] && echo "PASS: time-limit.sh"
exit $fail
