#!/bin/bash
# packaging (issue 6): build the Debian packages from a scratch copy of the
# tree, lint them, install them, run the autopkgtest scripts against them,
# check that the man pages render from them, remove them; then build the
# RPMs from the `make dist` tarball and check where their files land.
# Run by .ci/run from the repository root after the standard checks, with
# build/ configured and built (another build folder: JPSYNC_BUILD_DIR).
set -euo pipefail
top=$PWD
builddir=${JPSYNC_BUILD_DIR:-build}
start=$(date +%s)
say() { printf -- '--- packaging: %s (%ds)\n' "$*" $(( $(date +%s) - start )); }
die() { echo "FAIL: $*" >&2; exit 1; }

# The jpsync binary package carries jpsync-run and the preload module; until
# that component (mk/shim.am) is merged there is nothing to put in it.
if ! grep -q 'jpsync-run' mk/shim.am; then
  echo "SKIP: jpsync-run (mk/shim.am) is not merged yet; the jpsync package needs it"
  exit 0
fi

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
tmp=$(mktemp -d /tmp/jpsync-packaging.XXXXXX)
installed=
cleanup() {
  if [ -n "$installed" ]; then
    # shellcheck disable=SC2086
    $SUDO apt-get purge -y -q $installed >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------
# Debian.  The scratch copy holds what git tracks plus untracked files that
# are not ignored, as in the working tree: the repository is not touched.
say "copy the tree to $tmp/src"
mkdir "$tmp/src"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -x -C "$tmp/src"

# nocheck: make check already ran in .ci/run's earlier steps on this same
# tree; running it again inside dh_auto_test would only cost minutes.  (A
# plain `dpkg-buildpackage -us -uc -b` runs it.)
say "dpkg-buildpackage -us -uc -b (DEB_BUILD_OPTIONS=nocheck)"
if ! (cd "$tmp/src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
        dpkg-buildpackage -us -uc -b) > "$tmp/deb-build.log" 2>&1; then
  tail -n 80 "$tmp/deb-build.log"; die "dpkg-buildpackage"
fi
changes=$(ls "$tmp"/jpsync_*.changes)
debs=$(sed -n '/^Files:/,/^[^ ]/s/^ .* \([^ ]*\.deb\)$/\1/p' "$changes")
echo "$debs"

say "lintian -I --pedantic (fails on errors and warnings)"
st=0
lintian -I --pedantic --fail-on error,warning "$changes" > "$tmp/lintian.log" 2>&1 || st=$?
grep -v 'running with root privileges' "$tmp/lintian.log" || true
[ $st -eq 0 ] || die "lintian reports errors or warnings (exit $st)"

# What each package must contain (the .install files use wildcards; this
# checks that they matched).
# (Lists go through files: grep -q closing a pipe early would make
# pipefail report the writer's SIGPIPE.)
for p in libjpsync1 libjpsync-dev jpsync; do
  dpkg-deb -c "$tmp/$p"_*.deb | awk '{print $6}' | sed 's|^\./|/|' > "$tmp/$p.list"
done
contains() { # package regex
  grep -Eq "$2" "$tmp/$1.list" || die "$1 lacks $2"
}
ma='/usr/lib/[a-z0-9_]+-linux-[a-z0-9_]+'
contains libjpsync1 "^$ma/libjpsync\.so\.1$"
contains libjpsync1 "^$ma/libjpsync\.so\.1\.[0-9.]+$"
contains libjpsync-dev "^$ma/libjpsync\.so$"
contains libjpsync-dev "^$ma/libjpsync\.a$"
contains libjpsync-dev "^$ma/pkgconfig/jpsync\.pc$"
contains libjpsync-dev '^/usr/include/jpsync\.h$'
for h in include/jpsync/*.h include/jpsync/version.h; do
  contains libjpsync-dev "^/usr/$h$"
done
contains jpsync '^/usr/bin/jpsync-run$'
contains jpsync "^$ma/jpsync/libjpsync-preload\.so$"
if grep -E '\.la$' "$tmp"/*.list; then
  die "a libtool archive is packaged"
fi
echo "ok: the packages hold what their .install files name"

say "apt-get install ./*.deb"
pkgs=$(sed -n 's/^Binary: //p' "$changes")
# shellcheck disable=SC2086
(cd "$tmp" && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./*.deb) \
  > "$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log"; die "apt-get install"; }
installed=$pkgs

say "autopkgtest scripts (debian/tests), run directly"
# shellcheck disable=SC2013 # a Tests: field is a list of words
for t in $(sed -n 's/^Tests: *//p' debian/tests/control); do
  echo "== debian/tests/$t"
  mkdir "$tmp/ap-$t"
  (cd "$tmp" && AUTOPKGTEST_TMP="$tmp/ap-$t" "$top/debian/tests/$t") ||
    die "autopkgtest $t"
done

say "man pages render from the installed packages"
# A minimal image (docker's debian:12) tells dpkg not to install anything
# under /usr/share/man; there, check the pages the packages carry, unpacked
# from the .debs, and say so.
manpath=
if [ ! -e /usr/share/man/man7/jpsync.7.gz ] &&
   grep -Eqs '^path-exclude[= ]/usr/share/man' /etc/dpkg/dpkg.cfg.d/*; then
  echo "note: dpkg excludes /usr/share/man on this machine; checking the pages in the .debs"
  mkdir "$tmp/root"
  for p in libjpsync-dev jpsync; do dpkg-deb -x "$tmp/$p"_*.deb "$tmp/root"; done
  manpath=$tmp/root/usr/share/man
fi
man_() {
  if [ -n "$manpath" ]; then MANPATH=$manpath man "$@"; else env -u MANPATH man "$@"; fi
}
# Every page of the source tree, and the four the issue names, as soon as
# the component that writes each one is merged.
n=0
for page in man/man*/*.[0-9]; do
  n=$((n + 1))
  name=$(basename "$page"); sec=${name##*.}; name=${name%.*}
  path=$(man_ -w "$sec" "$name" 2>/dev/null) || die "man -w $sec $name: no page installed"
  if [ -z "$manpath" ]; then
    dpkg -S "$path" >/dev/null 2>&1 || die "man $sec $name is $path, not from a package"
  fi
  MANWIDTH=80 man_ -P cat "$sec" "$name" > "$tmp/page" 2>"$tmp/page.err" ||
    { cat "$tmp/page.err"; die "man $sec $name does not render"; }
  grep -q NAME "$tmp/page" || die "man $sec $name rendered without a NAME section"
done
echo "ok: the $n pages of man/ render from the packages"
for req in "3 jp_alloc" "3 jp_mpmc_push" "1 jpsync-run" "7 jpsync"; do
  # shellcheck disable=SC2086 # "3 jp_alloc": section and name
  set -- $req
  if [ -f "man/man$1/$2.$1" ]; then
    man_ -P cat "$1" "$2" >/dev/null 2>&1 || die "man $req"
    echo "ok: man $req"
  else
    echo "note: man/man$1/$2.$1 not in the tree yet (its component is not merged)"
  fi
done

say "apt-get purge"
# shellcheck disable=SC2086
$SUDO apt-get purge -y -q $installed > "$tmp/purge.log" 2>&1 ||
  { cat "$tmp/purge.log"; die "apt-get purge"; }
installed=
for p in $pkgs; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case $st in *installed*) die "$p is still installed after purge ($st)" ;; esac
done

# ---------------------------------------------------------------------------
# RPM, with Debian's rpmbuild: the spec ships in the tarball (rpmbuild -ta).
say "make dist"
make -C "$builddir" -s dist-gzip > "$tmp/dist.log" 2>&1 || { cat "$tmp/dist.log"; die "make dist"; }
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$builddir/Makefile")
mv "$builddir/jpsync-$version.tar.gz" "$tmp/"

# --nocheck: %check is `make check`, which .ci/run has run on this tree
# already.  --nodeps: BuildRequires name RPM packages, which dpkg cannot
# answer for.
say "rpmbuild -ta --nodeps --nocheck"
if ! rpmbuild -ta --nodeps --nocheck --define "_topdir $tmp/rpmbuild" \
       "$tmp/jpsync-$version.tar.gz" > "$tmp/rpm-build.log" 2>&1; then
  tail -n 80 "$tmp/rpm-build.log"; die "rpmbuild"
fi
rpmdir=$tmp/rpmbuild/RPMS/$(rpm --eval '%{_arch}')
ls "$rpmdir"
libdir=$(rpm --eval '%{_libdir}')
bindir=$(rpm --eval '%{_bindir}')
includedir=$(rpm --eval '%{_includedir}')
mandir=$(rpm --eval '%{_mandir}')
for f in "$rpmdir"/*.rpm; do
  rpm -qlp "$f" > "$f.list" 2>/dev/null
  if grep -E '\.(la|a)$' "$f.list"; then
    die "$(basename "$f") packages a libtool archive or a static library"
  fi
done
rpm_has() { # package regex
  local f
  f=$(ls "$rpmdir/$1-$version"-*.rpm)
  grep -Eq "$2" "$f.list" || die "$(basename "$f") lacks $2"
}
rpm_has jpsync "^$libdir/libjpsync\.so\.1$"
rpm_has jpsync "^$libdir/libjpsync\.so\.1\.[0-9.]+$"
rpm_has jpsync "^$bindir/jpsync-run$"
rpm_has jpsync "^$libdir/jpsync/libjpsync-preload\.so$"
rpm_has jpsync '/COPYING$'
rpm_has jpsync-devel "^$libdir/libjpsync\.so$"
rpm_has jpsync-devel "^$libdir/pkgconfig/jpsync\.pc$"
rpm_has jpsync-devel "^$includedir/jpsync\.h$"
for h in include/jpsync/*.h include/jpsync/version.h; do
  rpm_has jpsync-devel "^$includedir/jpsync/$(basename "$h")$"
done
for page in man/man*/*.[0-9]; do
  sec=${page#man/man}; sec=${sec%%/*}
  case $sec in 1) p=jpsync ;; *) p=jpsync-devel ;; esac
  rpm_has "$p" "^$mandir/man$sec/$(basename "$page")(\.gz|\.bz2|\.xz|\.zst)?$"
done
echo "ok: every file of the RPMs lands where rpm/jpsync.spec says"

say "done"
