#!/bin/sh
# tests/bench/mimalloc-bench.sh without mimalloc-bench's sources: its table
# writer on a CSV written here (medians, FAILED cells, the ratios to the
# best and the leanest peer, the system-call table), its refusals of bad
# arguments, and a whole run on a stand-in source tree of two tiny
# programs (built with CMake and Ninja through the shadow folder, run
# under glibc and jpsync, one failing): the CSV rows, the FAILED cell and
# the exit status.  Speed is not checked (doc/benchmarks.md).
# ok() always succeeds, so `test && ok || bad` is an if-then-else here.
# shellcheck disable=SC2015
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: shell plumbing, nothing for valgrind to check"; exit 77; fi
mb=$top_srcdir/tests/bench/mimalloc-bench.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
has() { grep -qxF -- "$1" "$2" && ok "$3" || { bad "$3: no line '$1' in:"; cat "$2"; }; }

# 1. The tables.  cfrac: jpsync 2.0 3.0 2.5 (median 2.5), glibc 4 1 3 (3),
# mimalloc3 2.0; best peer mimalloc3, 2.0 / 2.5 = 0.80.  RSS: jpsync 2 MiB,
# glibc 1 MiB (the leanest, glibc included), 2.00.  larsonN failed once
# under jpsync: FAILED, no ratio.
h=benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb
{
  echo "$h"
  for r in "jpsync,1,2.0,s,lower,2048" "glibc,1,4.0,s,lower,1024" "mimalloc3,1,2.0,s,lower,4096" \
           "jpsync,2,3.0,s,lower,3072" "glibc,2,1.0,s,lower,1024" "jpsync,3,2.5,s,lower,2048" \
           "glibc,3,3.0,s,lower,1024"; do echo "mimalloc-bench,cfrac,1,$r"; done
  echo "mimalloc-bench,larsonN,2,jpsync,1,FAILED,s,lower,"
  echo "mimalloc-bench,larsonN,2,jpsync,2,7.5,s,lower,900"
  echo "mimalloc-bench,larsonN,2,glibc,1,10,s,lower,5120"
} > "$tmp/a.csv"
sh "$mb" --table "$tmp/a.csv" > "$tmp/a.md" || bad "--table exited $?"
has '| cfrac | 1 | 2.50 | 3.00 | 2.00 | 0.80 (mimalloc3) |' "$tmp/a.md" "time row: medians and best peer"
has '| cfrac | 1 | 2.0 | 1.0 | 4.0 | 2.00 (glibc) |' "$tmp/a.md" "RSS row: medians and leanest"
has '| larsonN | 2 | FAILED | 10.00 | - | - |' "$tmp/a.md" "a failed repetition makes the cell FAILED"
has '| larsonN | 2 | FAILED | 5.0 | - | - |' "$tmp/a.md" "and its RSS cell too"
grep -q '^System calls' "$tmp/a.md" && bad "a system-call table without counts" || ok "no system-call table without counts"
# strace counts: jpsync 30+10+0 calls against mimalloc3's 15+5+0.
for r in "jpsync,mmap,30" "jpsync,munmap,10" "jpsync,madvise,0" "jpsync,mremap,0" "jpsync,futex,7" \
         "mimalloc3,mmap,15" "mimalloc3,munmap,5" "mimalloc3,madvise,0" "mimalloc3,mremap,0" "mimalloc3,futex,FAILED"; do
  im=${r%%,*} r=${r#*,}
  echo "mimalloc-bench,cfrac/${r%,*},1,$im,1,${r#*,},calls,lower," >> "$tmp/a.csv"
done
sh "$mb" --table "$tmp/a.csv" > "$tmp/b.md" || bad "--table exited $?"
has '| cfrac | 1 | 30 10 0 0 7 | - - - - - | 15 5 0 0 FAILED | 2.00 (40 / 20) |' "$tmp/b.md" "system-call row and ratio to mimalloc3"
grep -q '^| larsonN .* - - - - - |' "$tmp/b.md" && bad "a system-call row for a test without counts" || ok "no system-call row without counts"

# 2. Refusals, with exit status 2.
refuse() { # WHAT PATTERN COMMAND...
  what=$1 pat=$2; shift 2
  if "$@" > "$tmp/out" 2>&1; then bad "$what: accepted"
  elif [ $? -ne 2 ]; then bad "$what: exit status not 2"; cat "$tmp/out"
  elif grep -q -- "$pat" "$tmp/out"; then ok "$what: refused"
  else bad "$what: no message '$pat':"; cat "$tmp/out"; fi
}
export JPSYNC_BENCH_OUT="$tmp/out1" JPSYNC_BENCH_MB_BUILD="$tmp/build"
refuse "no argument" "usage:" sh "$mb"
refuse "three arguments" "usage:" sh "$mb" a b c
refuse "not mimalloc-bench" "is not a mimalloc-bench source tree" sh "$mb" "$tmp"
fake=$tmp/mb
mkdir -p "$fake/bench/cfrac" "$fake/bench/glibc-bench" && : > "$fake/bench.sh"
cat > "$fake/bench/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.5)
project(stand-in C)
add_executable(cfrac cfrac/cfrac.c)
add_executable(glibc-simple glibc-bench/simple.c)
add_subdirectory(security)
EOF
refuse "an unknown test" "unknown test 'nosuch'" env JPSYNC_BENCH_MB_TESTS=nosuch sh "$mb" "$fake"
refuse "a bad thread count" "JPSYNC_BENCH_MB_PROCS='x'" env JPSYNC_BENCH_MB_PROCS=x sh "$mb" "$fake"
refuse "a build folder inside the tree" "must be outside the source tree" \
  env JPSYNC_BENCH_MB_BUILD="$top_srcdir/tests" sh "$mb" "$fake"

# 3. A whole run on the stand-in tree: cfrac allocates and succeeds,
# glibc-simple exits 1; the security folder is absent, as the shadow
# folder's CMakeLists.txt no longer asks for it.
if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null || [ ! -x /usr/bin/time ]; then
  echo "skip: the whole run needs cmake, ninja and /usr/bin/time (scripts/install-deps.sh --bench)"; exit $fail
fi
if case "${SANITIZERS:-no}" in no|"") false ;; *) true ;; esac || [ "${JP_FOREIGN:-no}" = yes ]; then
  echo "skip: the whole run in a sanitizer or cross build (it preloads the allocators natively)"; exit $fail
fi
# cfrac fails (exit 3) when a preload is asked for but jpsync is not
# loaded: run from the build folder with top_builddir=., the driver once
# preloaded a relative path from its own build folder, and ld.so skipped it.
cat > "$fake/bench/cfrac/cfrac.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
int main(void)
{
	if (getenv("LD_PRELOAD") != NULL && dlsym(RTLD_DEFAULT, "jp_alloc") == NULL)
		return 3;
	for (int i = 0; i < 1000; i++)
		free(malloc(64 + i));
	return 0;
}
EOF
printf 'int main(void) { return 1; }\n' > "$fake/bench/glibc-bench/simple.c"
impls=glibc
[ -f "$top_builddir/shim/.libs/libjpsync-preload.so" ] && impls="jpsync glibc"
mb_abs=$(cd "$(dirname "$mb")" && pwd)/$(basename "$mb")
src_abs=$(cd "$top_srcdir" && pwd)
(cd "$top_builddir" && top_srcdir=$src_abs JPSYNC_BENCH_REPS=2 JPSYNC_BENCH_ALLOC_IMPLS=$impls \
  JPSYNC_BENCH_MB_TESTS="cfrac glibc-simple" top_builddir=. sh "$mb_abs" "$fake") \
  > "$tmp/run.md" 2> "$tmp/run.err"
rc=$?
[ $rc -eq 1 ] && ok "a failing test makes the run exit 1" || { bad "run exit status $rc, expected 1"; cat "$tmp/run.err"; }
csv=$tmp/out1/mimalloc-bench.csv
[ "$(head -n 1 "$csv")" = "$h" ] && ok "CSV header" || bad "CSV header '$(head -n 1 "$csv")'"
for im in $impls; do
  n=$(grep -c "^mimalloc-bench,cfrac,1,$im,[12],[0-9][0-9.]*,s,lower,[0-9][0-9]*\$" "$csv")
  [ "$n" -eq 2 ] && ok "two cfrac rows under $im" || { bad "$n cfrac rows under $im"; cat "$csv"; }
  n=$(grep -c "^mimalloc-bench,glibc-simple,1,$im,[12],FAILED,s,lower,\$" "$csv")
  [ "$n" -eq 2 ] && ok "two FAILED glibc-simple rows under $im" || { bad "$n FAILED rows under $im"; cat "$csv"; }
done
grep -q '^| glibc-simple | 1 | FAILED |' "$tmp/run.md" && ok "the table shows FAILED" || { bad "no FAILED cell"; cat "$tmp/run.md"; }
exit $fail
