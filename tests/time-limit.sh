#!/bin/sh
# time-limit.sh COMMAND [ARG]... - run one test of make check with a time
# limit, so that a test that hangs fails by name instead of stopping the
# whole run (and CI's clock) with it.
#
# The limit is JPSYNC_TEST_TIMEOUT seconds (default 1200; 0: none).  Past
# it, timeout(1) sends SIGTERM to the test's process group (the test, its
# children, qemu), then SIGKILL 30 s later (status 137), and when the test
# ended on SIGTERM this script says which test ran out of time (status 124).  The CUnit suites write
# their output unbuffered (jp_test_run), so the log shows the case that was
# running.  It is make check's LOG_COMPILER and SH_LOG_COMPILER (in front of
# tests/target-exec.sh in an emulated build); check-valgrind runs the
# suites under valgrind instead, without a limit.
set -u
limit=${JPSYNC_TEST_TIMEOUT:-1200}
case $limit in
  ''|*[!0-9]*)
    echo "time-limit.sh: JPSYNC_TEST_TIMEOUT must be a whole number of seconds, not '$limit'" >&2
    exit 99 ;;
esac
[ $# -gt 0 ] || { echo "usage: time-limit.sh COMMAND [ARG]..." >&2; exit 99; }
limit=$(printf '%s' "$limit" | sed 's/^0*//')	# 010 is 10 s, not octal
# Empty (0) is no limit; so is one of over 9 digits (32 years).
if [ -z "$limit" ] || [ ${#limit} -gt 9 ] || ! command -v timeout >/dev/null 2>&1; then
  exec "$@"
fi
timeout -k 30 "$limit" "$@"
rc=$?
if [ $rc -eq 124 ]; then
  # The test's last argument is its name (the program or the script).
  for last; do :; done
  echo "time-limit.sh: FAIL: $last ran past JPSYNC_TEST_TIMEOUT=${limit}s and was stopped" >&2
  exit 124
fi
exit $rc
