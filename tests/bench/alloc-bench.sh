#!/bin/sh
# alloc-bench.sh - the allocator benchmark driver (contract: doc/benchmarks.md).
#
# For each repetition, workload and thread count, runs tests/bench/alloc-bench
# (tests/bench/alloc-pc for the producer/consumer workloads pc-*, C++ new
# and delete of messages handed between threads, and for map-strings,
# threads that each build and drop a std::map) once under every
# implementation, in an order rotated each repetition:
# jpsync (LD_PRELOAD of the build tree's shim/.libs/libjpsync-preload.so),
# glibc (nothing preloaded), jemalloc, mimalloc and tcmalloc (Debian's
# libraries through LD_PRELOAD), and mimalloc3 and snmalloc (mimalloc 3.4
# and snmalloc built from their sources by tests/bench/build-peers.sh into
# $JPSYNC_BENCH_PEERS_DIR; skipped, with a note, without it).  Then counts the instructions of one
# free+malloc pair of 64 bytes for each with valgrind --tool=callgrind
# (tests/bench/alloc-pair at two N; the difference cancels start-up).
#
# Writes $JPSYNC_BENCH_OUT/alloc-bench.csv and alloc-bench.notes, prints the
# tables of medians (markdown, as in doc/benchmarks.md) and exits 1
# when any run crashed, timed out or failed its check.
#
# Environment (besides the contract's JPSYNC_BENCH_REPS, _QUICK, _OUT):
#   JPSYNC_BENCH_ALLOC_IMPLS      implementations to run (default: all seven)
#   JPSYNC_BENCH_PEERS_DIR        build-peers.sh's OUTDIR (mimalloc3, snmalloc)
#   JPSYNC_BENCH_ALLOC_WORKLOADS  workloads (default: alloc-bench's eleven,
#                                 the six pc-QUEUE-PtoC of alloc-pc and its
#                                 map-strings)
#   JPSYNC_BENCH_ALLOC_THREADS    thread counts for every workload but pc-*,
#                                 whose shape sets P + C threads (default:
#                                 1 2 8 64 300, quick 1 8, for the first six;
#                                 1 2 (quick 1) for sized, unsized, shortmixed,
#                                 map-strings;
#                                 2 8 (quick 2) for xsizes, falseshare)
#   JPSYNC_BENCH_ALLOC_SCALE      work scale (default 1; quick 0.01)
#   JPSYNC_BENCH_ALLOC_PAIR       0: skip the callgrind instruction count
#   JPSYNC_BENCH_ALLOC_TIMEOUT    seconds before a run counts as hung (300)
#   JPSYNC_BENCH_JPSYNC_PRELOAD   jpsync's module, if not the build tree's
set -u

name=alloc-bench
. "$(dirname "$0")/driver-common.sh"
prog=$top_builddir/tests/bench/alloc-bench
pairprog=$top_builddir/tests/bench/alloc-pair
pcprog=$top_builddir/tests/bench/alloc-pc	# the pc-* workloads (C++)

if [ "$quick" = 1 ]; then
  def_threads="1 8"; few1=1; few2=2; def_scale=0.01; pair_n1=10000; pair_n2=110000
else
  def_threads="1 2 8 64 300"; few1="1 2"; few2="2 8"; def_scale=1; pair_n1=100000; pair_n2=1100000
fi
impls=${JPSYNC_BENCH_ALLOC_IMPLS:-jpsync glibc jemalloc mimalloc tcmalloc mimalloc3 snmalloc}
peers=${JPSYNC_BENCH_PEERS_DIR:-}
pc_workloads="pc-deque-2to2 pc-deque-1to4 pc-deque-4to1 pc-mpmc-2to2 pc-mpmc-1to4 pc-mpmc-4to1"
workloads=${JPSYNC_BENCH_ALLOC_WORKLOADS:-balanced alloc-heavy small xthread larson realloc sized unsized xsizes falseshare shortmixed $pc_workloads map-strings}

# threads_for WORKLOAD: its thread counts.  The shapes of mimalloc-bench
# run at a few counts around the 2 cores of the machine, which keeps
# the driver's time near what it was with the first six alone.
threads_for() {
  case $1 in  # a producer/consumer shape names its threads: P + C
    pc-*to*) _pc=${1##*-}; echo $(( ${_pc%to*} + ${_pc#*to} )); return ;;
  esac
  if [ -n "${JPSYNC_BENCH_ALLOC_THREADS:-}" ]; then
    echo "$JPSYNC_BENCH_ALLOC_THREADS"; return
  fi
  case $1 in
    sized|unsized|shortmixed|map-strings) echo "$few1" ;;
    xsizes|falseshare) echo "$few2" ;;
    *) echo "$def_threads" ;;
  esac
}
scale=${JPSYNC_BENCH_ALLOC_SCALE:-$def_scale}
do_pair=${JPSYNC_BENCH_ALLOC_PAIR:-1}
run_timeout=${JPSYNC_BENCH_ALLOC_TIMEOUT:-300}

for p in "$prog" "$pairprog"; do
  [ -x "$p" ] || { echo "alloc-bench.sh: $p not built (make check builds it)" >&2; exit 2; }
done
if [ ! -x "$pcprog" ]; then
  # Built only where configure found a C++ compiler.
  _wl=
  for wl in $workloads; do
    case $wl in pc-*|map-strings) ;; *) _wl="$_wl $wl" ;; esac
  done
  [ "$_wl" = " $(echo $workloads)" ] || {
    echo "$pcprog not built (no C++ compiler): the pc-* and map-strings workloads skipped" >> "$notes"
    echo "note: $pcprog not built: the pc-* and map-strings workloads skipped" >&2
  }
  workloads=$_wl
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------- implementations
. "$(dirname "$0")/alloc-impls.sh"

failures=0

# ------------------------------------------------------------ throughput/RSS
rep=1
while [ $rep -le "$reps" ]; do
  for wl in $workloads; do
    for thr in $(threads_for "$wl"); do
      echo "alloc-bench: repetition $rep/$reps: $wl, $thr threads" >&2
      for impl in $(rotate $((rep - 1)) $active); do
        case $wl in pc-*|map-strings) p=$pcprog ;; *) p=$prog ;; esac
        line=$(run_env "$impl" timeout "$run_timeout" "$p" -w "$wl" -t "$thr" -s "$scale" 2>"$tmp/err")
        rc=$?
        val=$(printf '%s\n' "$line" | sed -n 's/.* ops_per_sec=\([0-9.]*\).*/\1/p')
        rss=$(printf '%s\n' "$line" | sed -n 's/.* peak_rss_kb=\([0-9]*\).*/\1/p')
        prov=$(printf '%s\n' "$line" | sed -n 's/.* malloc=\(.*\)$/\1/p')
        # sized, unsized: operator delete is the allocator's own (glibc's
        # run: libstdc++'s, which calls free).
        del=$(printf '%s\n' "$line" | sed -n 's/.* delete=\([^ ]*\) .*/\1/p')
        why=
        if [ $rc -eq 124 ]; then why="timed out after ${run_timeout}s"
        elif [ $rc -ne 0 ]; then why="exit status $rc"
        elif [ -z "$val" ] || [ -z "$rss" ]; then why="no result line"
        elif ! provider_ok "$impl" "$prov"; then why="malloc came from $prov: the preload did not take effect"
        elif [ -n "$del" ] && [ "$impl" = glibc ]; then
          case $del in */libstdc++*) ;; *) why="operator delete came from $del, not libstdc++" ;; esac
        elif [ -n "$del" ] && ! provider_ok "$impl" "$del"; then
          why="operator delete came from $del: the allocator's own was not used"
        fi
        if [ -n "$why" ]; then
          failures=$((failures + 1))
          echo "alloc-bench: FAILED: $impl $wl $thr threads repetition $rep: $why" >&2
          tail -n 5 "$tmp/err" | sed 's/^/  /' >&2
          echo "alloc-bench,$wl,$thr,$impl,$rep,FAILED,ops/s,higher," >> "$csv"
        else
          echo "alloc-bench,$wl,$thr,$impl,$rep,$val,ops/s,higher,$rss" >> "$csv"
        fi
      done
    done
  done
  rep=$((rep + 1))
done

# ------------------------------------------------- instructions per pair
# Deterministic (same binary, same input, same count whatever the load), so
# counted once per implementation, as repetition 1.
if [ "$do_pair" = 0 ]; then
  :
elif ! command -v valgrind >/dev/null 2>&1; then
  msg="pair64-instructions: valgrind not installed; instruction counts skipped"
  echo "$msg" >> "$notes"; echo "note: $msg" >&2
else
  # Four ways to free the block: free, the C sized free (free_sized or the
  # allocator's own: alloc-pair's comment), C++ operator delete and sized
  # operator delete (alloc-pair-cxx, when built).  A sized free that the
  # process lacks (glibc before 2.39: exit 3) is a note, not a failure.
  for impl in $active; do
   # snmalloc 0.7 cannot start under valgrind ("Failed to initialise
   # snmalloc": its address-space reservation), so it is not counted.
   if [ "$impl" = snmalloc ]; then
     echo "pair64-instructions: snmalloc does not start under valgrind; not counted" >> "$notes"
     continue
   fi
   for variant in pair64 pair64-sized pair64-delete pair64-sized-delete; do
    case $variant in
      pair64) vprog=$pairprog; vmode=free ;;
      pair64-sized) vprog=$pairprog; vmode=sized ;;
      pair64-delete) vprog=$pairprog-cxx; vmode=delete ;;
      pair64-sized-delete) vprog=$pairprog-cxx; vmode=sized ;;
    esac
    [ -x "$vprog" ] || continue
    echo "alloc-bench: $variant-instructions: $impl" >&2
    why=; tot1=; tot2=
    for n in $pair_n1 $pair_n2; do
      line=$(run_env "$impl" timeout "$run_timeout" valgrind --tool=callgrind \
        --callgrind-out-file="$tmp/cg.$n" "$vprog" "$n" "$vmode" 2>"$tmp/err")
      rc=$?
      prov=$(printf '%s\n' "$line" | sed -n 's/.* malloc=\(.*\)$/\1/p')
      tot=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$tmp/cg.$n" 2>/dev/null | head -n 1)
      [ -n "$tot" ] || tot=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$tmp/cg.$n" 2>/dev/null | head -n 1)
      if [ $rc -eq 3 ]; then why=none
      elif [ $rc -ne 0 ]; then why="exit status $rc under callgrind"
      elif [ -z "$tot" ]; then why="no callgrind total"
      elif ! provider_ok "$impl" "$prov"; then why="malloc came from $prov: the preload did not take effect"
      fi
      [ -n "$why" ] && break
      if [ "$n" = "$pair_n1" ]; then tot1=$tot; else tot2=$tot; fi
      rm -f "$tmp/cg.$n"
    done
    if [ "$why" = none ]; then
      echo "$variant-instructions: $impl has no sized free (free_sized, sdallocx, tc_free_sized, mi_free_size); not measured" >> "$notes"
    elif [ -n "$why" ]; then
      failures=$((failures + 1))
      echo "alloc-bench: FAILED: $impl $variant-instructions: $why" >&2
      tail -n 5 "$tmp/err" | sed 's/^/  /' >&2
      echo "alloc-bench,$variant-instructions,1,$impl,1,FAILED,instructions,lower," >> "$csv"
    else
      per=$(awk -v a="$tot1" -v b="$tot2" -v n1="$pair_n1" -v n2="$pair_n2" \
        'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }')
      echo "alloc-bench,$variant-instructions,1,$impl,1,$per,instructions,lower," >> "$csv"
    fi
   done
  done
fi

# ------------------------------------------------------------------ tables
awk -F, -v reps="$reps" -v cols="$impls" "$median_awk"'
BEGIN { nim = split(cols, imorder, " ") }   # a column for each, measured or not
function cell(key, v, scale, fmt) {
  if (!(key in seen)) return "-"
  if (cnt[key] == 0) return "FAILED"
  return sprintf(fmt, v / scale) (bad[key] ? "!" : "")
}
NR == 1 { next }
{
  wl = $2; thr = $3; im = $4
  g = wl SUBSEP thr
  if (!(g in gseen)) { gseen[g] = 1; gorder[++ng] = g }
  k = wl SUBSEP thr SUBSEP im
  seen[k] = 1
  if ($6 == "FAILED") { bad[k] = 1; next }
  cnt[k]++; vals[k, cnt[k]] = $6 + 0
  if ($9 != "") { rcnt[k]++; rvals[k, rcnt[k]] = $9 + 0 }
}
function header(title,    i, s, d) {
  print ""; print title; print ""
  s = "| workload | threads |"; d = "|---|---:|"
  for (i = 1; i <= nim; i++) { s = s " " imorder[i] " |"; d = d "---:|" }
  print s " jpsync / best peer |"; print d "---|"
}
END {
  # Throughput.
  header("Throughput: median of " reps " runs, million allocations per second (higher is better)")
  for (x = 1; x <= ng; x++) {
    split(gorder[x], p, SUBSEP)
    if (p[1] ~ /^pair64/) continue
    s = "| " p[1] " | " p[2] " |"; best = ""; bestim = ""
    for (i = 1; i <= nim; i++) {
      k = gorder[x] SUBSEP imorder[i]; m = median(vals, k, cnt[k]); med[imorder[i]] = m
      s = s " " cell(k, m, 1e6, "%.2f") " |"
      if (imorder[i] != "jpsync" && m != "" && (best == "" || m > best)) { best = m; bestim = imorder[i] }
    }
    r = "-"
    if (med["jpsync"] != "" && best != "" && best > 0) r = sprintf("%.2f (%s)", med["jpsync"] / best, bestim)
    print s " " r " |"
  }
  # Peak RSS.
  header("Peak RSS: median of " reps " runs, MiB (lower is better); ratio to the leanest of the other allocators (glibc aside)")
  for (x = 1; x <= ng; x++) {
    split(gorder[x], p, SUBSEP)
    if (p[1] ~ /^pair64/) continue
    s = "| " p[1] " | " p[2] " |"; best = ""; bestim = ""
    for (i = 1; i <= nim; i++) {
      im = imorder[i]; k = gorder[x] SUBSEP im; m = median(rvals, k, rcnt[k]); med[im] = m
      s = s " " cell(k, m, 1024, "%.1f") " |"
      if (im != "jpsync" && im != "glibc" && m != "" && (best == "" || m < best)) { best = m; bestim = im }
    }
    r = "-"
    if (med["jpsync"] != "" && best != "" && best > 0) r = sprintf("%.2f (%s)", med["jpsync"] / best, bestim)
    print s " " r " |"
  }
  # Instructions per pair, a row for each way to free.
  any = 0
  for (x = 1; x <= ng; x++) { split(gorder[x], p, SUBSEP); if (p[1] ~ /^pair64/) any = 1 }
  if (any) {
    print ""; print "Instructions per free+malloc pair of 64 bytes, one thread (callgrind; lower is better; target for jpsync: < 45)"; print ""
    s = "| freed with |"; d = "|---|"
    for (i = 1; i <= nim; i++) { s = s " " imorder[i] " |"; d = d "---:|" }
    print s " jpsync / best peer |"; print d "---|"
    nv = split("pair64 pair64-sized pair64-delete pair64-sized-delete", vorder, " ")
    vname["pair64"] = "free"; vname["pair64-sized"] = "sized free (C)"
    vname["pair64-delete"] = "operator delete"; vname["pair64-sized-delete"] = "sized operator delete"
    for (v = 1; v <= nv; v++) {
      w = vorder[v] "-instructions"; have = 0
      for (i = 1; i <= nim; i++) if ((w SUBSEP 1 SUBSEP imorder[i]) in seen) have = 1
      if (!have) continue
      s = "| " vname[vorder[v]] " |"; best = ""; bestim = ""
      for (i = 1; i <= nim; i++) {
        k = w SUBSEP 1 SUBSEP imorder[i]; m = median(vals, k, cnt[k]); med[imorder[i]] = m
        s = s " " cell(k, m, 1, "%.1f") " |"
        if (imorder[i] != "jpsync" && m != "" && (best == "" || m < best)) { best = m; bestim = imorder[i] }
      }
      r = "-"
      if (med["jpsync"] != "" && best != "" && best > 0) r = sprintf("%.2f (%s)", med["jpsync"] / best, bestim)
      print s " " r " |"
    }
  }
  print ""
  print "(\"!\": some runs of that cell failed; \"-\": not measured; see alloc-bench.notes)"
}' "$csv"

if [ -s "$notes" ]; then
  echo ""
  echo "Notes:"
  sed 's/^/  /' "$notes"
fi
echo ""
echo "CSV: $csv"
if [ $failures -ne 0 ]; then
  echo "alloc-bench: $failures run(s) FAILED" >&2
  exit 1
fi
exit 0
