#!/bin/sh
# The benchmark report's plumbing (tests/bench/report.sh), on the tiny
# selftest driver instead of the real benchmarks: the CSV, summary.md,
# machine.txt and valid PNG charts are written; medians and the ratio to
# the best peer are right; a skipped peer and a missing driver are notes,
# not failures; a FAILED row, a crashing driver and a malformed CSV make the
# report exit non-zero after writing everything; report-write.sh rewrites
# the same report from a results folder alone, and its arithmetic is
# right on a CSV written here.
# ok() always succeeds, so `test && ok || bad` is an if-then-else here.
# shellcheck disable=SC2015
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: shell plumbing, nothing for valgrind to check"; exit 77; fi
if [ "${JP_FOREIGN:-no}" = yes ]; then
  echo "SKIP: ${JP_HOST:-cross} build: the report runs the benchmark drivers natively (checked on the native build)"; exit 77
fi
if ! command -v gnuplot >/dev/null 2>&1; then
  echo "SKIP: gnuplot is not installed (scripts/install-deps.sh --bench installs gnuplot-nox)"
  exit 77
fi
prog=$top_builddir/tests/bench/selftest-bench
[ -x "$prog" ] || { echo "FAIL: $prog is not built"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
report() { # OUTDIR SCRIPTS [ARGS...]
  o=$1 s=$2; shift 2
  JPSYNC_BENCH_SCRIPTS=$s JPSYNC_BENCH_OUT=$o \
    sh "$top_srcdir/tests/bench/report.sh" "$@" > "$o.log" 2>&1
}

# A PNG: the signature, then an IHDR chunk with non-zero width and height.
png_ok() {
  hex=$(od -An -tx1 -N24 "$1" | tr -d ' \n')
  case $hex in 89504e470d0a1a0a0000000d49484452*) ;; *) return 1 ;; esac
  w=$(od -An -tu1 -j16 -N4 "$1" | awk '{print (($1 * 256 + $2) * 256 + $3) * 256 + $4}')
  h=$(od -An -tu1 -j20 -N4 "$1" | awk '{print (($1 * 256 + $2) * 256 + $3) * 256 + $4}')
  [ "$w" -gt 0 ] && [ "$h" -gt 0 ] && [ "$w" -le 4096 ] && [ "$h" -le 4096 ] || return 1
  echo "${w}x$h"
}
# The median column of a row of medians.tsv.
median_of() { # WORKLOAD THREADS IMPL
  awk -F'\t' -v w="$1" -v t="$2" -v i="$3" '$2 == w && $5 == t && $6 == i {print $7}' "$o/medians.tsv"
}

# 1. A good run, quick (1 repetition, tiny sizes), with a missing driver.
o=$tmp/good
if report "$o" "tests/bench/selftest-bench.sh tests/bench/no-such-bench.sh" --quick; then
  ok "report exit status 0"
else
  bad "report exited $?"; cat "$o.log"
fi
hdr="benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb"
csv=$o/selftest-bench.csv
if [ -f "$csv" ] && [ "$(head -n1 "$csv")" = "$hdr" ]; then ok "CSV with the contract's header"; else bad "no CSV or wrong header in $csv"; fi
# quick: count at 1 and 2 threads, footprint at 2, for 3 implementations, 1 repetition.
n=$(($(wc -l < "$csv") - 1))
[ "$n" -eq 9 ] && ok "9 CSV rows" || bad "$n CSV rows, expected 9"
sum=$o/summary.md
[ -s "$sum" ] && ok "summary.md written" || bad "no summary.md"
[ -s "$o/machine.txt" ] && ok "machine.txt written" || bad "no machine.txt"
for pat in '^cpu: ' '^kernel: ' '^glibc: ' '^jemalloc: ' '^mimalloc: ' '^tcmalloc: ' '^ck: ' '^command: .*report.sh --quick'; do
  grep -q "$pat" "$o/machine.txt" && ok "machine.txt has $pat" || bad "machine.txt lacks $pat"
done
grep -q '^## selftest-bench' "$sum" && ok "summary has the benchmark's section" || bad "no section"
grep -q 'peer_lib: skipped' "$sum" && ok "skipped peer noted" || bad "skipped peer not noted"
grep -q 'no-such-bench.sh.*skipped' "$sum" && ok "missing driver noted" || bad "missing driver not noted"
grep -q '\*\*FAILED\|Overall: FAILED' "$sum" && bad "a good run mentions FAILED" || ok "no FAILED in a good run"
# footprint is deterministic: 2 threads x 256 blocks x 64/96/128 KiB.
m=$(median_of footprint 2 jpsync)
[ "$m" = 33554432 ] && ok "footprint median of jpsync 33554432" || bad "footprint median of jpsync '$m', expected 33554432"
m=$(median_of footprint 2 peer_atomic)
[ "$m" = 67108864 ] && ok "footprint median of peer_atomic 67108864" || bad "footprint median of peer_atomic '$m', expected 67108864"
# jpsync / best peer (lower is better: peer_mutex, 50331648): 0.67, a win.
grep -q '^| 2 | 33.6M | 50.3M | 67.1M | peer_mutex | \*\*0.67 win\*\* |$' "$sum" &&
  ok "footprint row: best peer and ratio" || { bad "footprint row wrong"; grep '^| 2 | 3' "$sum"; }
grep -q '^### Peak RSS' "$sum" && ok "peak RSS table" || bad "no peak RSS table"
# Three rows compared (count is measured, so which way each goes may vary).
n=$(sed -n 's/^- selftest-bench: jpsync against the best peer, row by row: \([0-9]*\) win, \([0-9]*\) par, \([0-9]*\) loss.*/\1 + \2 + \3/p' "$sum")
# shellcheck disable=SC2004 # n is an expression ("3 + 0 + 0"), expanded as text
[ -n "$n" ] && [ $(($n)) -eq 3 ] && ok "verdict over 3 rows" || bad "verdict line wrong: $(grep '^- selftest-bench' "$sum")"
grep -q '^| 1 | .* | .* | .* | peer_[a-z]* | .*[0-9][.][0-9][0-9]' "$sum" &&
  ok "count row at 1 thread has a ratio" || bad "count row at 1 thread has no ratio"
npng=0
for f in "$o"/*.png; do
  [ -e "$f" ] || continue
  if d=$(png_ok "$f"); then ok "$(basename "$f") is a PNG of $d"; npng=$((npng + 1)); else bad "$(basename "$f") is not a valid PNG"; fi
  grep -q "($(basename "$f"))" "$sum" || bad "$(basename "$f") is not in summary.md"
done
for c in selftest-bench-count.png selftest-bench-bytes.png selftest-bench-rss.png; do
  [ -f "$o/$c" ] && ok "chart $c" || bad "no chart $c"
done
if command -v file >/dev/null 2>&1 && [ -f "$o/selftest-bench-count.png" ]; then
  file "$o/selftest-bench-count.png" | grep -q 'PNG image data, [1-9][0-9]* x [1-9]' &&
    ok "file(1) agrees" || bad "file(1): $(file "$o/selftest-bench-count.png")"
fi
[ "$npng" -ge 1 ] || bad "no PNG at all"

# 2. A run whose correctness check fails: FAILED rows, exit non-zero, and
# still the whole folder.
o=$tmp/failed
if JPSYNC_SELFTEST_FAIL=peer_mutex report "$o" tests/bench/selftest-bench.sh --quick; then
  bad "report exited 0 with FAILED rows"
else
  ok "report exit status non-zero with FAILED rows"
fi
grep -q ',peer_mutex,1,FAILED,' "$o/selftest-bench.csv" && ok "FAILED rows in the CSV" || bad "no FAILED row in the CSV"
grep -q '\*\*FAILED\*\* 1/1' "$o/summary.md" && ok "FAILED cell in the table" || bad "no FAILED cell in summary.md"
grep -q 'Overall: FAILED' "$o/summary.md" && ok "overall FAILED" || bad "summary.md not marked FAILED"
ls "$o"/*.png >/dev/null 2>&1 && ok "charts still drawn" || bad "no charts after a failure"

# 3. A driver that crashes, and one that writes a malformed CSV.
cat > "$tmp/crash-bench.sh" <<'SH'
#!/bin/sh
echo "benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb" > "$JPSYNC_BENCH_OUT/crash-bench.csv"
kill -SEGV $$
SH
cat > "$tmp/junk-bench.sh" <<'SH'
#!/bin/sh
printf 'benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb\njunk-bench,w,1,jpsync,1,fast,ops/s,higher,\n' > "$JPSYNC_BENCH_OUT/junk-bench.csv"
SH
o=$tmp/crash
if report "$o" "$tmp/crash-bench.sh $tmp/junk-bench.sh"; then
  bad "report exited 0 with a crashing driver"
else
  ok "report exit status non-zero with a crashing driver"
fi
grep -q '^| crash-bench | .*FAILED (exit status' "$o/summary.md" && ok "crash marked FAILED" || bad "crash not marked"
grep -q '^| junk-bench | .*FAILED (1 malformed' "$o/summary.md" && ok "malformed CSV marked FAILED" || bad "malformed CSV not marked"

# 4. The report rewritten from a results folder alone (report-write.sh,
# as for the committed tests/bench/results/): the same summary.md,
# medians.tsv and charts, byte for byte, and stale charts removed.
o=$tmp/good
printf 'benchmark\tdriver\texit_status\tseconds\tresult\n' > "$tmp/drivers.head"
head -n1 "$o/drivers.tsv" | cmp -s - "$tmp/drivers.head" && ok "drivers.tsv header" || bad "drivers.tsv header: $(head -n1 "$o/drivers.tsv")"
grep -q "^no-such-bench$(printf '\t')tests/bench/no-such-bench.sh$(printf '\t')-$(printf '\t')-$(printf '\t')missing\$" "$o/drivers.tsv" &&
  ok "missing driver in drivers.tsv" || bad "missing driver not in drivers.tsv"
r=$tmp/rewritten
mkdir "$r"
for f in machine.txt drivers.tsv selftest-bench.csv selftest-bench.notes; do cp "$o/$f" "$r/"; done
: > "$r/selftest-bench-stale.png"
if sh "$top_srcdir/tests/bench/report-write.sh" "$r" > "$r.log" 2>&1; then ok "report-write.sh exit status 0"; else bad "report-write.sh exited $?"; cat "$r.log"; fi
[ -e "$r/selftest-bench-stale.png" ] && bad "a stale chart was left" || ok "stale chart removed"
for f in "$o"/summary.md "$o"/medians.tsv "$o"/*.png; do
  cmp -s "$f" "$r/${f##*/}" && ok "rewritten ${f##*/} is the same" || bad "rewritten ${f##*/} differs"
done
sh "$top_srcdir/tests/bench/report-write.sh" "$tmp" > /dev/null 2>&1
[ $? -eq 2 ] && ok "report-write.sh: a folder without machine.txt is refused" || bad "report-write.sh took a folder without machine.txt"

# 5. The arithmetic on a CSV written here: medians of an odd and an even
# number of runs, a cell with fewer runs than asked, a FAILED cell, a loss
# named in the verdict, lower-is-better, and peak RSS within 25%.
r=$tmp/fixed
mkdir "$r"
printf 'date: D\ncpu: C\ncores: 2 online (2 in /proc/cpuinfo)\nkernel: K\nos: O\nload average at start: 1\nrepetitions: 3\nquick: 0\ncommand: make bench-report -> report.sh\nload average at end: 2\n' > "$r/machine.txt"
printf 'benchmark\tdriver\texit_status\tseconds\tresult\nfix-bench\tfix-bench.sh\t0\t1\tok\n' > "$r/drivers.tsv"
: > "$r/fix-bench.notes"
{
  echo "$hdr"
  for rep in 1 2 3; do
    echo "fix-bench,ops,1,jpsync,$rep,$((rep * 10)),op/s,higher,1000"
    echo "fix-bench,ops,1,peer_a,$rep,$((rep * 20)),op/s,higher,1100"
    echo "fix-bench,ops,2,jpsync,$rep,100,op/s,higher,1000"
    echo "fix-bench,ops,2,peer_a,$rep,$((rep == 3 ? 1 : 50)),op/s,higher,1000"
    echo "fix-bench,lat,1,jpsync,$rep,$((rep == 2 ? 0 : 4)),us,lower,"
    echo "fix-bench,lat,1,peer_a,$rep,$([ $rep = 1 ] && echo FAILED || echo 5),us,lower,"
  done
  echo "fix-bench,ops,2,peer_b,1,7,op/s,higher,"
  echo "fix-bench,ops,2,peer_b,2,9,op/s,higher,"
} > "$r/fix-bench.csv"
sh "$top_srcdir/tests/bench/report-write.sh" "$r" > "$r.log" 2>&1
[ $? -eq 1 ] && ok "FAILED cell: report-write.sh exit status 1" || bad "FAILED cell not refused by report-write.sh"
sum=$r/summary.md
chk() { # LINE WHAT
  grep -qxF -e "$1" "$sum" && ok "$2" || { bad "$2: no line '$1'"; }
}
chk '| 1 | 20 | 40 |  | peer_a | *0.50 loss* |' "ops at 1 thread: medians 20 and 40, a loss"
chk '| 2 | 100 | 50 | 8 (n=2) | peer_a | **2.00 win** |' "ops at 2 threads: a median of 2 runs, a win"
chk '| 1 | 4 | **FAILED** 1/3 |  | - |' "lat: a FAILED cell, no best peer, no ratio"
# shellcheck disable=SC2016 # the backquotes are Markdown
chk 'Command: `make bench-report, i.e. report.sh` with' "command from machine.txt"
chk '- fix-bench: jpsync against the best peer, row by row: 1 win, 0 par, 1 loss (losses: ops at 1 thread: jpsync 0.50 of peer_a). ' "verdict line"
grep -q '^Peak RSS: 1.0 to 1.1 MiB for every implementation' "$sum" && ok "peak RSS within 25%: one line" || bad "peak RSS line missing"
grep -q '^fix-bench	ops	op/s	higher	2	peer_b	8	2	0	$' "$r/medians.tsv" && ok "medians.tsv row" || bad "medians.tsv row of peer_b wrong"

# 6. A usage error.
JPSYNC_BENCH_SCRIPTS="" sh "$top_srcdir/tests/bench/report.sh" --bogus >/dev/null 2>&1
[ $? -eq 2 ] && ok "unknown option: exit 2" || bad "unknown option not refused"

[ "$fail" -eq 0 ] || { echo "--- last report log"; cat "$tmp/good.log"; }
exit "$fail"
