#!/bin/sh
# bump-version.sh - after the one-line change of a version number at the
# top of configure.ac (jpsync_major, _minor or _patch), write the entries
# that name it: NEWS's heading "since release OLD (unreleased)" becomes
# "in release NEW (unreleased)" (date it at release time), and
# debian/changelog and rpm/jpsync.spec.in get an entry NEW-1 on top.
# make check (tests/check-version.sh) fails until they agree.  Run from the
# top of the tree.
set -eu
m() { sed -n "s/^m4_define(\[jpsync_$1\], \[\([0-9]*\)\])/\1/p" configure.ac; }
v="$(m major).$(m minor).$(m patch)"
case $v in *..*|.*|*.) echo "bump-version: cannot read the version from configure.ac" >&2; exit 1 ;; esac
who="libjpsync developers <libjpsync@example.org>"
if ! grep -q "^jpsync ($v-" debian/changelog; then
  { printf 'jpsync (%s-1) unstable; urgency=medium\n\n  * New upstream release %s (see NEWS).\n\n -- %s  %s\n\n' \
      "$v" "$v" "$who" "$(LC_ALL=C date -R)"; cat debian/changelog; } > debian/changelog.new
  mv debian/changelog.new debian/changelog
fi
if ! sed -n '/^%changelog/{n;p;q}' rpm/jpsync.spec.in | grep -q " - $v-"; then
  awk -v e="* $(LC_ALL=C date '+%a %b %d %Y') $who - $v-1" -v n="- New upstream release $v (see NEWS)." \
    '{print} /^%changelog$/ {print e; print n; print ""}' rpm/jpsync.spec.in > rpm/jpsync.spec.in.new
  mv rpm/jpsync.spec.in.new rpm/jpsync.spec.in
fi
sed -i "0,/^\* Noteworthy changes since release [0-9.]* (unreleased)\$/s//* Noteworthy changes in release $v (unreleased)/" NEWS
# The override for JPSYNC_1.1 symbols listed at a version above the
# package's (debian/libjpsync1.lintian-overrides) has no object once the
# version reaches 1.1.0.
if [ "$(m major)" -gt 1 ] || [ "$(m minor)" -ge 1 ]; then
  sed -i '/^# debian\/libjpsync1.symbols lists the JPSYNC_1.1/,/symbols-file-contains-current-version-with-debian-revision/d' \
    debian/libjpsync1.lintian-overrides
fi
echo "bump-version: NEWS, debian/changelog and rpm/jpsync.spec.in name $v"
