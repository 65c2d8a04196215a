#!/bin/sh
# check-models.sh - the exhaustive models of the library's sleeping
# protocols, tests/*/model-*.py: jp_mutex's (tests/sync/model-mutex.py,
# lib/sync/mutex.c) and the internal lock's (tests/base/model-lock.py,
# lib/base/lock.c).  Each model must pass as it is; then, with each part
# of its protocol taken out in turn (the mutants it lists with
# --mutants), it must find the failure, so that it can fail at all.  A
# model exits 0 when it passes, and with --mutant=NAME when it finds the
# failure.  Skipped (77) without python3.
set -u
: "${top_srcdir:=.}"
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found (scripts/install-deps.sh installs it)"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
for model in "$top_srcdir"/tests/*/model-*.py; do
  [ -f "$model" ] || continue
  n=$((n + 1))
  name=${model#"$top_srcdir"/}
  python3 "$model" || { echo "FAIL: $name fails (above)"; fail=1; }
  mutants=$(python3 "$model" --mutants) && [ -n "$mutants" ] ||
    { echo "FAIL: $name lists no mutant: nothing shows it can fail"; fail=1; continue; }
  for m in $mutants; do
    if python3 "$model" --mutant="$m" > "$tmp/out" 2>&1; then
      tail -n 1 "$tmp/out"
    else
      cat "$tmp/out"
      echo "FAIL: $name without '$m' passes: it no longer tests that part"; fail=1
    fi
  done
done
[ $n -gt 0 ] || { echo "FAIL: no tests/*/model-*.py under $top_srcdir"; fail=1; }
exit $fail
