#!/bin/bash
# cross: make check on i386 (crossbuild-essential-i386's
# i686-linux-gnu-gcc; the programs run natively), and on arm64 and s390x
# (64-bit big-endian), cross-built with Debian's cross toolchains and run
# under qemu-user through tests/target-exec.sh (README, "Architectures").
# Each build is checked against its own ABI baseline (lib/abi/) by its make
# check.  The amd64 make check ran in .ci/run's first step, with the
# checks of the source tree alone, left out here (SOURCE_CHECKS=).
# JP_CROSS_ARCHS (default "i386 arm64 s390x") chooses; i386 scales the
# stress sizes by JP_CROSS_I386_SCALE (default 0.2, as .ci/run's other
# native builds), the emulated runs by JP_CROSS_SCALE (default 0.1).
set -euo pipefail
top=$PWD
jobs=$(nproc)
start=$(date +%s)
say() { printf -- '--- cross: %s (%ds)\n' "$*" $(( $(date +%s) - start )); }
die() { echo "FAIL: $*" >&2; exit 1; }

say "scripts/install-deps.sh --cross"
scripts/install-deps.sh --cross

results=
for arch in ${JP_CROSS_ARCHS:-i386 arm64 s390x}; do
  case $arch in
    i386) host=i686-linux-gnu multiarch=i386-linux-gnu scale=${JP_CROSS_I386_SCALE:-0.2} ;;
    arm64) host=aarch64-linux-gnu multiarch=$host scale=${JP_CROSS_SCALE:-0.1} ;;
    s390x) host=s390x-linux-gnu multiarch=$host scale=${JP_CROSS_SCALE:-0.1} ;;
    *) die "no cross setup for $arch" ;;
  esac
  dir=build-$arch
  say "$arch: configure --host=$host"
  mkdir -p "$dir"
  (cd "$dir" && "$top/configure" -q --host="$host" --disable-valgrind \
     PKG_CONFIG_LIBDIR="/usr/lib/$multiarch/pkgconfig:/usr/share/pkgconfig") ||
    die "$arch: configure"
  grep -E '^(JP_EMULATOR|CXX|ATOMIC_LIBS|JP_ABI_ARCH) =' "$dir/Makefile"
  say "$arch: make"
  make -C "$dir" -j"$jobs" >/dev/null || die "$arch: make"
  # Every suite runs; a case that cannot run under qemu-user is left out
  # by the suite itself, by name, with the reason (jp_test_unregister).
  say "$arch: make check (JPSYNC_TEST_SCALE=$scale)"
  if ! JPSYNC_TEST_SCALE=$scale make -C "$dir" -j"$jobs" check SOURCE_CHECKS= > "$dir/check.out" 2>&1; then
    grep -E '^(FAIL|ERROR)' "$dir/check.out" || true
    find "$dir" -name '*.log' -newer "$dir/config.status" |
      xargs -r grep -l -E '^(FAIL|ERROR)' | head -10 |
      while read -r f; do echo "--- $f"; tail -n 60 "$f"; done
    die "$arch: make check"
  fi
  grep -E '^(SKIP|XFAIL)' "$dir/check.out" || true
  grep -h '^not run here\|^not registered here\|^SKIP' "$dir"/tests/*.log | sort -u || true
  line=$(grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR):' "$dir/check.out" | tr -s ' ' | tr '\n' ' ')
  say "$arch: $line"
  results="$results$arch: $line
"
done
say "done"
printf '%s' "$results"
