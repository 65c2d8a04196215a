#!/bin/sh
# make install into a DESTDIR, then configure README.md's CMake project
# (find_package(jpsync 1.1 REQUIRED), examples/hello.c linked to the
# imported target jpsync::jpsync) against that tree only; build and run it
# ("sum 500500") and check that it loaded the installed libjpsync.so.1.
# The target's properties (library file, soname, headers) and the version
# file (SameMajorVersion: 1.0 is met, 2.0 and a later minor are not) are
# checked too.  The config computes its prefix from its own place, so the
# DESTDIR tree needs no sysroot setting (tests/check-pkgconfig.sh needs one).
# A cross build uses its own compiler ($CC) and runs the program through
# tests/target-exec.sh, as check-pkgconfig.sh does.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}" "${CMAKE:=cmake}" "${READELF:=readelf}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
if ! command -v "$CMAKE" > /dev/null 2>&1; then
  echo "SKIP: no cmake ($CMAKE) on this machine; scripts/install-deps.sh installs it"
  exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dest="$tmp/dest"
make -s -C "$top_builddir" install DESTDIR="$dest" > "$tmp/install.log" 2>&1 ||
  { echo "FAIL: make install"; cat "$tmp/install.log"; exit 1; }
pc=$top_builddir/jpsync.pc
prefix=$(pkg-config --variable=prefix "$pc")
libdir="$dest$(pkg-config --variable=libdir "$pc")"
incdir="$dest$(pkg-config --variable=includedir "$pc")"
ver=$(pkg-config --modversion "$pc")
major=${ver%%.*} rest=${ver#*.} minor=${ver#*.}; minor=${minor%%.*}
cfgdir=$libdir/cmake/jpsync
for f in jpsyncConfig.cmake jpsyncConfigVersion.cmake; do
  [ -f "$cfgdir/$f" ] || { echo "FAIL: $f not installed in $cfgdir"; exit 1; }
done
: "$rest"

# The configured compiler (a cross build's, or clang), with the build's
# sanitizers: CMAKE_C_COMPILER takes the program, the flags the rest.
# shellcheck disable=SC2086
set -- $CC
cc_prog=$1; shift
cflags="$* ${SANITIZER_CFLAGS:-}"

# The program: README.md's CMakeLists.txt (the ```cmake block of "## A C
# example"), as a user writes it, with hello.c beside it; then lines that
# print what the test checks of the target.
readme=$top_srcdir/README.md
mkdir "$tmp/src" "$tmp/ver"
cp "$top_srcdir/examples/hello.c" "$tmp/src/"
awk '$0 == "## A C example" { t = 1; next }
     t && /^## / { exit }
     t && /^```cmake$/ { inb = 1; next }
     inb && /^```/ { exit }
     inb { print }' "$readme" > "$tmp/src/CMakeLists.txt"
grep -q 'find_package(jpsync' "$tmp/src/CMakeLists.txt" ||
  { echo "FAIL: no \`\`\`cmake block with find_package(jpsync) under '## A C example' in README.md"; exit 1; }
echo "README.md's CMakeLists.txt:"; sed 's/^/  /' "$tmp/src/CMakeLists.txt"
cat >> "$tmp/src/CMakeLists.txt" <<'CMAKE'
foreach(p IMPORTED_LOCATION IMPORTED_SONAME INTERFACE_INCLUDE_DIRECTORIES INTERFACE_LINK_LIBRARIES)
  get_target_property(v jpsync::jpsync ${p})
  message(STATUS "jpsync-test: ${p}=${v}")
endforeach()
message(STATUS "jpsync-test: jpsync_DIR=${jpsync_DIR}")
message(STATUS "jpsync-test: jpsync_VERSION=${jpsync_VERSION}")
CMAKE
# The version rules: find_package(jpsync WANT REQUIRED) alone.
cat > "$tmp/ver/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.13)
project(version C)
find_package(jpsync ${WANT} REQUIRED)
CMAKE

# configure SRC NAME [WANT]: the CMake build tree $tmp/NAME of $tmp/SRC;
# only the installed tree is searched (not /usr, /usr/local).
# CMake looks in <prefix>/lib64 only on platforms that use it, not on
# Debian, where the RPM is also test-built with --libdir=/usr/lib64:
# there the config's folder is named, as a user of such a layout would.
case $libdir in
  "$dest$prefix/lib"|"$dest$prefix/lib/"*|"$dest$prefix/share") hint= ;;
  *) hint=-Djpsync_DIR=$cfgdir ;;
esac
configure() {
  # shellcheck disable=SC2086 # hint is one word or none
  "$CMAKE" -S "$tmp/$1" -B "$tmp/$2" -DWANT="${3:-}" $hint \
    -DCMAKE_PREFIX_PATH="$dest$prefix" -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
    -DCMAKE_C_COMPILER="$cc_prog" -DCMAKE_C_FLAGS="$cflags" \
    -DCMAKE_EXE_LINKER_FLAGS="${SANITIZER_CFLAGS:-}" -DCMAKE_BUILD_TYPE= \
    > "$tmp/$2.log" 2>&1
}
prop() { sed -n "s/^-- jpsync-test: $1=//p" "$tmp/$2.log"; }

# ---- README's project: find_package(jpsync ...), hello linked to jpsync::jpsync
configure src build ||
  { echo "FAIL: cmake of README.md's CMakeLists.txt"; cat "$tmp/build.log"; exit 1; }
grep '^-- jpsync-test:' "$tmp/build.log"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ "$(prop jpsync_DIR build)" = "$cfgdir" ] ||
  bad "found $(prop jpsync_DIR build), not the installed $cfgdir"
[ "$(prop jpsync_VERSION build)" = "$ver" ] || bad "jpsync_VERSION is not $ver"
loc=$(prop IMPORTED_LOCATION build)
case $loc in
  "$libdir"/libjpsync.so*) [ -f "$loc" ] || bad "IMPORTED_LOCATION $loc does not exist" ;;
  *) bad "IMPORTED_LOCATION $loc is not in the installed $libdir" ;;
esac
if command -v "$READELF" > /dev/null 2>&1; then
  soname=$("$READELF" -d "$libdir/libjpsync.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
else
  soname=libjpsync.so.$major; echo "note: no readelf; expecting the soname $soname"
fi
[ "$(prop IMPORTED_SONAME build)" = "$soname" ] ||
  bad "IMPORTED_SONAME $(prop IMPORTED_SONAME build), the library's is $soname"
[ "$(prop INTERFACE_INCLUDE_DIRECTORIES build)" = "$incdir" ] ||
  bad "INTERFACE_INCLUDE_DIRECTORIES is not the installed $incdir"
[ "$(prop INTERFACE_LINK_LIBRARIES build)" = "Threads::Threads" ] ||
  bad "INTERFACE_LINK_LIBRARIES is not Threads::Threads"
[ $fail -eq 0 ] || exit 1

"$CMAKE" --build "$tmp/build" > "$tmp/make.log" 2>&1 ||
  { echo "FAIL: cmake --build of examples/hello.c with jpsync::jpsync"; cat "$tmp/make.log"; exit 1; }
# CMake gives the program a run path to the imported library's folder;
# under an emulator the program runs through tests/target-exec.sh.
if [ -n "${JP_EMULATOR:-}" ]; then tx="sh $top_srcdir/tests/target-exec.sh"; else tx="env"; fi
# shellcheck disable=SC2086 # $tx: a command and its arguments
# (A wrong C library under the emulator hangs the program: a time limit.)
out=$(env -u LD_LIBRARY_PATH timeout 300 $tx "$tmp/build/hello") ||
  { echo "FAIL: hello exits $?: $out"; exit 1; }
[ "$out" = "sum 500500" ] || { echo "FAIL: hello printed '$out', expected 'sum 500500'"; exit 1; }
# shellcheck disable=SC2086
loaded=$(env -u LD_LIBRARY_PATH timeout 300 $tx LD_TRACE_LOADED_OBJECTS=1 "$tmp/build/hello")
echo "$loaded" | grep -q "$libdir/$soname" ||
  { echo "FAIL: hello did not load the installed $libdir/$soname"; echo "$loaded"; exit 1; }
echo "ok: examples/hello.c built with jpsync::jpsync printed '$out'"

# ---- the version file: SameMajorVersion
configure ver older "$major.0" || { bad "find_package(jpsync $major.0) refused"; cat "$tmp/older.log"; }
configure ver none || { bad "find_package(jpsync) without a version refused"; cat "$tmp/none.log"; }
for want in "$((major + 1)).0" "$major.$((minor + 1))"; do
  if configure ver "refuse-$want" "$want"; then
    bad "find_package(jpsync $want REQUIRED) accepted version $ver"
  elif ! grep -q "jpsyncConfig.cmake, version: $ver" "$tmp/refuse-$want.log"; then
    bad "find_package(jpsync $want) failed, but not on the version:"; cat "$tmp/refuse-$want.log"
  fi
done
[ $fail -eq 0 ] && echo "ok: version $ver meets $major.0 and $major.$minor, not $((major + 1)).0 or $major.$((minor + 1))"
exit $fail
