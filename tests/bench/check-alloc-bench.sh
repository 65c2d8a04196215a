#!/bin/sh
# The allocator benchmark still works: every workload of tests/bench/alloc-bench
# runs at a tiny size on glibc's malloc (1 and 3 threads), prints its result
# line and passes its own pattern check (sized and unsized name the object
# their operator delete came from); a bad option is refused; and the
# driver, in quick mode on glibc alone, writes the contract's CSV header and
# one valid row per run, and prints the median table.  alloc-pc's
# producer/consumer workloads and its map-strings run too, where C++ is
# built.  Speed is not checked
# here (doc/benchmarks.md: make bench).
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
prog=$top_builddir/tests/bench/alloc-bench
[ -x "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
# A cross build's program runs under its emulator (tests/target-exec.sh).
if [ -n "${JP_EMULATOR:-}" ]; then tx="sh $top_srcdir/tests/target-exec.sh"; else tx=env; fi

for wl in balanced alloc-heavy small xthread larson realloc \
          sized unsized xsizes falseshare shortmixed; do
  case $wl in sized|unsized) del=' delete=?*' ;; *) del= ;; esac
  for t in 1 3; do
    if line=$(env -u LD_PRELOAD $tx "$prog" -w "$wl" -t "$t" -n 20000 2>"$tmp/err"); then
      case $line in
        "alloc-bench: workload=$wl threads=$t ops="*" ops_per_sec="*" peak_rss_kb="*[0-9]$del" malloc="*)
          echo "ok: $wl, $t threads: ${line#alloc-bench: }" ;;
        *) echo "FAIL: $wl, $t threads: unexpected output '$line'"; fail=1 ;;
      esac
    else
      echo "FAIL: $wl, $t threads: exit status $?"; cat "$tmp/err"; fail=1
    fi
  done
done

# alloc-bench-guard (guard-cost.sh): the same workloads pass their checks
# with a canary around every block, and the C++ ones, which it cannot
# wrap, are refused rather than run unguarded.
gprog=$top_builddir/tests/bench/alloc-bench-guard
[ -x "$gprog" ] || { echo "FAIL: $gprog not built"; exit 1; }
for wl in balanced alloc-heavy small xthread larson realloc xsizes falseshare shortmixed; do
  if line=$(env -u LD_PRELOAD $tx "$gprog" -w "$wl" -t 3 -n 20000 2>"$tmp/err"); then
    case $line in
      "alloc-bench: workload=$wl threads=3 ops="*" malloc="*) echo "ok: guard, $wl" ;;
      *) echo "FAIL: guard, $wl: unexpected output '$line'"; fail=1 ;;
    esac
  else
    echo "FAIL: guard, $wl: exit status $?"; cat "$tmp/err"; fail=1
  fi
done
if env -u LD_PRELOAD $tx "$gprog" -w sized -t 1 -n 2000 >/dev/null 2>"$tmp/err"; then
  echo "FAIL: guard ran sized, whose operator new it does not wrap"; fail=1
elif grep -q "does not wrap" "$tmp/err"; then echo "ok: guard refuses sized"
else echo "FAIL: guard, sized: wrong message: $(cat "$tmp/err")"; fail=1
fi

# The producer/consumer workloads (C++, built where configure found g++).
pcprog=$top_builddir/tests/bench/alloc-pc
npc=0 nmap=0
if [ -x "$pcprog" ]; then
  npc=6 nmap=2
  # pc_line WL THREADS OPS ARG...: alloc-pc -w WL ARG... prints its line.
  pc_line() {
    _wl=$1 _t=$2 _ops=$3; shift 3
    if line=$(env -u LD_PRELOAD $tx "$pcprog" -w "$_wl" "$@" 2>"$tmp/err"); then
      case $line in
        "alloc-bench: workload=$_wl threads=$_t ops=$_ops seconds="*" ops_per_sec="*" peak_rss_kb="*[0-9]" malloc="*)
          echo "ok: $_wl: ${line#alloc-bench: }" ;;
        *) echo "FAIL: $_wl: unexpected output '$line'"; fail=1 ;;
      esac
    else
      echo "FAIL: $_wl: exit status $?"; cat "$tmp/err"; fail=1
    fi
  }
  for wl in pc-deque-2to2 pc-deque-1to4 pc-deque-4to1 pc-mpmc-2to2 pc-mpmc-1to4 pc-mpmc-4to1; do
    s=${wl##*-}
    pc_line "$wl" $(( ${s%to*} + ${s#*to} )) 5000 -n 5000
  done
  # map-strings: 2 threads, one map of 40,000 entries each.
  pc_line map-strings 2 80000 -t 2 -n 80000
  for bad in 0 129 2x; do
    if $tx "$pcprog" -w map-strings -t "$bad" >/dev/null 2>"$tmp/err"; then
      echo "FAIL: alloc-pc accepted -t $bad"; fail=1
    elif grep -q "bad thread count '$bad'" "$tmp/err"; then
      echo "ok: alloc-pc refuses -t $bad"
    else
      echo "FAIL: no clear message for -t $bad:"; cat "$tmp/err"; fail=1
    fi
  done
  for bad in pc-list-2to2 pc-deque-0to2 pc-mpmc-2to65 pc-deque-2to2x; do
    if $tx "$pcprog" -w "$bad" >/dev/null 2>"$tmp/err"; then
      echo "FAIL: alloc-pc accepted '$bad'"; fail=1
    elif grep -q "unknown workload '$bad'" "$tmp/err"; then
      echo "ok: alloc-pc refuses '$bad'"
    else
      echo "FAIL: no clear message for '$bad':"; cat "$tmp/err"; fail=1
    fi
  done
else
  echo "note: $pcprog not built (no C++ compiler): the pc-* workloads not checked"
fi

if $tx "$prog" -w no-such-workload >/dev/null 2>"$tmp/err"; then
  echo "FAIL: an unknown workload was accepted"; fail=1
elif grep -q "unknown workload 'no-such-workload'" "$tmp/err"; then
  echo "ok: an unknown workload is refused"
else
  echo "FAIL: no clear message for an unknown workload:"; cat "$tmp/err"; fail=1
fi

# The driver, as make bench runs it, on glibc alone, one repetition.  In a
# sanitizer build malloc is the sanitizer's, which the driver rightly reports
# as "not glibc": the driver part is for normal builds (SANITIZERS is "no"
# in those, as configure's --enable-sanitizers defaults).
if case "${SANITIZERS:-no}" in no|"") false ;; *) true ;; esac; then
  echo "skip: the driver check in a sanitizer build ($SANITIZERS)"
elif [ "${JP_FOREIGN:-no}" = yes ]; then
  # The driver runs the benchmark natively and preloads the build
  # machine's peer allocators: it is checked on the native build.
  echo "skip: the driver check in a ${JP_HOST:-cross} build (it runs the benchmark natively)"
elif JPSYNC_BENCH_QUICK=1 JPSYNC_BENCH_REPS=1 JPSYNC_BENCH_OUT="$tmp/out" \
   JPSYNC_BENCH_ALLOC_IMPLS=glibc JPSYNC_BENCH_ALLOC_THREADS="1 2" \
   JPSYNC_BENCH_ALLOC_SCALE=0.002 JPSYNC_BENCH_ALLOC_PAIR=0 \
   top_srcdir="$top_srcdir" top_builddir="$top_builddir" \
   sh "$top_srcdir/tests/bench/alloc-bench.sh" >"$tmp/table" 2>"$tmp/err"; then
  csv=$tmp/out/alloc-bench.csv
  hdr='benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb'
  if [ "$(head -n 1 "$csv")" != "$hdr" ]; then
    echo "FAIL: CSV header is '$(head -n 1 "$csv")'"; fail=1
  fi
  rows=$(tail -n +2 "$csv" | grep -c '^alloc-bench,[a-z-]*,[12],glibc,1,[0-9][0-9.]*,ops/s,higher,[0-9][0-9]*$' || true)
  pcrows=$(tail -n +2 "$csv" | grep -c '^alloc-bench,pc-[a-z]*-[0-9]to[0-9],[45],glibc,1,[0-9][0-9.]*,ops/s,higher,[0-9][0-9]*$' || true)
  if [ "$rows" -eq $((22 + nmap)) ] && [ "$pcrows" -eq "$npc" ] &&
     [ "$(wc -l < "$csv")" -eq $((23 + npc + nmap)) ]; then
    echo "ok: the driver wrote $((22 + npc + nmap)) valid rows (11 workloads at 2 thread counts, $npc producer/consumer shapes, map-strings at $nmap)"
  else
    echo "FAIL: expected $((22 + nmap)) + $npc valid rows, got $rows + $pcrows:"; cat "$csv"; fail=1
  fi
  if grep -q '^| realloc | 2 | [0-9]' "$tmp/table"; then
    echo "ok: the driver printed the median table"
  else
    echo "FAIL: no median table:"; cat "$tmp/table"; fail=1
  fi
else
  echo "FAIL: the driver failed:"; cat "$tmp/err" "$tmp/table"; fail=1
fi
exit $fail
