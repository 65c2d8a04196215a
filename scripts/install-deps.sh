#!/bin/sh
# Install everything libjpsync needs to build, test, benchmark and package,
# from Debian's archive only.  Idempotent; run as root (or through sudo).
#
#   scripts/install-deps.sh            build + test dependencies
#   scripts/install-deps.sh --all      also benchmark peers and packaging tools
#   scripts/install-deps.sh --cross    also the cross toolchains, qemu-user and
#                                      the foreign test libraries (i386, arm64,
#                                      s390x; README, "Architectures")
#   (--all --cross: both)
set -eu

build_pkgs="build-essential autoconf automake libtool autoconf-archive
pkg-config libcunit1-dev valgrind abigail-tools mandoc man-db clang
libclang-rt-dev g++ git python3 perl xz-utils cmake google-perftools"
bench_pkgs="libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev
libck-dev gnuplot-nox ninja-build time strace"
pkg_pkgs="debhelper dh-autoreconf devscripts lintian rpm rpmlint fakeroot valgrind-if-available
autopkgtest"

# Cross builds: Debian's cross toolchains (crossbuild-essential-i386 has
# i686-linux-gnu-gcc; gcc-multilib would remove the cross compilers),
# qemu-user to run the arm64 and s390x programs (no binfmt_misc needed),
# and CUnit of each foreign architecture (multiarch: dpkg
# --add-architecture; it brings libc6:ARCH along).
cross_archs="i386 arm64 s390x"
cross_pkgs="crossbuild-essential-i386 crossbuild-essential-arm64
crossbuild-essential-s390x qemu-user"
foreign_pkgs="libcunit1-dev"

pkgs="$build_pkgs"
cross=no
for a in "$@"; do
  case $a in
    --all) pkgs="$pkgs $bench_pkgs $pkg_pkgs" ;;
    --bench) pkgs="$pkgs $bench_pkgs" ;;
    --cross) cross=yes; pkgs="$pkgs $cross_pkgs" ;;
    *) echo "usage: $0 [--all|--bench] [--cross]" >&2; exit 2 ;;
  esac
done

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# apt-get update, once more if a mirror was mid-sync (the lists it got
# are used either way; the install below says whether they sufficed).
apt_update() {
  $SUDO apt-get update -q || { sleep 5; $SUDO apt-get update -q; } ||
    echo "install-deps: apt-get update reported errors; trying with the lists it has"
}

added=no
if [ "$cross" = yes ]; then
  have=$(dpkg --print-foreign-architectures)
  for a in $cross_archs; do
    case " $(echo $have) " in
      *" $a "*) ;;
      *) $SUDO dpkg --add-architecture "$a"; added=yes ;;
    esac
    for p in $foreign_pkgs; do pkgs="$pkgs $p:$a"; done
  done
fi

missing=
for p in $pkgs; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
    missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
[ "$added" = yes ] && echo "install-deps: added the architectures $cross_archs"
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt_update
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
