#!/bin/sh
# check-alloc-valgrind.sh - memcheck sees jp_alloc's blocks as heap blocks:
# a leak is "definitely lost", a read of a freed block an "Invalid read",
# and a program that frees everything is clean.  Exit 77 without valgrind.
set -u
: "${top_builddir:=.}"
helper="$top_builddir/tests/alloc/alloc-helper"
command -v valgrind >/dev/null 2>&1 || { echo "valgrind not found: skip"; exit 77; }
# A sanitizer build: the sanitizer owns the shadow memory; valgrind would not
# cope (and SANITIZERS may be empty where SANITIZER_CFLAGS is not).
case "${SANITIZERS:-}${SANITIZER_CFLAGS:-}" in
*sanitize*|thread*|address*) echo "sanitizer build: skip"; exit 77;;
esac
# Under make check-valgrind (VALGRIND set), or already under valgrind: the
# plain make check runs this once; nothing to add.
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: run by make check"; exit 77; fi
# A cross build: valgrind here is the build machine's, for its architecture.
if [ "${JP_FOREIGN:-no}" = yes ]; then
	echo "SKIP: ${JP_HOST:-cross} build: valgrind runs on the native build only"; exit 77
fi
case "${LD_PRELOAD:-}" in *vgpreload*) exit 77;; esac
if ! grep -q '^#define HAVE_VALGRIND_MEMCHECK_H 1' "$top_builddir/config.h" 2>/dev/null; then
	echo "built without <valgrind/memcheck.h>: skip"; exit 77
fi
vg="valgrind --tool=memcheck --leak-check=full --error-exitcode=9"
tmp=${TMPDIR:-/tmp}/check-alloc-vg.$$
trap 'rm -f "$tmp"' EXIT
fail=0

$vg "$helper" leak >"$tmp" 2>&1
if ! grep -q "definitely lost: [0-9,]* bytes in 1 blocks" "$tmp"; then
	echo "FAIL: memcheck did not report the leaked jp_alloc block"; cat "$tmp"; fail=1
fi
$vg "$helper" use-after-free >"$tmp" 2>&1
if ! grep -q "Invalid read" "$tmp" || ! grep -q "free'd" "$tmp"; then
	echo "FAIL: memcheck did not report the read of a freed block"; cat "$tmp"; fail=1
fi
if ! $vg "$helper" clean >"$tmp" 2>&1; then
	echo "FAIL: memcheck reported errors for a correct program"; cat "$tmp"; fail=1
fi
if ! $vg "$helper" check-ok >"$tmp" 2>&1; then
	echo "FAIL: memcheck reported errors for check-ok"; cat "$tmp"; fail=1
fi
[ $fail = 0 ] && echo "memcheck sees jp_alloc blocks: ok"
exit $fail
