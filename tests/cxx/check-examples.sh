#!/bin/sh
# The C++ examples (examples/*.cc: SyncTools' documented examples ported
# one-to-one to <jpsync.hpp>) build with every C++ compiler found (the
# configured one, g++ and clang++) at -std=c++17 and -std=c++20 with
# -Wall -Wextra -pedantic -Werror, run against the built library, and print
# what they must (tests/cxx/examples-check.cc reads each output; an example
# that fails or crashes fails the check).  Exit 77 without a C++ compiler.
# In a cross build only the configured (cross) compiler builds them, and
# they and the checker run through tests/target-exec.sh ($tx).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CXX:=c++}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
. "$top_srcdir/tests/shim/preload-common.sh"	# tx, foreign; top_builddir absolute
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
libdir=$top_builddir/lib/.libs
inc="-I$top_srcdir/include -I$top_builddir/include"
examples="producer-consumer logger mutex-counter object-pool thread-cached-pool sample-stream"

# The compilers: the configured one, then g++ and clang++ if they differ.
# A sanitizer build links only with the configured compiler (the runtimes
# of two compilers do not mix), and so does a cross build (g++ and clang++
# build for this machine).
compilers="" seen=""
for c in "$CXX" g++ clang++; do
  command -v "$c" > /dev/null 2>&1 || continue
  echo 'int main() { return 0; }' > "$tmp/t.cc"
  # shellcheck disable=SC2086
  "$c" -std=c++17 ${SANITIZER_CFLAGS:-} -o "$tmp/t" "$tmp/t.cc" 2> /dev/null || continue
  v=$("$c" --version 2>/dev/null | head -n1)
  case " $seen " in *" $v "*) continue ;; esac
  seen="$seen $v"
  compilers="$compilers $c"
  if [ -n "${SANITIZER_CFLAGS:-}" ] || foreign; then break; fi
done
[ -n "$compilers" ] || { echo "SKIP: no working C++ compiler"; exit 77; }

# The output checker, built once.
# shellcheck disable=SC2086
set -- $compilers
if ! "$1" -std=c++17 -O1 -o "$tmp/examples-check" "$top_srcdir/tests/cxx/examples-check.cc" \
     2> "$tmp/check.cc"; then
  echo "FAIL: cannot build tests/cxx/examples-check.cc:"; cat "$tmp/check.cc"; exit 1
fi

fail=0 n=0
for c in $compilers; do
  for std in c++17 c++20; do
    for e in $examples; do
      bin=$tmp/$e
      # shellcheck disable=SC2086
      if ! "$c" -std=$std -O2 -Wall -Wextra -pedantic -Werror ${SANITIZER_CFLAGS:-} $inc \
           -o "$bin" "$top_srcdir/examples/$e.cc" -L"$libdir" -Wl,-rpath,"$libdir" -ljpsync -pthread \
           2> "$tmp/cc"; then
        echo "FAIL: $c -std=$std examples/$e.cc does not build:"; cat "$tmp/cc"; fail=1; continue
      fi
      # The example's exit status, through the pipe into the checker.
      # shellcheck disable=SC2154
      { $tx "$bin" 2> "$tmp/err"; echo $? > "$tmp/rc"; } |
        $tx "$tmp/examples-check" "$e" 2> "$tmp/why"
      crc=$? rc=$(cat "$tmp/rc")
      if [ "$rc" -ne 0 ] || [ "$crc" -ne 0 ]; then
        echo "FAIL: $c -std=$std $e: exit $rc; $(cat "$tmp/why")"; head -n 5 "$tmp/err"; fail=1
      else
        n=$((n + 1))
      fi
    done
  done
done
[ $fail -eq 0 ] && echo "ok: $n example runs ($(echo $examples | wc -w) examples, compilers:$compilers, C++17 and C++20) print what they must"
exit $fail
