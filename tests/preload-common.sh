# preload-common.sh - sourced by the tests that run programs under the
# preload module (tests/test-preload-*.sh, tests/test-jpsync-run*.sh).
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
