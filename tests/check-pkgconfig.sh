#!/bin/sh
# make install into a DESTDIR, then build and run a program with
# `pkg-config --cflags --libs jpsync` against that tree only; every public
# header is installed, and a C++ program that includes one per-component
# C++ header alone builds against that tree.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}" "${CXX:=c++}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dest="$tmp/dest"
make -s -C "$top_builddir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1 ||
  { echo "FAIL: make install"; cat "$tmp/install.log"; exit 1; }
libdir="$dest$(pkg-config --variable=libdir "$top_builddir/jpsync.pc")"
incdir="$dest$(pkg-config --variable=includedir "$top_builddir/jpsync.pc")"
pc="$libdir/pkgconfig/jpsync.pc"
[ -f "$pc" ] || { echo "FAIL: jpsync.pc not installed"; exit 1; }
# The .pc names the real prefix; point pkg-config at the DESTDIR copy.
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
export PKG_CONFIG_LIBDIR="$libdir/pkgconfig"
ver=$(pkg-config --modversion jpsync)
flags=$(pkg-config --cflags --libs jpsync)
echo "pkg-config: jpsync $ver: $flags"
cat > "$tmp/prog.c" <<'PROG'
#include <jpsync.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	printf("%s %u\n", jp_version(), jp_hw_threads() > 0);
	return strcmp(jp_version(), JPSYNC_VERSION_STRING) != 0;
}
PROG
# shellcheck disable=SC2086
$CC ${SANITIZER_CFLAGS:-} -o "$tmp/prog" "$tmp/prog.c" $flags -Wl,-rpath,"$libdir" ||
  { echo "FAIL: compile with pkg-config flags"; exit 1; }
# A cross build's program runs under its emulator (tests/target-exec.sh),
# and the loader's own list (LD_TRACE_LOADED_OBJECTS, what ldd prints)
# says where libjpsync.so.1 came from.
if [ -n "${JP_EMULATOR:-}" ]; then tx="sh $top_srcdir/tests/target-exec.sh"; else tx=env; fi
out=$(env -u LD_LIBRARY_PATH $tx "$tmp/prog")
[ "$out" = "$ver 1" ] || { echo "FAIL: program printed '$out', expected '$ver 1'"; exit 1; }
# The program must have resolved libjpsync.so.1 from the installed tree.
loaded=$(env -u LD_LIBRARY_PATH $tx LD_TRACE_LOADED_OBJECTS=1 "$tmp/prog")
echo "$loaded" | grep -q "$libdir/libjpsync.so.1" ||
  { echo "FAIL: not linked against the installed library"; echo "$loaded"; exit 1; }
# The headers: <jpsync.h>, <jpsync.hpp> and every <jpsync/*.h>, <jpsync/*.hpp>.
nh=0
for rel in jpsync.h jpsync.hpp jpsync/version.h \
           $(cd "$top_srcdir/include" && ls jpsync/*.h jpsync/*.hpp); do
  [ -f "$incdir/$rel" ] || { echo "FAIL: <$rel> not installed (looked in $incdir)"; exit 1; }
  nh=$((nh + 1))
done
echo "ok: $nh public headers installed"
# A C++ header alone, from the installed tree (built and linked, not run).
cat > "$tmp/prog.cc" <<'PROG'
#include <jpsync/mutex.hpp>
#include <mutex>
int main()
{
	static jpsync::mutex m;
	std::lock_guard<jpsync::mutex> g(m);
	return 0;
}
PROG
echo 'int main() { return 0; }' > "$tmp/t.cc"
# shellcheck disable=SC2086
if $CXX -std=c++17 ${SANITIZER_CFLAGS:-} -o "$tmp/t" "$tmp/t.cc" 2> /dev/null; then
  # shellcheck disable=SC2086
  $CXX -std=c++17 ${SANITIZER_CFLAGS:-} -o "$tmp/progxx" "$tmp/prog.cc" $flags -Wl,-rpath,"$libdir" ||
    { echo "FAIL: <jpsync/mutex.hpp> alone does not build with the pkg-config flags"; exit 1; }
else
  echo "note: no working C++ compiler ($CXX): the C++ header program is skipped"
fi
page=$(find "$dest" -path '*/man3/jp_hammer.3' | head -n1)
[ -n "$page" ] || { echo "FAIL: jp_hammer.3 not installed"; exit 1; }
mandir=$(dirname "$(dirname "$page")")
MANPATH="$mandir" man -P cat 3 jp_hammer >/dev/null 2>&1 ||
  { echo "FAIL: man 3 jp_hammer does not render from the installed tree"; exit 1; }
echo "ok: built and ran against the installed tree ($out)"
