#!/bin/sh
# mimalloc-bench.sh - the programs of mimalloc-bench (github.com/daanx/
# mimalloc-bench) under every allocator, so that anyone can repeat the
# allocator comparison of doc/benchmarks.md on neutral ground.
#
#   sh tests/bench/mimalloc-bench.sh [--strace] MB_SRC [PEERS_DIR]
#   sh tests/bench/mimalloc-bench.sh --table CSV
#
# MB_SRC is a copy of mimalloc-bench's sources, fetched by the user (never
# part of this tree).  Its bench/CMakeLists.txt is built with CMake and
# Ninja (scripts/install-deps.sh --bench) in $JPSYNC_BENCH_MB_BUILD, outside
# this tree, through a shadow folder of links: the copy there skips shbench
# when its sources (not redistributable) are absent, and the security tests.
# z3, lean, redis, rocksdb, lua, gs, linux and rbstress need programs or
# downloads beyond MB_SRC and are not run.
#
# Each test runs with bench.sh's arguments, $procs being the online CPUs
# ($JPSYNC_BENCH_MB_PROCS), under every allocator alloc-bench.sh knows
# (alloc-impls.sh: jpsync through the build tree's preload module, glibc,
# Debian's jemalloc, mimalloc 2 and tcmalloc, and PEERS_DIR's mimalloc 3 and
# snmalloc, PEERS_DIR defaulting to $JPSYNC_BENCH_PEERS_DIR), round-robin
# over the allocators inside each repetition, the order rotated from one
# repetition to the next.  /usr/bin/time gives the elapsed seconds and the
# peak RSS; as bench.sh does, the tests that run for a fixed time report a
# relative time computed from their own count instead (larson, rptest,
# xmalloc-test, glibc-thread).  --strace adds one run per test and
# allocator under strace -f -c for its mmap, munmap, madvise, mremap and
# futex calls.  Writes $JPSYNC_BENCH_OUT/mimalloc-bench.csv (the driver
# contract's columns), .notes and .md (the tables), prints the tables and
# exits 1 when a run failed; --table prints the tables of a CSV again.
#
# Environment (besides JPSYNC_BENCH_REPS, default 3 here, and _OUT):
#   JPSYNC_BENCH_MB_TESTS    tests to run (default: every test of all_tests,
#                            set below, whose program built;
#                            JPSYNC_BENCH_QUICK=1: cfrac, glibc-simple and
#                            alloc-test1)
#   JPSYNC_BENCH_MB_PROCS    bench.sh's $procs (default: online CPUs)
#   JPSYNC_BENCH_MB_BUILD    build folder (default $TMPDIR/jpsync-mimalloc-bench)
#   JPSYNC_BENCH_MB_TIMEOUT  seconds before a run counts as hung (300)
#   JPSYNC_BENCH_ALLOC_IMPLS allocators (as alloc-bench.sh; default all seven)
# shellcheck source-path=SCRIPTDIR
set -u
name=mimalloc-bench
all_tests="cfrac espresso barnes larsonN larsonN-sized mstressN rptestN
alloc-test1 alloc-testN sh6benchN sh8benchN xmalloc-testN cache-scratch1
cache-scratchN glibc-simple glibc-thread malloc-large mleak10 mleak100
cache-thrash1 cache-thrashN"
syscalls="mmap munmap madvise mremap futex"
usage() {
  echo "usage: mimalloc-bench.sh [--strace] MB_SRC [PEERS_DIR] | --table CSV" >&2; exit 2
}

# ------------------------------------------------------------------ tables
# tables CSV: the median tables of a CSV this script wrote, in markdown.
tables() {
  awk -F, -v scs="$syscalls" -f "$(dirname "$0")/median.awk" -f "$(dirname "$0")/mimalloc-bench.awk" "$1"
}

do_strace=0
case ${1:-} in
  --table) if [ $# -ne 2 ] || [ ! -f "$2" ]; then usage; fi; tables "$2"; exit 0 ;;
  --strace) do_strace=1; shift ;;
  -h|--help) sed -n '2,/^# shellcheck source-path/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
mb=$1
peers=${2:-${JPSYNC_BENCH_PEERS_DIR:-}}
if [ ! -f "$mb/bench/CMakeLists.txt" ] || [ ! -f "$mb/bench.sh" ]; then
  echo "mimalloc-bench.sh: $mb is not a mimalloc-bench source tree (no bench/CMakeLists.txt, bench.sh)" >&2; exit 2
fi
mb=$(cd "$mb" && pwd)
: "${JPSYNC_BENCH_REPS:=3}"
# shellcheck source=driver-common.sh
. "$(dirname "$0")/driver-common.sh"
impls=${JPSYNC_BENCH_ALLOC_IMPLS:-jpsync glibc jemalloc mimalloc tcmalloc mimalloc3 snmalloc}
procs=${JPSYNC_BENCH_MB_PROCS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
build=${JPSYNC_BENCH_MB_BUILD:-${TMPDIR:-/tmp}/jpsync-mimalloc-bench}
run_timeout=${JPSYNC_BENCH_MB_TIMEOUT:-300}
if [ "$quick" = 1 ]; then def_tests="cfrac glibc-simple alloc-test1"; else def_tests=$all_tests; fi
tests=${JPSYNC_BENCH_MB_TESTS:-$def_tests}
case $procs in ''|*[!0-9]*|0) echo "mimalloc-bench.sh: JPSYNC_BENCH_MB_PROCS='$procs' is not a positive integer" >&2; exit 2 ;; esac
for t in cmake ninja /usr/bin/time timeout; do
  command -v $t >/dev/null || { echo "mimalloc-bench.sh: $t not found (scripts/install-deps.sh --bench)" >&2; exit 2; }
done
if [ $do_strace = 1 ] && ! command -v strace >/dev/null; then
  echo "mimalloc-bench.sh: strace not found (scripts/install-deps.sh --bench)" >&2; exit 2
fi
case $build in /*) ;; *) build=$PWD/$build ;; esac
src_root=$(cd "$top_srcdir" && pwd)
case $build/ in "$src_root"/*) echo "mimalloc-bench.sh: the build folder $build must be outside the source tree" >&2; exit 2 ;; esac
mkdir -p "$build" || exit 2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------- tests
# test_cmd TEST: sets exe, args, input and threads to bench.sh's command.
test_cmd() {
  input=/dev/null; threads=$procs
  case $1 in
    cfrac) exe=cfrac; args=17545186520507317056371138836327483792789528; threads=1 ;;
    espresso) exe=espresso; args=$mb/bench/espresso/largest.espresso; threads=1 ;;
    barnes) exe=barnes; args=; input=$mb/bench/barnes/input; threads=1 ;;
    larsonN) exe=larson; args="5 8 1000 5000 100 4141 $procs" ;;
    larsonN-sized) exe=larson-sized; args="5 8 1000 5000 100 4141 $procs" ;;
    mstressN) exe=mstress; args="$procs 50 25" ;;
    rptestN) exe=rptest; args="$procs 0 1 2 500 1000 100 8 16000" ;;
    alloc-test1) exe=alloc-test; args=1; threads=1 ;;
    alloc-testN) exe=alloc-test; threads=$((procs > 16 ? 16 : procs)); args=$threads ;;
    sh6benchN) exe=sh6bench; threads=$((procs * 2)); args=$threads ;;
    sh8benchN) exe=sh8bench; threads=$((procs * 2)); args=$threads ;;
    xmalloc-testN) exe=xmalloc-test; args="-w $procs -t 5 -s 64" ;;
    cache-scratch1) exe=cache-scratch; args="1 1000 1 2000000 $procs"; threads=1 ;;
    cache-scratchN) exe=cache-scratch; args="$procs 1000 1 2000000 $procs" ;;
    cache-thrash1) exe=cache-thrash; args="1 1000 1 2000000 $procs"; threads=1 ;;
    cache-thrashN) exe=cache-thrash; args="$procs 1000 1 2000000 $procs" ;;
    glibc-simple) exe=glibc-simple; args=; threads=1 ;;
    glibc-thread) exe=glibc-thread; args=$procs ;;
    malloc-large) exe=malloc-large; args=; threads=1 ;;
    mleak10) exe=mleak; args=5; threads=1 ;;
    mleak100) exe=mleak; args=50; threads=1 ;;
    *) return 1 ;;
  esac
}
# rel_time TEST OUTPUT: bench.sh's relative time of a fixed-time test.
rel_time() {
  case $1 in
    larson*) sed -n 's/.* time: \([0-9.]*\).*/\1/p' "$2" | head -n 1 ;;
    xmalloc*) sed -n 's/^rtime: \([0-9.]*\).*/\1/p' "$2" | head -n 1 ;;
    rptest*) sed -n 's/.*\.\.\.\([0-9]*\) memory ops.*/\1/p' "$2" | head -n 1 |
               awk '$1 > 0 { printf "%.3f\n", 2000000 / $1 }' ;;
    glibc-thread) sed -n 's/^\([0-9.]*\).*/\1/p' "$2" | head -n 1 |
               awk '$1 > 0 { printf "%.3f\n", 1000000000 / $1 }' ;;
  esac
}
# The programs of the selected tests, each once.
targets=
for t in $tests; do
  test_cmd "$t" || { echo "mimalloc-bench.sh: unknown test '$t' (known: $(echo "$all_tests" | tr '\n' ' '))" >&2; exit 2; }
  case " $targets " in *" $exe "*) ;; *) targets="$targets $exe" ;; esac
done

# ------------------------------------------------------------------- build
# The shadow folder: a link to each of bench/'s folders and an edited copy
# of its CMakeLists.txt (CMake resolves sources beside the list file).
rm -rf "$build/src" && mkdir -p "$build/src" || exit 2
for d in "$mb"/bench/*/; do ln -s "${d%/}" "$build/src/"; done
# shellcheck disable=SC2016 # ${CMAKE_CURRENT_SOURCE_DIR} is CMake's
sed -e 's|^if(NOT APPLE)$|if(NOT APPLE AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/shbench/sh6bench-new.c" AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/shbench/sh8bench-new.c")|' \
  -e '/^add_subdirectory(security)$/d' "$mb/bench/CMakeLists.txt" > "$build/src/CMakeLists.txt"
echo "mimalloc-bench: building in $build/out (log: $build/build.log)" >&2
cmake -S "$build/src" -B "$build/out" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$build/build.log" 2>&1 ||
  echo "note: CMake failed (log: $build/build.log)" >&2
# One ninja call a program: ninja builds nothing when one target is unknown
# (shbench without its sources, a program renamed upstream).
for x in $targets; do ninja -C "$build/out" -j "$procs" "$x" >> "$build/build.log" 2>&1; done

run_list=
for t in $tests; do
  test_cmd "$t"
  if [ -x "$build/out/$exe" ]; then run_list="$run_list $t"
  else echo "$t: $exe did not build (log: $build/build.log); not run" | tee -a "$notes" >&2; fi
done
[ -n "$run_list" ] || { echo "mimalloc-bench.sh: no test to run" >&2; exit 2; }

# shellcheck source=alloc-impls.sh
. "$(dirname "$0")/alloc-impls.sh"
# The tests' environment: without the JPSYNC_BENCH_* settings read above,
# which the library would warn about at each start.
for v in $(env | sed -n 's/^\(JPSYNC_BENCH_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
# A preload that ld.so refuses is only a warning: check that each library is
# mapped in a process started like the tests, so no cell is glibc's by mistake.
loaded=; unloaded=0
for impl in $active; do
  eval "lib=\$lib_$impl"
  if [ "$impl" = glibc ] || run_env "$impl" cat /proc/self/maps | grep -qF "/$(basename "$lib")"; then
    loaded="$loaded $impl"
  else
    echo "$impl: $lib is not loaded by LD_PRELOAD; not measured" | tee -a "$notes" >&2
    unloaded=1
  fi
done
echo "load before: $(uptime)" >> "$notes"
failures=$unloaded

# one TEST IMPL REP [strace]: a run of TEST under IMPL, appended to the CSV.
one() {
  test_cmd "$1"
  # shellcheck disable=SC2086 # $args: bench.sh's argument words
  if [ "${4:-}" = strace ]; then
    (cd "$build/out" && run_env "$2" timeout "$run_timeout" strace -f -c -o "$tmp/st" \
      -e trace=mmap,munmap,madvise,mremap,futex "./$exe" $args < "$input" > "$tmp/out" 2> "$tmp/err")
  else
    (cd "$build/out" && run_env "$2" timeout "$run_timeout" /usr/bin/time -o "$tmp/time" -f '%e %M' \
      "./$exe" $args < "$input" > "$tmp/out" 2> "$tmp/err")
  fi
  rc=$? why=
  if [ $rc -eq 124 ]; then why="timed out after ${run_timeout}s"
  elif [ $rc -ne 0 ]; then why="exit status $rc"
  elif [ "${4:-}" = strace ]; then
    for sc in $syscalls; do
      n=$(awk -v s="$sc" '$NF == s { print $4 }' "$tmp/st")
      echo "mimalloc-bench,$1/$sc,$threads,$2,$3,${n:-0},calls,lower," >> "$csv"
    done
    return
  else
    secs=$(awk 'END { print $1 }' "$tmp/time"); rss=$(awk 'END { print $2 }' "$tmp/time")
    case $1 in larson*|xmalloc*|rptest*|glibc-thread)
      secs=$(rel_time "$1" "$tmp/out"); [ -n "$secs" ] || why="no count in its output" ;;
    esac
  fi
  if [ -n "$why" ]; then
    failures=$((failures + 1))
    echo "mimalloc-bench: FAILED: $1 under $2, repetition $3: $why" >&2
    tail -n 5 "$tmp/err" | sed 's/^/  /' >&2
    if [ "${4:-}" = strace ]; then
      for sc in $syscalls; do echo "mimalloc-bench,$1/$sc,$threads,$2,$3,FAILED,calls,lower," >> "$csv"; done
    else
      echo "mimalloc-bench,$1,$threads,$2,$3,FAILED,s,lower," >> "$csv"
    fi
  else
    echo "mimalloc-bench,$1,$threads,$2,$3,$secs,s,lower,$rss" >> "$csv"
  fi
}

rep=1
while [ $rep -le "$reps" ]; do
  for t in $run_list; do
    echo "mimalloc-bench: repetition $rep/$reps: $t" >&2
    # shellcheck disable=SC2086 # $loaded: a list of words
    for impl in $(rotate $((rep - 1)) $loaded); do one "$t" "$impl" $rep; done
  done
  rep=$((rep + 1))
done
if [ $do_strace = 1 ]; then
  for t in $run_list; do
    echo "mimalloc-bench: strace: $t" >&2
    for impl in $loaded; do one "$t" "$impl" 1 strace; done
  done
fi
echo "load after: $(uptime)" >> "$notes"

tables "$csv" | tee "$out/$name.md"
echo ""
echo "Notes:"
sed 's/^/  /' "$notes"
echo ""
echo "CSV: $csv"
[ $failures -eq 0 ] || { echo "mimalloc-bench: $failures run(s) FAILED" >&2; exit 1; }
exit 0
