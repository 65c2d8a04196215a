#!/bin/bash
# fuzz: every fuzz target of tests/fuzz/ replays its corpus, then fuzzes
# with a fixed seed and a fixed number of executions (the table in
# tests/fuzz/run-fuzzers.sh, about eleven minutes of CPU for all, run
# $(nproc) targets at once: about six minutes on 2 cores), built
# with clang -fsanitize=fuzzer,address,undefined.  Fails on any finding and
# prints the path of the input that reproduces it.  Run by .ci/run from the
# repository root with build/ configured (another build folder:
# JPSYNC_BUILD_DIR).  See tests/fuzz/README.
set -euo pipefail
top=$PWD
builddir=$top/${JPSYNC_BUILD_DIR:-build}
start=$(date +%s)
say() { printf -- '--- fuzz: %s (%ds)\n' "$*" $(( $(date +%s) - start )); }

[ -f "$builddir/Makefile" ] || { echo "FAIL: $builddir is not configured" >&2; exit 1; }
say "build the fuzzers (clang, libFuzzer)"
if ! make -C "$builddir" -j"$(nproc)" fuzz-build > "$builddir/fuzz-build.log" 2>&1; then
  tail -n 40 "$builddir/fuzz-build.log"; echo "FAIL: make fuzz-build" >&2; exit 1
fi
say "replay the corpus, then the fixed runs"
FUZZ_JOBS=$(nproc) make -C "$builddir" fuzz-ci
say "done"
