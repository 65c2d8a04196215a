#!/bin/sh
# report-write.sh DIR: writes the benchmark report of a results folder
# from what the run recorded there: medians.tsv, the PNG charts (gnuplot)
# and summary.md.  report.sh runs it after the drivers; run by hand, it
# rewrites the report of an earlier run without running anything again
# (doc/benchmarks.md).
#
# It reads, in DIR: machine.txt (the machine, the versions and the
# command, written by report.sh), drivers.tsv (one line per driver: name,
# driver, exit status, seconds, result), and each driver's NAME.csv and
# NAME.notes.  The arithmetic and tables are awk (report-read.awk: the
# CSVs; report-calc.awk: medians and verdicts; report-tables.awk: median
# tables; report-rss.awk: peak RSS; report-charts.awk and report-bars.awk:
# the gnuplot scripts; report-main.awk: what is written, in which order);
# summary.md is put together by report-summary.sh.
#
# Exit status: 0 when every driver exited 0 and no row FAILED; 1 when a
# driver failed, wrote no or a malformed CSV, a row FAILED, or a chart
# could not be drawn (everything is written first in every case); 2 on a
# usage error.
set -u
me=report-write.sh
if [ $# -ne 1 ] || [ ! -d "$1" ]; then echo "usage: $me RESULTS-FOLDER" >&2; exit 2; fi
out=$(cd "$1" && pwd) || exit 2
here=$(cd "$(dirname "$0")" && pwd)
AWK=${AWK:-awk}
GNUPLOT=${GNUPLOT:-gnuplot}
tab=$(printf '\t')
for f in machine.txt drivers.tsv; do
  [ -f "$out/$f" ] || { echo "$me: $out/$f is missing: not a results folder of report.sh" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/jpsync-report.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$work/plot"
fail=0

# The facts of the run, as machine.txt records them (the first line of
# each kind).
fact() { sed -n "s/^$1: //p" "$out/machine.txt" | head -n1; }
cpu=$(fact cpu)
nonline=$(fact cores); nonline=${nonline%% online*}
kernel=$(fact kernel)
when=$(fact date)
os=$(fact os); [ "$os" != unknown ] || os=
load0=$(fact 'load average at start'); [ "$load0" != unknown ] || load0=
load1=$(fact 'load average at end'); [ "$load1" != unknown ] || load1=
reps=$(fact repetitions)
quick=$(fact quick)
cmdline=$(fact command)
invoked=
case $cmdline in *' -> '*) invoked=${cmdline%% -> *}; cmdline=${cmdline#* -> } ;; esac
caption="$cpu, $nonline cores, Linux $kernel, $when; median of $reps run(s)"

# The drivers that ran and their CSVs; a driver that was not there is a note.
sed 1d "$out/drivers.tsv" > "$work/drivers.tsv"
: > "$work/notes.md"
csvs=
while IFS=$tab read -r name s _ _ state; do
  if [ "$state" = missing ]; then
    echo "- driver \`$s\` is not in the source tree: skipped." >> "$work/notes.md"
    continue
  fi
  rm -f "$out/$name".png "$out/$name"-*.png
  [ -f "$out/$name.csv" ] && csvs="$csvs $out/$name.csv"
done < "$work/drivers.tsv"

# Medians, tables and chart scripts.
: > "$work/status.tsv"
: > "$work/charts.list"
rm -f "$out/summary.md" "$out/medians.tsv"
if [ -n "$csvs" ]; then
  # shellcheck disable=SC2086
  $AWK -v WORK="$work" -v CAPTION="$caption" -v REPS="$reps" \
    -f "$here/median.awk" -f "$here/report-read.awk" -f "$here/report-calc.awk" \
    -f "$here/report-tables.awk" -f "$here/report-rss.awk" \
    -f "$here/report-charts.awk" -f "$here/report-bars.awk" \
    -f "$here/report-main.awk" $csvs ||
    { echo "$me: the report's awk failed" >&2; fail=1; }
  cp "$work/medians.tsv" "$out/medians.tsv" 2>/dev/null
fi

# The charts, drawn in the results folder.
: > "$work/charts.ok"
if [ -s "$work/charts.list" ]; then
  if command -v "$GNUPLOT" >/dev/null 2>&1; then
    while IFS=$tab read -r gp png bench title; do
      if (cd "$out" && $GNUPLOT "$gp") > "$work/gnuplot.log" 2>&1 && [ -s "$out/$png" ]; then
        printf '%s\t%s\t%s\n' "$bench" "$png" "$title" >> "$work/charts.ok"
      else
        echo "$me: gnuplot failed on $png:" >&2
        cat "$work/gnuplot.log" >&2
        echo "- chart \`$png\` could not be drawn: $(tr '\n' ' ' < "$work/gnuplot.log")" >> "$work/notes.md"
        fail=1
      fi
    done < "$work/charts.list"
  else
    echo "- gnuplot is not installed (\`scripts/install-deps.sh --bench\`): no charts." >> "$work/notes.md"
  fi
fi

# summary.md; report-summary.sh sets fail=1 when a driver's row says FAILED.
# shellcheck source=tests/bench/report-summary.sh
. "$here/report-summary.sh"
write_summary > "$out/summary.md"

echo "$me: $(grep -c . "$work/charts.ok") chart(s); summary: $out/summary.md"
if [ "$fail" -ne 0 ]; then
  echo "$me: FAILED: some benchmark failed (see $out/summary.md)" >&2
  exit 1
fi
exit 0
