#!/bin/sh
# jpsync-run from an installed tree: `make install DESTDIR=...`, then the
# installed jpsync-run finds the installed module (under the same root as
# itself: the DESTDIR copy, not the build tree), the module is linked to
# libjpsync.so.1 without a path into the build tree, and a program runs on
# it.  The DESTDIR tree is not at its configured prefix, so the run points
# LD_LIBRARY_PATH at its libdir, as for any staged library.
set -u
. "${top_srcdir:-.}/tests/shim/preload-common.sh"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
: "${READELF:=readelf}"
make_tmp
dest="$tmp/dest"
make -s -C "$top_builddir" install DESTDIR="$dest" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "make install DESTDIR=$dest"; }
# make install prefix=DIR is refused, before it installs anything (the
# configured prefix is built into jpsync-run, jpsync.pc and the run paths).
if make -s -C "$top_builddir" install prefix="$tmp/other" > "$tmp/prefix.log" 2>&1; then
  fail "make install prefix=DIR succeeded: it installs a tree that does not work"
fi
grep -q "^error: make install prefix=$tmp/other: this tree was configured with --prefix=" "$tmp/prefix.log" ||
  { cat "$tmp/prefix.log"; fail "make install prefix=DIR: no message naming configure --prefix"; }
[ -e "$tmp/other" ] && fail "make install prefix=DIR installed files before it refused"
echo "ok: make install prefix=DIR is refused with a message"
libdir="$dest$(pkg-config --variable=libdir "$top_builddir/jpsync.pc")"
inst_run=$(find "$dest" -path '*/bin/jpsync-run' -type f | head -n 1)
inst_module=$(find "$dest" -name libjpsync-preload.so -type f | head -n 1)
[ -n "$inst_run" ] && [ -x "$inst_run" ] || fail "jpsync-run not installed in a bin directory"
[ -n "$inst_module" ] || fail "libjpsync-preload.so not installed"
case $inst_module in
  "$libdir"/jpsync/libjpsync-preload.so) ;;
  *) fail "module installed as $inst_module, expected under $libdir/jpsync" ;;
esac
page=$(find "$dest" -path '*/man1/jpsync-run.1' | head -n 1)
[ -n "$page" ] || fail "jpsync-run.1 not installed"
echo "ok: installed $inst_run, $inst_module, $page"

# The installed module: linked to libjpsync.so.1, no build-tree path.
$READELF -d "$inst_module" | grep -q 'NEEDED.*\[libjpsync\.so\.1\]' ||
  fail "installed module does not need libjpsync.so.1"
if $READELF -d "$inst_module" | grep -E 'RPATH|RUNPATH' | grep -q "$top_builddir"; then
  fail "installed module has a run path into the build tree"
fi
# It exports exactly the malloc family (shim/preload.sym) and, when built
# with C++, operators new and delete; nothing of the library.
$READELF --dyn-syms -W "$inst_module" |
  awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") {print $8}' |
  sort -u > "$tmp/syms"
for s in malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign \
         valloc pvalloc malloc_usable_size malloc_trim mallinfo mallinfo2 malloc_stats malloc_info \
         free_sized free_aligned_sized cfree \
         __libc_malloc __libc_calloc __libc_realloc __libc_free __libc_memalign \
         __libc_valloc __libc_pvalloc __posix_memalign; do
  grep -qx "$s" "$tmp/syms" || fail "installed module does not export $s"
  echo "$s"
done | sort > "$tmp/c-names"
grep -v -e '^_Znw' -e '^_Zna' -e '^_Zdl' -e '^_Zda' "$tmp/syms" > "$tmp/c-exported"
if ! diff -u "$tmp/c-names" "$tmp/c-exported"; then
  fail "the module exports names outside the malloc family (+ above)"
fi
if [ -n "${CXX:-}" ] && grep -q '^_Znwm\|^_Znwj' "$tmp/syms"; then
  [ "$(grep -c -e '^_Znw' -e '^_Zna' -e '^_Zdl' -e '^_Zda' "$tmp/syms")" -eq 20 ] ||
    fail "expected the 20 operators new and delete, got: $(grep -e '^_Zn' -e '^_Zd' "$tmp/syms" | tr '\n' ' ')"
fi

# The installed jpsync-run picks the installed module.
got=$(env -u LD_PRELOAD $tx "$inst_run" --print-env | sed -n 's/^LD_PRELOAD=//p')
[ "$got" = "$inst_module" ] || fail "installed jpsync-run --print-env gives LD_PRELOAD=$got, expected $inst_module"
$tx "$inst_run" --version | grep -q '^jpsync-run (libjpsync) ' || fail "installed --version"
echo "ok: the installed jpsync-run uses the installed module"

if foreign; then
  echo "SKIP (rest): a program under the installed jpsync-run: $foreign_why"; exit 0
fi
if sanitized; then
  echo "SKIP (rest): sanitizer build, programs cannot run under the module"; exit 0
fi
command -v timeout >/dev/null 2>&1 || { echo "SKIP (rest): no timeout(1)"; exit 0; }
LD_LIBRARY_PATH="$libdir" timeout -k 5 60 "$inst_run" --stats="$tmp/stats.txt" cat /proc/self/maps \
  > "$tmp/maps" 2> "$tmp/err" || { cat "$tmp/err"; fail "cat under the installed jpsync-run"; }
grep -q "$inst_module" "$tmp/maps" || fail "the installed module is not mapped"
grep -q "$libdir/libjpsync.so.1" "$tmp/maps" || fail "the installed libjpsync.so.1 is not mapped"
if grep -q "$top_builddir/" "$tmp/maps"; then fail "something from the build tree is mapped"; fi
grep -q 'jpsync allocator statistics' "$tmp/stats.txt" || fail "--stats=FILE wrote no statistics"
echo "ok: a program ran on the installed module and library"
