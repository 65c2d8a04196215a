#!/bin/sh
# abidiff the built library against the committed baseline lib/libjpsync.abi.
# Any reported change fails (abidiff's status is a bit mask: 4 = change,
# 8 = incompatible change, and layout changes have come back as 4), except
# added jp_ functions, which lib/libjpsync.abi.supp lets through; after adding
# symbols in a new version node, run `make update-abi` and commit the result.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
so="$top_builddir/lib/.libs/libjpsync.so.1"
base="$top_srcdir/lib/libjpsync.abi"
if [ -z "${ABIDIFF:-}" ] || ! command -v "$ABIDIFF" >/dev/null 2>&1; then
  echo "FAIL: abidiff not found (install abigail-tools)"; exit 1
fi
set +e
"$ABIDIFF" --no-added-syms --suppressions "$top_srcdir/lib/libjpsync.abi.supp" \
  --headers-dir2 "$top_srcdir/include" --headers-dir2 "$top_builddir/include" \
  "$base" "$so"
st=$?
set -e
if [ $st -ne 0 ]; then
  echo "FAIL: abidiff exit status $st: the ABI differs from lib/libjpsync.abi"
  echo "      (an intended addition in a new node: make update-abi, commit)"
  exit 1
fi
echo "ok: ABI matches lib/libjpsync.abi"
