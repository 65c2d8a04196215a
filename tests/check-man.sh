#!/bin/sh
# Every page lints clean under mandoc -Tlint, every public function (every
# name in lib/libjpsync.map) has a page or a .so link in man/man3, and the
# EXAMPLES of every page compile against the headers.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
if [ -z "${MANDOC:-}" ] || ! command -v "$MANDOC" >/dev/null 2>&1; then
  echo "FAIL: mandoc not found (install mandoc)"; exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
cd "$top_srcdir/man"
for page in man*/*.[0-9]; do
  if head -n1 "$page" | grep -q '^\.so '; then
    target=$(head -n1 "$page" | sed 's/^\.so //')
    [ -f "$target" ] || { echo "FAIL: $page links to missing $target"; fail=1; }
    continue
  fi
  if ! "$MANDOC" -Tlint -W warning "$page" > "$tmp/lint" 2>&1 || [ -s "$tmp/lint" ]; then
    echo "FAIL: mandoc -Tlint $page:"; cat "$tmp/lint"; fail=1
  fi
done
[ -f ../tests/map-symbols.sh ] || { echo "FAIL: tests/map-symbols.sh missing"; exit 1; }
names=$(sh ../tests/map-symbols.sh ../lib/libjpsync.map | sed 's/@.*//')
for n in $names; do
  [ -f "man3/$n.3" ] || { echo "FAIL: no page man3/$n.3 for public function $n"; fail=1; }
done

# EXAMPLES: the text between ".Sh EXAMPLES" and the next .Sh, inside .Bd
# -literal; a page whose example is a fragment marks it with a comment line
# ".\\\" example: fragment" and is skipped.
i=0
for page in man*/*.[0-9]; do
  head -n1 "$page" | grep -q '^\.so ' && continue
  grep -q '^\.\\" example: fragment' "$page" && continue
  grep -q '^\.Sh EXAMPLES' "$page" || continue
  i=$((i + 1))
  perl -ne '
    if (/^\.Sh /) { $in = /^\.Sh EXAMPLES/ ? 1 : 0; next }
    next unless $in;
    if (/^\.Bd -literal/) { $lit = 1; next }
    if (/^\.Ed/) { $lit = 0; next }
    next unless $lit;
    s/\\e/\\/g; s/\\&//g; s/\\\(aq/\x27/g; s/\\-/-/g; s/\\\(dq/"/g;
    print' "$page" > "$tmp/ex$i.c"
  grep -q 'main *(' "$tmp/ex$i.c" || continue
  if ! $CC ${SANITIZER_CFLAGS:-} -std=c11 -D_GNU_SOURCE -Wall -Werror -c \
       -I"$top_srcdir/include" -I"$top_builddir/include" \
       -o "$tmp/ex$i.o" "$tmp/ex$i.c" 2> "$tmp/ex$i.err"; then
    echo "FAIL: the EXAMPLES of $page do not compile:"; cat "$tmp/ex$i.err"; fail=1
  else
    echo "ok: EXAMPLES of $page compile"
  fi
done
[ $fail -eq 0 ] && echo "ok: all pages lint clean and every public name has a page"
exit $fail
