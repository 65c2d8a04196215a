#!/bin/sh
# One version number: configure.ac's AC_INIT (jpsync_major/minor/patch)
# is the only place it is written; NEWS, debian/changelog and the RPM
# spec's %changelog must name the same one.  After the one-line bump in
# configure.ac, scripts/bump-version.sh writes the entries this checks.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
v=$(sed -n 's/^Version: *//p' "$top_builddir/jpsync.pc")
[ -n "$v" ] || { echo "FAIL: no Version in jpsync.pc"; exit 1; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }
re=$(printf '%s' "$v" | sed 's/\./\\./g')

news=$(grep -m1 '^\* Noteworthy changes' "$top_srcdir/NEWS")
case $news in
  "* Noteworthy changes in release $v ("*")"|"* Noteworthy changes since release $v (unreleased)") ;;
  *) bad "NEWS begins with '$news', not 'in release $v (DATE)' or 'since release $v (unreleased)'" ;;
esac
if [ -f "$top_srcdir/debian/changelog" ]; then
  deb=$(sed -n '1p' "$top_srcdir/debian/changelog")
  echo "$deb" | grep -Eq "^jpsync \($re-[0-9]+\) " ||
    bad "debian/changelog begins with '$deb', not jpsync ($v-N)"
else
  echo "note: no debian/ here (a release tarball carries none)"
fi
rpm=$(sed -n '/^%changelog/{n;p;q}' "$top_srcdir/rpm/jpsync.spec.in")
echo "$rpm" | grep -Eq " - $re-[0-9]+\$" ||
  bad "the spec's %changelog begins with '$rpm', not ... - $v-N"
hdr=$(sed -n 's/^#define JPSYNC_VERSION_STRING "\(.*\)"$/\1/p' "$top_builddir/include/jpsync/version.h")
[ "$hdr" = "$v" ] || bad "jpsync/version.h says '$hdr'"
if [ $fail -ne 0 ]; then
  echo "      (configure.ac says $v; scripts/bump-version.sh writes the entries)"
  exit 1
fi
echo "ok: NEWS, debian/changelog, the spec and <jpsync/version.h> all say $v"
