#!/bin/sh
# README.md's Quick start and C example, run as the README writes them, so
# that they cannot drift from what works:
#  - Quick start: the line that installs packages needs root and apt
#    (exempt; it must not install everything, --all); the build line is how
#    this build tree was made (exempt; its steps are checked against the
#    known ones); every other line runs in this build tree and must exit 0
#    (jpsync-run must print the allocator's statistics).
#  - A C example: the C block must be examples/hello.c byte for byte; the
#    shell block runs from a copy of the source tree against a
#    `make install DESTDIR=` tree found through pkg-config, as an installed
#    library is, and a line `./PROG  # TEXT` must print TEXT.
# The jpsync-run lines are left out (and said so) where the preload module
# cannot run: sanitizer builds and foreign (cross) builds.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
. "$top_srcdir/tests/shim/preload-common.sh"	# tx, foreign, sanitized; top_builddir absolute
top_srcdir=$(cd "$top_srcdir" && pwd)
readme=$top_srcdir/README.md
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# block SECTION N: the Nth fenced block of the README's "## SECTION".
block() {
  awk -v s="## $1" -v n="$2" '
    $0 == s { t = 1; next }
    t && /^## / { exit }
    t && /^```/ { if (inb) { inb = 0; if (++k == n) exit } else inb = 1; next }
    t && inb && k == n - 1 { print }' "$readme"
}

# ---- Quick start
block "Quick start" 1 > "$tmp/quick"
[ -s "$tmp/quick" ] || { echo "FAIL: no block under '## Quick start' in README.md"; exit 1; }
n=0
while IFS= read -r line; do
  case $line in
    "") continue ;;
    "sudo "*|*install-deps.sh*)
      case $line in
        *--all*) bad "Quick start installs every optional package: $line" ;;
        *scripts/install-deps.sh*) [ -f "$top_srcdir/scripts/install-deps.sh" ] ||
                                     bad "Quick start names a missing scripts/install-deps.sh" ;;
      esac
      echo "exempt (root, apt): $line"; continue ;;
    *autogen.sh*|*configure*)
      # The build: each step must be one this tree knows.
      echo "$line" | sed 's/ && /\n/g' > "$tmp/steps"
      while IFS= read -r s; do
        case $s in
          ./autogen.sh) [ -f "$top_srcdir/autogen.sh" ] || bad "no autogen.sh" ;;
          "mkdir -p build"|"cd build"|"../configure"|"../configure "*|"make"|"make "*) ;;
          *) bad "Quick start: unknown build step '$s'" ;;
        esac
      done < "$tmp/steps"
      echo "exempt (the build of this tree): $line"; continue ;;
    "cd ..") continue ;;
  esac
  case $line in
    *jpsync-run*)
      if sanitized || foreign; then echo "SKIP line (no preload module here): $line"; continue; fi ;;
  esac
  n=$((n + 1))
  # shellcheck disable=SC2016
  (cd "$top_builddir" && timeout 300 sh -c "$line") < /dev/null > "$tmp/out" 2> "$tmp/err"
  rc=$?
  if [ $rc -ne 0 ]; then
    bad "Quick start line exits $rc: $line"; cat "$tmp/out" "$tmp/err"
  elif case $line in *jpsync-run*--stats*) true ;; *) false ;; esac &&
       ! grep -q '^jpsync allocator statistics' "$tmp/err"; then
    bad "Quick start: no allocator statistics on stderr from: $line"; cat "$tmp/err"
  else
    echo "ok: Quick start: $line"
  fi
done < "$tmp/quick"
[ $n -gt 0 ] || sanitized || foreign || bad "Quick start: no line was run"

# ---- A C example
block "A C example" 1 > "$tmp/example.c"
block "A C example" 2 > "$tmp/build"
if ! cmp -s "$tmp/example.c" "$top_srcdir/examples/hello.c"; then
  bad "README.md's C example is not examples/hello.c:"
  diff -u "$top_srcdir/examples/hello.c" "$tmp/example.c"
fi
[ -s "$tmp/build" ] || bad "no build commands after the C example in README.md"

dest=$tmp/dest
make -s -C "$top_builddir" install DESTDIR="$dest" > "$tmp/install.log" 2>&1 ||
  { echo "FAIL: make install"; cat "$tmp/install.log"; exit 1; }
libdir="$dest$(pkg-config --variable=libdir "$top_builddir/jpsync.pc")"
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_LIBDIR="$libdir/pkgconfig" \
  PKG_CONFIG_SYSROOT_DIR="$dest"
# A --prefix install's library is found through LD_LIBRARY_PATH (README,
# "From the source tree"); here the prefix lies under DESTDIR.
export LD_LIBRARY_PATH="$libdir"
# Under an emulator the program's own library path is JP_TARGET_LIBPATH
# (tests/target-exec.sh): the host's loader must not see a foreign one.
JP_TARGET_LIBPATH="$libdir${JP_TARGET_LIBPATH:+:$JP_TARGET_LIBPATH}"
export JP_TARGET_LIBPATH
mkdir -p "$tmp/src/examples"
cp "$top_srcdir/examples/hello.c" "$tmp/src/examples/"
# The README's `cc` is the configured compiler, with the build's sanitizers.
# shellcheck disable=SC2086
cc() { $CC ${SANITIZER_CFLAGS:-} "$@"; }
while IFS= read -r line; do
  [ -n "$line" ] || continue
  cmd=${line%%#*} want=
  case $line in *"#"*) want=${line#*#}; want=${want# } ;; esac
  case $cmd in ./*) cmd="$tx $cmd" ;; esac
  out=$(cd "$tmp/src" && eval "$cmd" < /dev/null 2> "$tmp/err")
  rc=$?
  if [ $rc -ne 0 ]; then
    bad "C example line exits $rc: $line"; cat "$tmp/err"
  elif [ -n "$want" ] && [ "$out" != "$want" ]; then
    bad "C example: '$line' printed '$out'"
  else
    echo "ok: C example: $line"
  fi
done < "$tmp/build"
exit $fail
