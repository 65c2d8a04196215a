#!/bin/sh
# check-sync-check.sh - a debugging mode never reports a correct program:
# the jp_mutex, jp_cond, jp_rwlock and jp_pool suites run again with
# JPSYNC_CHECK=1, where every lock and unlock goes through the owner checks
# (lib/sync/lockdep.c's held stacks) and every pool get and put through the
# double-put check,
# and must pass with nothing reported.  (tests/sync/test-misuse checks that the
# misuse itself is reported.)  Under valgrind (make check-valgrind) the
# suites run there themselves, and test-misuse runs the owner checks.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: the suites run under valgrind themselves"; exit 77; fi
tx="$top_srcdir/tests/target-exec.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
for t in sync/test-mutex sync/test-cond sync/test-rwlock mem/test-pool; do
  if ! sh "$tx" JPSYNC_CHECK=1 "$top_builddir/tests/$t" > "$tmp/${t#*/}.out" 2>&1; then
    echo "FAIL: $t with JPSYNC_CHECK=1:"; tail -n 40 "$tmp/${t#*/}.out"; fail=1
  elif grep -n '^jpsync: ' "$tmp/${t#*/}.out"; then
    echo "FAIL: $t with JPSYNC_CHECK=1 printed a report (above)"; fail=1
  else
    echo "PASS: $t with JPSYNC_CHECK=1 ($(grep -c 'passed' "$tmp/${t#*/}.out" || true) lines of passes)"
    grep -E '^ +(suites|tests|asserts) ' "$tmp/${t#*/}.out"
  fi
done
exit $fail
