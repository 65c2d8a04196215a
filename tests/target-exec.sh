#!/bin/sh
# target-exec.sh [NAME=VALUE]... PROGRAM [ARG]... - run a program built for
# the host of this (cross) build.  Natively it is env(1).  Under emulation
# (JP_EMULATOR set by configure: qemu-user, no binfmt_misc) it runs
#   $JP_EMULATOR -E LD_LIBRARY_PATH=... -E NAME=VALUE... PROGRAM ARG...
# where LD_LIBRARY_PATH holds the sysroot's C library and the foreign
# libraries ($JP_TARGET_LIBPATH), and PROGRAM, when it is a libtool
# wrapper script, is the real binary in its .libs (with the build tree's
# lib/.libs in front).  The variables go to the
# emulated program with -E, not through the environment, so that the host's
# dynamic loader never sees a foreign LD_PRELOAD or LD_LIBRARY_PATH.  It is
# make check's LOG_COMPILER in an emulated build, and the scripts under
# tests/ run their programs through it ($tx, see preload-common.sh).
set -u
if [ -z "${JP_EMULATOR:-}" ]; then
  exec env "$@"
fi
: "${top_builddir:=.}"
b=$(cd "$top_builddir" && pwd)
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
opts="-E $(q "JP_TEST_EMULATOR=$JP_EMULATOR")"
while [ $# -gt 0 ]; do
  case $1 in
    [A-Za-z_]*=*) opts="$opts -E $(q "$1")"; shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: target-exec.sh [NAME=VALUE]... PROGRAM [ARG]..." >&2; exit 2; }
prog=$1; shift
case $prog in
  */*) ;;
  *) name=$prog
     prog=$(command -v "$name") || { echo "target-exec.sh: $name: not found" >&2; exit 127; } ;;
esac
# A libtool wrapper script: run the real program, which finds the
# uninstalled library through LD_LIBRARY_PATH, as the wrapper would set it.
# Other programs (linked -no-install, the module, a program linked with
# -rpath) find theirs through their run path.
libpath=${JP_TARGET_LIBPATH:-}
if [ -f "$prog" ] && grep -q 'libtool wrapper' "$prog" 2>/dev/null; then
  prog="$(dirname "$prog")/.libs/$(basename "$prog")"
  libpath="$b/lib/.libs:$libpath"
fi
opts="-E $(q "LD_LIBRARY_PATH=$libpath") $opts"
eval "exec $JP_EMULATOR $opts \"\$prog\" \"\$@\""
