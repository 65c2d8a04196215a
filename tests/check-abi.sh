#!/bin/sh
# abidiff the built library against the committed baseline of its own
# architecture, lib/abi/libjpsync-$JP_ABI_ARCH.abi (Debian's names; one per
# architecture CI builds: the ELF class, the sizes of size_t and long and
# the layouts differ between them).  Any reported change fails (abidiff's
# status is a bit mask: 4 = change, 8 = incompatible change, and layout
# changes have come back as 4), except added jp_ functions, which
# lib/libjpsync.abi.supp lets through.  After adding symbols in a new
# version node, run `make update-abi` (every architecture's baseline, from
# cross builds) and commit the result.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}" "${JP_ABI_ARCH:=amd64}"
so="$top_builddir/lib/.libs/libjpsync.so.1"
base="$top_srcdir/lib/abi/libjpsync-$JP_ABI_ARCH.abi"
if [ -z "${ABIDIFF:-}" ] || ! command -v "$ABIDIFF" >/dev/null 2>&1; then
  echo "FAIL: abidiff not found (install abigail-tools)"; exit 1
fi
if [ ! -f "$base" ]; then
  # An architecture the project keeps no baseline for (a distribution's
  # build on ppc64el, say): nothing to compare with, said so.
  echo "SKIP: no ABI baseline for $JP_ABI_ARCH (lib/abi/); make update-abi ABI_ARCHS=$JP_ABI_ARCH makes one"
  exit 77
fi
set +e
"$ABIDIFF" --no-added-syms --suppressions "$top_srcdir/lib/libjpsync.abi.supp" \
  --headers-dir2 "$top_srcdir/include" --headers-dir2 "$top_builddir/include" \
  "$base" "$so"
st=$?
set -e
if [ $st -ne 0 ]; then
  echo "FAIL: abidiff exit status $st: the ABI differs from lib/abi/libjpsync-$JP_ABI_ARCH.abi"
  echo "      (an intended addition in a new node: make update-abi, commit)"
  exit 1
fi
echo "ok: ABI matches lib/abi/libjpsync-$JP_ABI_ARCH.abi"
