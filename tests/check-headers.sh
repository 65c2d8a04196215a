#!/bin/sh
# Every public header compiles on its own, as C11 and as C++ (C++17 and
# C++20), with -pedantic -Wall -Wextra -Werror: a C++ program includes the
# C headers directly (and the C++ headers do).  The C++ headers,
# <jpsync.hpp> and each <jpsync/*.hpp> (which a program may include
# alone), are checked as C++17 and C++20 only.  Each header is compiled
# alone and after all the others, so that none relies on another's includes.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}" "${CXX:=c++}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
inc="-I$top_srcdir/include -I$top_builddir/include"
fail=0 n=0
headers="jpsync.h"
for h in "$top_srcdir"/include/jpsync/*.h "$top_builddir"/include/jpsync/version.h; do
  [ -f "$h" ] || continue
  headers="$headers jpsync/$(basename "$h")"
done
headers=$(printf '%s\n' $headers | sort -u)
have_cxx=yes
echo 'int main() { return 0; }' > "$tmp/t.cc"
# shellcheck disable=SC2086
$CXX -o "$tmp/t" "$tmp/t.cc" 2>/dev/null || have_cxx=no
for h in $headers; do
  printf '#include <%s>\n#include <%s>\nint jp_header_check_%s;\n' "$h" "$h" "$n" > "$tmp/one.c"
  cp "$tmp/one.c" "$tmp/one.cc"
  # shellcheck disable=SC2086
  if ! $CC -std=c11 -pedantic -Wall -Wextra -Werror $inc -c -o "$tmp/o.o" "$tmp/one.c" 2> "$tmp/err"; then
    echo "FAIL: <$h> as C11 -pedantic:"; cat "$tmp/err"; fail=1
  fi
  if [ $have_cxx = yes ]; then
    for std in c++17 c++20; do
      # shellcheck disable=SC2086
      if ! $CXX -std=$std -pedantic -Wall -Wextra -Werror $inc -c -o "$tmp/o.o" "$tmp/one.cc" 2> "$tmp/err"; then
        echo "FAIL: <$h> as $std -pedantic:"; cat "$tmp/err"; fail=1
      fi
    done
  fi
  n=$((n + 1))
done
# The C++ headers, C++ only, each alone.
hpp="jpsync.hpp"
for h in "$top_srcdir"/include/jpsync/*.hpp; do
  [ -f "$h" ] && hpp="$hpp jpsync/$(basename "$h")"
done
if [ $have_cxx = yes ]; then
  for h in $hpp; do
    printf '#include <%s>\n#include <%s>\nint jp_header_check_%s;\n' "$h" "$h" "$n" > "$tmp/hpp.cc"
    for std in c++17 c++20; do
      # shellcheck disable=SC2086
      if ! $CXX -std=$std -pedantic -Wall -Wextra -Werror $inc -c -o "$tmp/o.o" "$tmp/hpp.cc" 2> "$tmp/err"; then
        echo "FAIL: <$h> as $std -pedantic:"; cat "$tmp/err"; fail=1
      fi
    done
    n=$((n + 1))
  done
fi
# All at once, in reverse order (the C++ headers too).
for h in $headers $hpp; do echo "#include <$h>"; done | sort -r > "$tmp/all.cc"
echo 'int main() { return 0; }' >> "$tmp/all.cc"
if [ $have_cxx = yes ]; then
  # shellcheck disable=SC2086
  $CXX -std=c++17 -pedantic -Wall -Wextra -Werror $inc -c -o "$tmp/o.o" "$tmp/all.cc" 2> "$tmp/err" ||
    { echo "FAIL: all headers together as C++17:"; cat "$tmp/err"; fail=1; }
else
  echo "note: no working C++ compiler ($CXX): the C++ part is skipped"
fi
[ $fail -eq 0 ] && echo "ok: $n public headers compile alone with -pedantic (C headers as C11 and C++17/C++20, C++ headers as C++17/C++20)"
exit $fail
