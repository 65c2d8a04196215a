#!/bin/sh
# update-abi.sh SRCDIR BUILDDIR ARCH... - regenerate lib/abi/libjpsync-ARCH.abi
# for each ARCH (Debian's names: amd64 i386 arm64 s390x), as `make
# update-abi` does.  The build's own architecture ($JP_ABI_ARCH) is read from
# BUILDDIR; every other one is cross-built into BUILDDIR/abi-ARCH with
# Debian's cross toolchain (scripts/install-deps.sh --cross), the library
# only, and abidw reads the foreign ELF on this machine.  Review the result
# with `git diff lib/abi/` and commit it with the change that caused it.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 SRCDIR BUILDDIR ARCH..." >&2; exit 2; }
src=$1 build=$2; shift 2
: "${ABIDW:=abidw}" "${JP_ABI_ARCH:=}"
command -v "$ABIDW" >/dev/null 2>&1 || { echo "update-abi: abidw not found (install abigail-tools)" >&2; exit 1; }

triplet() {
  case $1 in
    amd64) echo x86_64-linux-gnu ;;
    i386) echo i686-linux-gnu ;;
    arm64) echo aarch64-linux-gnu ;;
    s390x) echo s390x-linux-gnu ;;
    ppc64el) echo powerpc64le-linux-gnu ;;
    *) echo "update-abi: no cross triplet known for $1" >&2; return 1 ;;
  esac
}

dump() { # ARCH BUILDDIR
  so="$2/lib/.libs/libjpsync.so.1"
  [ -e "$so" ] || { echo "update-abi: $so not built" >&2; exit 1; }
  "$ABIDW" --no-corpus-path --drop-private-types \
    --headers-dir "$src/include" --headers-dir "$2/include" \
    --out-file "$src/lib/abi/libjpsync-$1.abi" "$so"
  echo "update-abi: lib/abi/libjpsync-$1.abi from $so"
}

for arch in "$@"; do
  if [ "$arch" = "$JP_ABI_ARCH" ]; then
    dump "$arch" "$build"
    continue
  fi
  host=$(triplet "$arch")
  multiarch=$host
  [ "$arch" = i386 ] && multiarch=i386-linux-gnu
  command -v "$host-gcc" >/dev/null 2>&1 ||
    { echo "update-abi: $host-gcc not found (scripts/install-deps.sh --cross)" >&2; exit 1; }
  dir="$build/abi-$arch"
  mkdir -p "$dir"
  if [ ! -f "$dir/Makefile" ]; then
    (cd "$dir" && "$src/configure" -q --host="$host" --disable-valgrind \
       PKG_CONFIG_LIBDIR="/usr/lib/$multiarch/pkgconfig:/usr/share/pkgconfig") ||
      { echo "update-abi: configure --host=$host failed" >&2; exit 1; }
  fi
  make -s -C "$dir" lib/libjpsync.la >/dev/null
  dump "$arch" "$dir"
done
