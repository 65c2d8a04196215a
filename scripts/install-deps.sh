#!/bin/sh
# Install everything libjpsync needs to build, test, benchmark and package,
# from Debian's archive only.  Idempotent; run as root (or through sudo).
#
#   scripts/install-deps.sh            build + test dependencies
#   scripts/install-deps.sh --all      also benchmark peers and packaging tools
set -eu

build_pkgs="build-essential autoconf automake libtool autoconf-archive
pkg-config libcunit1-dev valgrind abigail-tools mandoc man-db clang
libclang-rt-dev g++ git python3 perl xz-utils"
bench_pkgs="libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev
libck-dev gnuplot-nox"
pkg_pkgs="debhelper dh-autoreconf devscripts lintian rpm fakeroot
autopkgtest"

pkgs="$build_pkgs"
case "${1:-}" in
  --all) pkgs="$pkgs $bench_pkgs $pkg_pkgs" ;;
  --bench) pkgs="$pkgs $bench_pkgs" ;;
  "") ;;
  *) echo "usage: $0 [--all|--bench]" >&2; exit 2 ;;
esac

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

missing=
for p in $pkgs; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
    missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
