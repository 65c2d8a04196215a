#!/bin/sh
# check-lock-model.sh - how the internal lock sleeps and wakes
# (lib/base/lock.c: a release wakes only when no wake is pending, a waiter
# clears a pending wake before its look at the owner), explored in every
# interleaving of 2 and 3 threads by tests/base/model-lock.py, which must
# find no lost wake-up; then with each part taken out in turn, where it
# must find one (so the model can fail).  Skipped (77) without python3.
set -u
: "${top_srcdir:=.}"
model="$top_srcdir/tests/base/model-lock.py"
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found (scripts/install-deps.sh installs it)"; exit 77
fi
fail=0
python3 "$model" || { echo "FAIL: the model of lib/base/lock.c fails (above)"; fail=1; }
for m in no-clear clear-late; do
  python3 "$model" --mutant=$m ||
    { echo "FAIL: the model without '$m' passes: it no longer tests that part"; fail=1; }
done
exit $fail
