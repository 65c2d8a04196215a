#!/bin/sh
# <jpsync.hpp> costs nothing over the C call: tests/cxx/cxx-cost runs the same
# work through the C API and through the C++ wrapper, and callgrind counts
# the instructions of each (tests/bench/callgrind-per-op.sh).  A
# jpsync::mutex lock+unlock must cost exactly what jp_mutex_lock+unlock
# does.  The pool and queue rows are printed: object_pool<T>::acquire
# checks for exhaustion and constructs T (the C side does the same), and
# try_pop's std::optional<T> is a flag beside the value.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: runs callgrind itself"; exit 77; fi
case "${SANITIZERS:-no}" in no|"") ;; *) echo "SKIP: a sanitizer build counts its instrumentation"; exit 77 ;; esac
command -v valgrind > /dev/null 2>&1 || { echo "SKIP: valgrind not found"; exit 77; }
if [ -n "${JP_EMULATOR:-}" ]; then echo "SKIP: callgrind cannot run ${JP_HOST:-this build}'s programs under the emulator"; exit 77; fi
prog=$top_builddir/tests/cxx/cxx-cost
[ -x "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
fail=0
for w in mutex pool queue; do
  c=$(sh "$top_srcdir/tests/bench/callgrind-per-op.sh" 20000 "$prog" c $w) || fail=1
  x=$(sh "$top_srcdir/tests/bench/callgrind-per-op.sh" 20000 "$prog" cxx $w) || fail=1
  echo "$w: C $c, C++ $x instructions an iteration"
  if [ $w = mutex ] && [ "$c" != "$x" ]; then
    echo "FAIL: jpsync::mutex costs more than jp_mutex"; fail=1
  fi
done
[ $fail -eq 0 ] && echo "ok: jpsync::mutex lock+unlock costs what jp_mutex_lock+unlock does"
exit $fail
