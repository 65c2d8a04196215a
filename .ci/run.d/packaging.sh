#!/bin/bash
# packaging: build the Debian source and binary packages,
# 3.0 (quilt) with the `make dist` tarball as the orig and the tree's
# debian/ as the Debian part, lint them (lintian --pedantic -I -E: no
# error, warning or info tag that is not overridden with its reason),
# install them, run the autopkgtest tests against them, check that the man
# pages render from them, remove them; then build the RPMs from the same
# tarball with rpmbuild -ta, %check included, check where their files land
# and that none has an RPATH or RUNPATH, and rpmlint them (rpm/README lists
# the findings that come from building on Debian).
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
# The release tarball: the orig of the Debian source package and what
# rpmbuild -ta builds from.
say "make dist"
make -C "$builddir" -s dist-gzip > "$tmp/dist.log" 2>&1 || { cat "$tmp/dist.log"; die "make dist"; }
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$builddir/Makefile")
mv "$builddir/jpsync-$version.tar.gz" "$tmp/"
tarball=$tmp/jpsync-$version.tar.gz
if tar -tzf "$tarball" | grep -E '^[^/]+/(\.ci|debian)/'; then
  die "the release tarball carries CI scripts or debian/"
fi
echo "ok: jpsync-$version.tar.gz carries neither .ci/ nor debian/"

# ---------------------------------------------------------------------------
# Debian: jpsync_VERSION.orig.tar.gz is the tarball; debian/ is the tree's
# (what git tracks, plus untracked files that are not ignored).
debver=$(dpkg-parsechangelog -l debian/changelog -S Version)
case $debver in "$version"-*) ;; *) die "debian/changelog is $debver, not $version-N" ;; esac
say "jpsync_$version.orig.tar.gz + debian/ -> jpsync-$version"
cp "$tarball" "$tmp/jpsync_$version.orig.tar.gz"
mkdir "$tmp/src"
tar -xzf "$tarball" -C "$tmp/src" --strip-components=1
git ls-files -z --cached --others --exclude-standard debian |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -x -C "$tmp/src"

# nocheck: make check already ran in .ci/run's earlier steps on this same
# tree and architecture, and the autopkgtest below runs the public suites
# against the installed packages.  (A plain `dpkg-buildpackage -us -uc`
# runs it in dh_auto_test.)
say "dpkg-buildpackage -us -uc (source and binaries; DEB_BUILD_OPTIONS=nocheck)"
if ! (cd "$tmp/src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
        dpkg-buildpackage -us -uc) > "$tmp/deb-build.log" 2>&1; then
  tail -n 80 "$tmp/deb-build.log"; die "dpkg-buildpackage"
fi
grep -E '^dpkg-source: info: (building|using)' "$tmp/deb-build.log" || true
changes=$(ls "$tmp"/jpsync_*.changes)
debs=$(sed -n '/^Files:/,/^[^ ]/s/^ .* \([^ ]*\.deb\)$/\1/p' "$changes")
echo "$debs"
ls "$tmp"/jpsync_*.dsc "$tmp"/jpsync_*.debian.tar.* >/dev/null || die "no source package"

# The source package and the binaries; pedantic and experimental tags
# shown, errors, warnings and info tags fatal (each accepted one carries an
# override with its reason in debian/*lintian-overrides).
say "lintian --pedantic -I -E (source and binaries; fails on error, warning, info)"
st=0
# No --show-overrides: with it, lintian 2.116 exits 2 on a .changes whose
# every tag is overridden (it counts the O: lines); the overrides and their
# reasons are in debian/*lintian-overrides.
lintian --pedantic -I -E --fail-on error,warning,info "$changes" \
  > "$tmp/lintian.log" 2>&1 || st=$?
grep -v 'running with root privileges' "$tmp/lintian.log" || true
[ $st -eq 0 ] || die "lintian reports errors, warnings or info tags (exit $st)"
if grep -E '^[EWI]: ' "$tmp/lintian.log"; then
  die "lintian reports the tags above, not overridden"
fi
echo "ok: lintian: no error, warning or info tag that is not overridden"

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
contains libjpsync-dev "^$ma/cmake/jpsync/jpsyncConfig\.cmake$"
contains libjpsync-dev "^$ma/cmake/jpsync/jpsyncConfigVersion\.cmake$"
for e in examples/*.c examples/*.cc; do
  contains libjpsync-dev "^/usr/share/doc/libjpsync-dev/$e$"
done
contains libjpsync-dev '^/usr/include/jpsync\.h$'
contains libjpsync-dev '^/usr/include/jpsync\.hpp$'
for h in include/jpsync/*.h include/jpsync/*.hpp include/jpsync/version.h; do
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
  # As autopkgtest runs them: from the top of the unpacked source package.
  (cd "$tmp/src" && AUTOPKGTEST_TMP="$tmp/ap-$t" "debian/tests/$t") ||
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
# Every page of the source tree renders from the packages; then the four
# pages a user of each part opens first (the allocator, the queues, the
# launcher, the overview) are asked for by name, each once the component
# that writes it is merged.
# What the packages installed, listed once (dpkg -S per page took most of
# this step's minute).
# shellcheck disable=SC2086
[ -n "$manpath" ] || dpkg -L $pkgs > "$tmp/pkgfiles"
n=0
for page in man/man*/*.[0-9] man/man*/*.[0-9].in; do
  page=${page%.in}
  n=$((n + 1))
  name=$(basename "$page"); sec=${name##*.}; name=${name%.*}
  path=$(man_ -w "$sec" "$name" 2>/dev/null) || die "man -w $sec $name: no page installed"
  if [ -z "$manpath" ]; then
    grep -qxF "$path" "$tmp/pkgfiles" || die "man $sec $name is $path, not from a package"
  fi
  MANWIDTH=80 man_ -P cat "$sec" "$name" > "$tmp/page" 2>"$tmp/page.err" ||
    { cat "$tmp/page.err"; die "man $sec $name does not render"; }
  grep -q NAME "$tmp/page" || die "man $sec $name rendered without a NAME section"
done
echo "ok: the $n pages of man/ render from the packages"
for req in "3 jp_alloc" "3 jp_mpmc_push" "1 jpsync-run" "7 jpsync"; do
  # shellcheck disable=SC2086 # "3 jp_alloc": section and name
  set -- $req
  if [ -f "man/man$1/$2.$1" ] || [ -f "man/man$1/$2.$1.in" ]; then
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
# --nodeps: BuildRequires name RPM packages, which dpkg cannot answer for.
# %check runs make check; at full scale it took 375-500 s here, and the
# full-scale suites already ran in .ci/run's first step on this tree, with
# the checks of the source tree alone (SOURCE_CHECKS, left out here) and
# those of the installation (INSTALL_CHECKS, which ran there, in distcheck
# and against the Debian packages above; left out here too).
say "rpmbuild -ta --nodeps (with %check, JPSYNC_TEST_SCALE=0.1)"
if ! JPSYNC_TEST_SCALE=${JPSYNC_TEST_SCALE:-0.1} rpmbuild -ta --nodeps --define "_topdir $tmp/rpmbuild" \
       --define 'jp_check_args SOURCE_CHECKS= INSTALL_CHECKS=' \
       "$tarball" > "$tmp/rpm-build.log" 2>&1; then
  grep -E '^(FAIL|ERROR)' "$tmp/rpm-build.log" || true
  tail -n 80 "$tmp/rpm-build.log"; die "rpmbuild"
fi
grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR):' "$tmp/rpm-build.log" | tr -s ' ' | tr '\n' ' '; echo
grep -q '^# PASS:' "$tmp/rpm-build.log" || die "rpmbuild ran no %check"
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
rpm_has jpsync-libs "^$libdir/libjpsync\.so\.1$"
rpm_has jpsync-libs "^$libdir/libjpsync\.so\.1\.[0-9.]+$"
rpm_has jpsync-libs '/COPYING$'
rpm_has jpsync "^$bindir/jpsync-run$"
rpm_has jpsync "^$libdir/jpsync/libjpsync-preload\.so$"
rpm_has jpsync '/COPYING$'
rpm_has jpsync '/README\.md$'
rpm_has jpsync '/NEWS$'
f=$(ls "$rpmdir/jpsync-libs-$version"-*.rpm)
if grep -E "^($bindir|/usr/sbin)/" "$f.list"; then die "jpsync-libs carries an executable"; fi
for p in jpsync jpsync-devel; do
  rpm -qp --requires "$(ls "$rpmdir/$p-$version"-*.rpm)" 2>/dev/null |
    grep -q "^jpsync-libs.* = $version-" || die "$p does not require jpsync-libs = $version"
done
rpm_has jpsync-devel "^$libdir/libjpsync\.so$"
rpm_has jpsync-devel "^$libdir/pkgconfig/jpsync\.pc$"
rpm_has jpsync-devel "^$libdir/cmake/jpsync/jpsyncConfig\.cmake$"
rpm_has jpsync-devel "^$libdir/cmake/jpsync/jpsyncConfigVersion\.cmake$"
# %{_docdir} is defined only inside rpmbuild; the folder is the
# subpackage's name, with the version where rpm's _docdir_fmt says so
# (Debian's rpm: jpsync-devel-1.1.0; Fedora's: jpsync-devel).
docdir=$(rpm --eval '%{_defaultdocdir}')
for e in examples/*.c examples/*.cc; do
  rpm_has jpsync-devel "^$docdir/jpsync-devel(-$version)?/$e$"
done
rpm_has jpsync-devel "^$includedir/jpsync\.h$"
rpm_has jpsync-devel "^$includedir/jpsync\.hpp$"
for h in include/jpsync/*.h include/jpsync/*.hpp include/jpsync/version.h; do
  rpm_has jpsync-devel "^$includedir/jpsync/$(basename "$h")$"
done
for page in man/man*/*.[0-9] man/man*/*.[0-9].in; do
  page=${page%.in}
  sec=${page#man/man}; sec=${sec%%/*}
  case $sec in 1) p=jpsync ;; *) p=jpsync-devel ;; esac
  rpm_has "$p" "^$mandir/man$sec/$(basename "$page")(\.gz|\.bz2|\.xz|\.zst)?$"
done
echo "ok: every file of the RPMs lands where rpm/jpsync.spec says"

say "no RPATH or RUNPATH in any packaged ELF file"
for f in "$rpmdir"/*.rpm; do
  d=$tmp/unpacked/$(basename "$f" .rpm); mkdir -p "$d"
  (cd "$d" && rpm2cpio "$f" | cpio -idm --quiet)
  find "$d" -type f | while read -r e; do
    if head -c 4 "$e" | grep -q 'ELF' && readelf -d "$e" 2>/dev/null | grep -E 'RPATH|RUNPATH'; then
      echo "$e"; touch "$tmp/rpath-found"
    fi
  done
done
[ ! -e "$tmp/rpath-found" ] || die "a packaged file has an RPATH or RUNPATH"
echo "ok: no RPATH or RUNPATH"

# rpmlint: every error fails but those rpm/README lists (lines
# "allowed: TAG"), which come from building on a Debian host; warnings are
# shown (rpm/README says why each is there).
say "rpmlint (binary and source packages)"
allowed=$(sed -n 's/^allowed: *\([^ ]*\).*/\1/p' rpm/README)
srpm=$(ls "$tmp"/rpmbuild/SRPMS/jpsync-"$version"-*.src.rpm)
rpmlint "$rpmdir"/*.rpm "$srpm" > "$tmp/rpmlint.log" 2>&1 || true
cat "$tmp/rpmlint.log"
bad=0
while read -r line; do
  tag=$(printf '%s\n' "$line" | sed -n 's/^[^ ]*: E: \([^ ]*\).*/\1/p')
  [ -n "$tag" ] || continue
  case " $(echo $allowed) " in
    *" $tag "*) ;;
    *) echo "rpmlint: not allowed: $line"; bad=1 ;;
  esac
done < "$tmp/rpmlint.log"
[ $bad -eq 0 ] || die "rpmlint reports errors rpm/README does not allow"
echo "ok: rpmlint: only the Debian-host findings of rpm/README"

say "done"
