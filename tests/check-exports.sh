#!/bin/sh
# The shared library exports exactly the symbols of lib/libjpsync.map, each
# at its version node, under the SONAME libjpsync.so.1; and
# debian/libjpsync1.symbols lists the same set (and, where dpkg-dev is
# installed, dpkg-gensymbols -c4 agrees).
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}" "${READELF:=readelf}"
so="$top_builddir/lib/.libs/libjpsync.so.1"
map="$top_srcdir/lib/libjpsync.map"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0

[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }

soname=$($READELF -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" = libjpsync.so.1 ]; then
  echo "ok: SONAME $soname"
else
  echo "FAIL: SONAME is '$soname', expected libjpsync.so.1"; fail=1
fi

# name@version for every symbol in the map, node by node.
sh "$top_srcdir/tests/map-symbols.sh" "$map" > "$tmp/map"

# Defined, global, versioned dynamic symbols of the library.
$READELF --dyn-syms -W "$so" | awk '
  $1 ~ /^[0-9]+:$/ && $7 != "UND" && $7 != "ABS" && ($5 == "GLOBAL" || $5 == "WEAK") {
    name = $8; sub(/@@/, "@", name); print name
  }' | sort -u > "$tmp/exported"

if diff -u "$tmp/map" "$tmp/exported" > "$tmp/diff"; then
  echo "ok: $(wc -l < "$tmp/map") exported symbols match lib/libjpsync.map"
else
  echo "FAIL: exported symbols differ from lib/libjpsync.map (- map, + library):"
  cat "$tmp/diff"; fail=1
fi
if grep -v '@JPSYNC_1\.' "$tmp/exported" > "$tmp/unversioned"; then
  echo "FAIL: exported without a JPSYNC_ version:"; cat "$tmp/unversioned"; fail=1
fi

sym="$top_srcdir/debian/libjpsync1.symbols"
if [ -f "$sym" ]; then
  grep '^ ' "$sym" | awk '{print $1}' | grep -v '^JPSYNC_[0-9.]*@JPSYNC_' | sort -u > "$tmp/debian"
  if diff -u "$tmp/map" "$tmp/debian" > "$tmp/ddiff"; then
    echo "ok: debian/libjpsync1.symbols matches"
  else
    echo "FAIL: debian/libjpsync1.symbols differs (- map, + symbols file):"
    cat "$tmp/ddiff"; fail=1
  fi
fi

# What the package build does with the symbols file (dh_makeshlibs -- -c4,
# see debian/rules): any difference, a new symbol included, fails.
if [ -f "$sym" ] && command -v dpkg-gensymbols >/dev/null 2>&1; then
  mkdir -p "$tmp/pkg/usr/lib"
  cp "$so" "$tmp/pkg/usr/lib/libjpsync.so.1"
  ver=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")
  if (cd "$tmp" && dpkg-gensymbols -v"${ver:-0}" -plibjpsync1 -Ppkg -I"$sym" \
        -O"$tmp/gen.symbols" -c4) > "$tmp/gensym" 2>&1; then
    echo "ok: dpkg-gensymbols -c4 accepts debian/libjpsync1.symbols"
  else
    echo "FAIL: dpkg-gensymbols -c4 rejects debian/libjpsync1.symbols:"
    cat "$tmp/gensym"; fail=1
  fi
fi
exit $fail
