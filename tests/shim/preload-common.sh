# preload-common.sh - sourced by the tests that run programs under the
# preload module (tests/test-preload-*.sh, tests/shim/test-jpsync-run*.sh).
#
# skip_if_no_preload: exit 77 (SKIP) under valgrind and in sanitizer builds,
# where a replaced malloc cannot work: valgrind and the sanitizer runtimes
# replace malloc themselves (and an ASan runtime must come first in
# LD_PRELOAD).  Also when timeout(1) is missing: every run here has one, so
# that a deadlock fails the test instead of hanging it.
: "${top_srcdir:=.}" "${top_builddir:=.}"
top_builddir=$(cd "$top_builddir" && pwd)
run="$top_builddir/shim/jpsync-run"
module="$top_builddir/shim/.libs/libjpsync-preload.so"

fail() { echo "FAIL: $*"; exit 1; }

# tx [NAME=VALUE]... PROGRAM [ARG]...: start a program of the built
# architecture: env(1) natively, tests/target-exec.sh (qemu-user) in an
# emulated cross build.
if [ -n "${JP_EMULATOR:-}" ]; then
  tx="sh $top_srcdir/tests/target-exec.sh"
else
  tx=env
fi

# foreign: the build machine's own programs (sh, cat, perl) are of another
# architecture than this build ($JP_HOST), so the module cannot be loaded
# into them, and an emulated program cannot exec another (no binfmt_misc).
foreign() { [ "${JP_FOREIGN:-no}" = yes ]; }
foreign_why="the build machine's programs are not ${JP_HOST:-of this build}'s: the module cannot be preloaded into them"

# $run_module [NAME=VALUE]... PROGRAM [ARG]...: PROGRAM (of the built
# architecture) on the module, as jpsync-run starts it (tests/run-module.sh).
run_module="sh $top_srcdir/tests/run-module.sh"

sanitized() {
  case "${SANITIZERS:-no}" in no|"") return 1 ;; *) return 0 ;; esac
}

skip_if_no_preload() {
  if [ -n "${VALGRIND:-}" ]; then
    echo "SKIP: valgrind replaces malloc itself; not a valgrind check"; exit 77
  fi
  if sanitized; then
    echo "SKIP: sanitizer build ($SANITIZERS): its runtime replaces malloc"; exit 77
  fi
  command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout(1)"; exit 77; }
  [ -x "$run" ] || fail "$run not built"
  [ -f "$module" ] || fail "$module not built"
}

# A private temporary directory, removed on exit.
make_tmp() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/jpsync-shim.XXXXXX") || fail "mktemp"
  trap 'rm -rf "$tmp"' EXIT
}
