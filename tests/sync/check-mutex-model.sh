#!/bin/sh
# check-mutex-model.sh - jp_mutex's protocol (lib/sync/mutex.c: the store
# unlock, the nap, the barrier, the timed lock's hand-over) explored in
# every interleaving of 3 and 4 threads under x86-TSO by
# tests/sync/model-mutex.py, which must find no lost wake-up, no second
# owner and no misuse report; then with each part of the protocol taken
# out in turn, where it must find the failure (so the model can fail).
# Skipped (77) without python3.
set -u
: "${top_srcdir:=.}"
model="$top_srcdir/tests/sync/model-mutex.py"
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found (scripts/install-deps.sh installs it)"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
python3 "$model" || { echo "FAIL: the model of lib/sync/mutex.c fails (above)"; fail=1; }
for m in no-nap no-fence no-handover; do
  if ! python3 "$model" --mutant=$m > "$tmp/out" 2>&1; then
    cat "$tmp/out"
    echo "FAIL: the model without '$m' passes: it no longer tests that part"; fail=1
  else
    tail -n 1 "$tmp/out"
  fi
done
exit $fail
