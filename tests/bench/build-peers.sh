#!/bin/sh
# build-peers.sh - build the allocator peers that Debian does not package at
# the versions users compare with: mimalloc 3.4.x and snmalloc, from their
# public sources, for tests/bench/alloc-bench.sh (implementations mimalloc3
# and snmalloc).  Nothing of theirs enters this tree: the sources and the
# builds live in OUTDIR, which must be outside it.
#
#   sh tests/bench/build-peers.sh MIMALLOC_SRC SNMALLOC_SRC OUTDIR
#
# MIMALLOC_SRC: a checkout of https://github.com/microsoft/mimalloc at a
# v3.4.x tag (measured: v3.4.3); SNMALLOC_SRC: one of
# https://github.com/microsoft/snmalloc (measured: 0.7.5).  Either may be
# "-" to skip it.  Both are built Release with CMake and Ninja (package
# cmake and ninja-build, the "bench" group of scripts/install-deps.sh), as
# mimalloc-bench builds them: mimalloc's shared library without its tests,
# snmalloc's libsnmallocshim.so.  Then
#
#   JPSYNC_BENCH_PEERS_DIR=OUTDIR make bench
#
# runs them beside the Debian packages.  Prints what it built; exits 1 when
# a build fails (its log is in OUTDIR).
set -eu
[ $# -eq 3 ] || { echo "usage: build-peers.sh MIMALLOC_SRC|- SNMALLOC_SRC|- OUTDIR" >&2; exit 2; }
mi=$1 sn=$2 out=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
case $out/ in "$here"/*) echo "build-peers.sh: OUTDIR must be outside the source tree" >&2; exit 2;; esac
for t in cmake ninja c++; do
  command -v $t >/dev/null || { echo "build-peers.sh: $t not found (scripts/install-deps.sh --bench)" >&2; exit 2; }
done
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)

# build NAME SRC TARGET CMAKE_ARGS...: configure and build TARGET in OUTDIR/build-NAME.
build() {
  name=$1 src=$2 target=$3; shift 3
  [ -f "$src/CMakeLists.txt" ] || { echo "build-peers.sh: $src: not a $name source tree" >&2; exit 2; }
  log=$out/$name.log
  if ! { cmake -S "$src" -B "$out/build-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" &&
         ninja -C "$out/build-$name" -j "$jobs" "$target"; } > "$log" 2>&1; then
    tail -n 30 "$log"; echo "build-peers.sh: building $name failed (log: $log)" >&2; exit 1
  fi
  cp -L "$out/build-$name/$target" "$out/$target"
  echo "built $out/$target"
}

[ "$mi" = - ] || build mimalloc "$mi" libmimalloc.so.3 \
  -DMI_BUILD_TESTS=OFF -DMI_BUILD_STATIC=OFF -DMI_BUILD_OBJECT=OFF
[ "$sn" = - ] || build snmalloc "$sn" libsnmallocshim.so -DSNMALLOC_BUILD_TESTING=OFF
