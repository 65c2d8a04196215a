#!/bin/sh
# The race detectors understand jp_mutex and jp_cond: a deliberately racy
# counter (tests/race-counter.c) is reported by helgrind, drd and
# ThreadSanitizer, and the same program with the counter under a jp_mutex
# is reported by none of them.  The programs are built here from the
# library's sources, so the check does not depend on how this tree was
# configured: plain (valgrind client requests compiled in) for valgrind,
# -fsanitize=thread for TSan.  Exit 77 when no detector is available.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: runs the detectors itself"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
srcs=""
for f in mutex.c cond.c wait.c park.c lockdep.c os.c options.c; do srcs="$srcs $top_srcdir/lib/$f"; done
inc="-I$top_builddir -I$top_srcdir/include -I$top_builddir/include -I$top_srcdir/lib"
prog="$top_srcdir/tests/race-counter.c"
fail=0 ran=0

build() { # name extra-flags...
  name=$1; shift
  # shellcheck disable=SC2086
  if ! $CC -std=gnu11 -O1 -g -pthread "$@" $inc -o "$tmp/$name" "$prog" $srcs 2> "$tmp/$name.cc"; then
    echo "FAIL: cannot build $name:"; cat "$tmp/$name.cc"; fail=1; return 1
  fi
}

expect() { # racy|clean tool log rc pattern
  want=$1 tool=$2 log=$3 rc=$4 pat=$5
  if [ "$want" = racy ]; then
    if [ "$rc" -ne 0 ] && grep -q "$pat" "$log"; then
      echo "ok: $tool reports the racy counter"
    else
      echo "FAIL: $tool did not report the racy counter (exit $rc)"; tail -n 20 "$log"; fail=1
    fi
  else
    if [ "$rc" -eq 0 ] && ! grep -q "$pat" "$log"; then
      echo "ok: $tool is silent on the jp_mutex counter"
    else
      echo "FAIL: $tool reports the correct jp_mutex program (exit $rc)"; tail -n 40 "$log"; fail=1
    fi
  fi
}

# ---- helgrind and drd ---------------------------------------------------
case "${SANITIZERS:-no}" in
  no|"") san=no ;;
  *) san=yes ;;
esac
if [ "$san" = yes ]; then
  echo "note: sanitizer build, valgrind part skipped"
elif ! command -v valgrind >/dev/null 2>&1; then
  echo "note: valgrind not found, helgrind and drd part skipped"
elif [ ! -f /usr/include/valgrind/helgrind.h ] && ! grep -q 'HAVE_VALGRIND_HELGRIND_H 1' "$top_builddir/config.h"; then
  echo "note: valgrind headers missing, helgrind and drd part skipped"
else
  # -gdwarf-4: valgrind 3.19 cannot read the DWARF 5 that clang writes by default.
  if build racy-vg -gdwarf-4 && build locked-vg -gdwarf-4 -DLOCKED; then
    for tool in helgrind drd; do
      valgrind -q --tool=$tool --error-exitcode=3 "$tmp/racy-vg" > "$tmp/r.$tool" 2>&1; rc=$?
      expect racy $tool "$tmp/r.$tool" $rc 'data race\|Conflicting'
      valgrind -q --tool=$tool --error-exitcode=3 "$tmp/locked-vg" > "$tmp/l.$tool" 2>&1; rc=$?
      expect clean $tool "$tmp/l.$tool" $rc 'data race\|Conflicting'
      ran=1
    done
  fi
fi

# ---- ThreadSanitizer ----------------------------------------------------
echo 'int main(void) { return 0; }' > "$tmp/t.c"
if $CC -fsanitize=thread -o "$tmp/t" "$tmp/t.c" 2>/dev/null && "$tmp/t" 2>/dev/null; then
  if build racy-tsan -fsanitize=thread && build locked-tsan -fsanitize=thread -DLOCKED; then
    TSAN_OPTIONS="exitcode=66 halt_on_error=0" "$tmp/racy-tsan" > "$tmp/r.tsan" 2>&1; rc=$?
    expect racy ThreadSanitizer "$tmp/r.tsan" $rc 'ThreadSanitizer: data race'
    TSAN_OPTIONS="exitcode=66" "$tmp/locked-tsan" > "$tmp/l.tsan" 2>&1; rc=$?
    expect clean ThreadSanitizer "$tmp/l.tsan" $rc 'WARNING: ThreadSanitizer'
    ran=1
  fi
else
  echo "note: $CC cannot build and run -fsanitize=thread programs, TSan part skipped"
fi

[ $fail -ne 0 ] && exit 1
[ $ran -eq 0 ] && { echo "SKIP: no race detector available"; exit 77; }
exit 0
