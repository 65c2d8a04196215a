#!/bin/sh
# report.sh: run every benchmark driver (the driver contract of
# doc/benchmarks.md), then write a results folder with the drivers' CSVs,
# summary.md (medians, jpsync against the best peer, notes, versions),
# machine.txt and PNG charts drawn with gnuplot.  `make bench-report` and
# `make bench-report-quick` run it from the build tree.
#
# Exit status: 0 when every driver exited 0 and no row FAILED; 1 when a
# driver failed, crashed, timed out, wrote no or a malformed CSV, a row
# FAILED, or a chart could not be drawn (the folder is written first in
# every case); 2 on a usage error.  A driver that is not there, a peer that
# is not installed and a missing gnuplot are notes in summary.md, not
# failures.
set -u

me=report.sh
usage() {
  cat <<EOF
usage: $me [--quick] [--reps N] [--out DIR] [--timeout SECONDS]

Runs the benchmark drivers (JPSYNC_BENCH_SCRIPTS, or the bench_scripts of
the build tree's Makefile) and writes CSVs, summary.md, machine.txt and PNG
charts into the results folder.  Run it in the build tree, or set
top_builddir.

  --quick          JPSYNC_BENCH_QUICK=1 for every driver, 1 repetition
                   unless --reps or JPSYNC_BENCH_REPS says otherwise
  --reps N         repetitions (JPSYNC_BENCH_REPS; default 5, quick 1)
  --out DIR        results folder (JPSYNC_BENCH_OUT; default
                   tests/bench/results/YYYYmmdd-HHMMSS in the build tree)
  --timeout S      stop a driver after S seconds and mark it FAILED
                   (JPSYNC_BENCH_TIMEOUT; default none, quick 150)
EOF
}

quick=${JPSYNC_BENCH_QUICK:-0}
reps=${JPSYNC_BENCH_REPS:-}
out=${JPSYNC_BENCH_OUT:-}
limit=${JPSYNC_BENCH_TIMEOUT:-}
cmdline="$0${*:+ $*}"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --reps|--out|--timeout)
      [ $# -ge 2 ] || { echo "$me: $1 needs a value" >&2; usage >&2; exit 2; }
      case $1 in --reps) reps=$2 ;; --out) out=$2 ;; --timeout) limit=$2 ;; esac
      shift ;;
    --reps=*) reps=${1#*=} ;;
    --out=*) out=${1#*=} ;;
    --timeout=*) limit=${1#*=} ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$me: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[ "$quick" = 1 ] || quick=0
if [ -z "$reps" ]; then
  if [ "$quick" = 1 ]; then reps=1; else reps=5; fi
fi
case $reps in ''|*[!0-9]*|0) echo "$me: repetitions '$reps' is not a positive integer" >&2; exit 2 ;; esac
if [ -z "$limit" ]; then
  if [ "$quick" = 1 ]; then limit=150; else limit=0; fi
fi
case $limit in *[!0-9]*) echo "$me: timeout '$limit' is not a number of seconds" >&2; exit 2 ;; esac

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
if [ -z "${top_builddir:-}" ]; then
  if [ -f config.status ]; then
    top_builddir=$PWD
  else
    echo "$me: run it in the build tree (where config.status is), or set top_builddir" >&2
    exit 2
  fi
fi
top_srcdir=$(cd "$top_srcdir" && pwd) && top_builddir=$(cd "$top_builddir" && pwd) || exit 2
export top_srcdir top_builddir
MAKE=${MAKE:-make}
AWK=${AWK:-awk}
GNUPLOT=${GNUPLOT:-gnuplot}

# The drivers: from make (bench-report passes bench_scripts), or asked of
# the build tree's Makefile, after building the programs they run.
if [ "${JPSYNC_BENCH_SCRIPTS+set}" = set ]; then
  scripts=$JPSYNC_BENCH_SCRIPTS
else
  $MAKE -s -C "$top_builddir" bench-programs >&2 ||
    { echo "$me: building the benchmark programs failed" >&2; exit 1; }
  scripts=$($MAKE -s --no-print-directory -C "$top_builddir" bench-list) || exit 1
fi

stamp=$(date -u +%Y%m%d-%H%M%S)
[ -n "$out" ] || out=$top_builddir/tests/bench/results/$stamp
if ! mkdir -p "$out" || ! out=$(cd "$out" && pwd); then echo "$me: cannot create $out" >&2; exit 2; fi
work=$(mktemp -d "${TMPDIR:-/tmp}/jpsync-report.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$work/plot"
rm -f "$out/summary.md" "$out/machine.txt"
fail=0

# ---------------------------------------------------------------------------
# The machine and the versions of everything measured.
cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n1)
[ -n "$cpu" ] || cpu=$(uname -m)
ncpu=$(grep -c '^processor' /proc/cpuinfo 2>/dev/null || echo "?")
nonline=$(nproc 2>/dev/null || echo "?")
kernel=$(uname -r)
when=$(date -u '+%Y-%m-%d %H:%M UTC')
os=$(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release 2>/dev/null)
load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>/dev/null | head -n1)
jpver=$(sed -n 's/^#define JPSYNC_VERSION_STRING "\(.*\)"/\1/p' "$top_builddir/include/jpsync/version.h" 2>/dev/null)
commit=$(git -C "$top_srcdir" describe --always --dirty 2>/dev/null || echo "not a git checkout")
cc=$(sed -n 's/^CC = //p' "$top_builddir/Makefile" 2>/dev/null)
cflags=$(sed -n 's/^CFLAGS = //p' "$top_builddir/Makefile" 2>/dev/null)
ccver=$(${cc:-cc} --version 2>/dev/null | head -n1)
gpver=$($GNUPLOT --version 2>/dev/null)
# The peers' Debian packages: runtime libraries and -dev packages.
peers=$(dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' \
  'libjemalloc*' 'libmimalloc*' 'libgoogle-perftools*' 'libtcmalloc*' 'libck*' \
  'libc6' 'libstdc++6' 2>/dev/null | sed -n 's/^ii *//p')
caption="$cpu, $nonline cores, Linux $kernel, $when; median of $reps run(s)"
{
  echo "date: $when"
  echo "cpu: $cpu"
  echo "cores: $nonline online ($ncpu in /proc/cpuinfo)"
  echo "kernel: $kernel"
  echo "os: ${os:-unknown}"
  echo "load average at start: ${load0:-unknown}"
  echo "libjpsync: ${jpver:-unknown} ($commit)"
  echo "compiler: ${ccver:-unknown} (CC=${cc:-?} CFLAGS=${cflags})"
  echo "glibc: ${glibc:-unknown} ($(ldd --version 2>/dev/null | head -n1))"
  echo "gnuplot: ${gpver:-not installed}"
  for p in jemalloc mimalloc tcmalloc ck; do
    case $p in
      jemalloc) pat='^libjemalloc' ;; mimalloc) pat='^libmimalloc' ;;
      tcmalloc) pat='^libgoogle-perftools\|^libtcmalloc' ;; ck) pat='^libck' ;;
    esac
    v=$(printf '%s\n' "$peers" | grep "$pat" | tr '\n' ',' | sed 's/,$//; s/,/, /g')
    echo "$p: ${v:-not installed}"
  done
  v=$(printf '%s\n' "$peers" | grep '^libstdc++6' | tr '\n' ' ')
  echo "libstdc++: ${v:-not installed}"
  echo "repetitions: $reps"
  echo "quick: $quick"
  echo "command: ${JPSYNC_BENCH_INVOKED_BY:+$JPSYNC_BENCH_INVOKED_BY -> }$cmdline"
  echo "environment: JPSYNC_BENCH_REPS=$reps JPSYNC_BENCH_QUICK=$quick JPSYNC_BENCH_OUT=$out"
  echo "drivers: ${scripts:-none}"
} > "$out/machine.txt"

# ---------------------------------------------------------------------------
# Run the drivers, one after the other (they interleave their own peers).
: > "$work/drivers.tsv"
: > "$work/notes.md"
csvs=
ran=" "
for s in $scripts; do
  name=$(basename "$s" .sh)
  case $ran in *" $name "*) continue ;; esac	# listed twice
  ran="$ran$name "
  case $s in
    /*) path=$s ;;
    *) path=$top_srcdir/$s; [ -f "$path" ] || path=$top_builddir/$s ;;
  esac
  if [ ! -f "$path" ]; then
    echo "- driver \`$s\` is not in the source tree: skipped." >> "$work/notes.md"
    printf '%s\t%s\t-\t-\tmissing\n' "$name" "$s" >> "$work/drivers.tsv"
    continue
  fi
  rm -f "$out/$name.csv" "$out/$name.notes" "$out/$name".png "$out/$name"-*.png
  # Run it with the interpreter its #! line names (bash drivers exist).
  interp=/bin/sh
  IFS= read -r first < "$path" || first=
  case $first in
    '#!'*/env\ *) interp=${first#*/env } ;;
    '#!'*) interp=${first#\#!} ;;
  esac
  tcmd=
  if [ "$limit" -gt 0 ] && command -v timeout >/dev/null 2>&1; then
    tcmd="timeout -k 10 $limit"
  fi
  echo "== $s (JPSYNC_BENCH_REPS=$reps JPSYNC_BENCH_QUICK=$quick)"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  { (cd "$top_builddir" &&
      JPSYNC_BENCH_REPS=$reps JPSYNC_BENCH_QUICK=$quick JPSYNC_BENCH_OUT=$out \
        $tcmd $interp "$path" 2>&1); echo $? > "$work/rc"; } | tee "$out/$name.log"
  rc=$(cat "$work/rc")
  secs=$(( $(date +%s) - t0 ))
  state=ok
  if [ "$rc" -eq 124 ] && [ -n "$tcmd" ]; then
    state="FAILED (timed out after ${limit}s)"
  elif [ "$rc" -ne 0 ]; then
    state="FAILED (exit status $rc)"
  fi
  if [ -f "$out/$name.csv" ]; then
    csvs="$csvs $out/$name.csv"
  else
    state="FAILED (no $name.csv written)"
  fi
  [ "$state" = ok ] || fail=1
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$s" "$rc" "$secs" "$state" >> "$work/drivers.tsv"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
echo "load average at end: ${load1:-unknown}" >> "$out/machine.txt"

# ---------------------------------------------------------------------------
# Medians, tables and chart scripts.
: > "$work/status.tsv"
: > "$work/charts.list"
if [ -n "$csvs" ]; then
  # shellcheck disable=SC2086
  $AWK -v WORK="$work" -v CAPTION="$caption" -v REPS="$reps" \
    -f "$top_srcdir/tests/bench/report.awk" $csvs ||
    { echo "$me: report.awk failed" >&2; fail=1; }
fi
cp "$work/medians.tsv" "$out/medians.tsv" 2>/dev/null

# The charts, drawn in the results folder.
: > "$work/charts.ok"
if [ -s "$work/charts.list" ]; then
  if command -v "$GNUPLOT" >/dev/null 2>&1; then
    tab=$(printf '\t')
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

# ---------------------------------------------------------------------------
# summary.md
{
  echo "# libjpsync benchmark report"
  echo
  echo "Measured on $cpu, $nonline cores, Linux $kernel, $when;"
  echo "${os:-}, load average ${load0:-?} at the start and ${load1:-?} at the end."
  echo "Every number is the median of $reps repetition(s)$( [ "$quick" = 1 ] && echo ' in quick mode (tiny sizes)')."
  echo
  echo "Command: \`${JPSYNC_BENCH_INVOKED_BY:+$JPSYNC_BENCH_INVOKED_BY, i.e. }$cmdline\` with"
  echo "\`JPSYNC_BENCH_REPS=$reps JPSYNC_BENCH_QUICK=$quick\`."
  echo
  echo "How to read it: *ours* are the implementations named \`jpsync\` or starting"
  echo "with \`jp\` (\`jp_mutex\`, \`jp_spsc\`, ...); all others are peers.  Each row"
  echo "compares ours with the best peer of that row (highest or lowest, as the"
  echo "benchmark's \`better\` column says); a ratio above 1 is better when higher"
  echo "is better, below 1 when lower is better."
  echo
  echo "| benchmark | driver | exit status | seconds | rows | FAILED rows | result |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | --- |"
  tab=$(printf '\t')
  while IFS=$tab read -r name s rc secs state; do
    rows=- frows=-
    st=$(grep "^$name$tab" "$work/status.tsv" 2>/dev/null | head -n1)
    if [ -n "$st" ]; then
      rows=$(echo "$st" | cut -f2)
      frows=$(echo "$st" | cut -f3)
      bad=$(echo "$st" | cut -f4)
      hdr=$(echo "$st" | cut -f5)
      if [ "$hdr" != 1 ]; then
        state="FAILED (CSV header is not the contract's)"
      elif [ "$bad" -gt 0 ]; then
        state="FAILED ($bad malformed CSV lines)"
      elif [ "$frows" -gt 0 ] && [ "$state" = ok ]; then
        state="FAILED (rows FAILED, yet exit status 0)"
      fi
    fi
    case $state in FAILED*) state="**$state**"; fail=1 ;; esac
    echo "| $name | \`$s\` | $rc | $secs | $rows | $frows | $state |"
  done < "$work/drivers.tsv"
  [ -s "$work/drivers.tsv" ] || echo "| (none) | no benchmark drivers are listed in bench_scripts | | | | | |"
  echo
  if [ "$fail" -ne 0 ]; then
    echo "**Overall: FAILED** -- see the rows marked FAILED below."
  else
    echo "Overall: every driver exited 0 and every run passed its check."
  fi
  if [ -s "$work/notes.md" ]; then
    echo
    echo "Notes:"
    echo
    cat "$work/notes.md"
  fi
  echo
  echo "## Where jpsync wins and loses"
  echo
  while IFS=$tab read -r name s rc secs state; do
    [ -f "$work/verdict.$name.md" ] && echo "- $name: $(tr '\n' ' ' < "$work/verdict.$name.md")"
  done < "$work/drivers.tsv"
  echo
  echo "## Machine and versions"
  echo
  echo '```'
  cat "$out/machine.txt"
  echo '```'
  while IFS=$tab read -r name s rc secs state; do
    [ "$state" = missing ] && continue
    echo
    echo "## $name"
    echo
    case $state in ok) ;; *) echo "**$state**"; echo ;; esac
    if [ -f "$work/verdict.$name.md" ]; then
      cat "$work/verdict.$name.md"
      echo
    fi
    if [ -s "$out/$name.notes" ]; then
      echo "Skipped or noted by the driver:"
      echo
      sed 's/^/- /' "$out/$name.notes"
      echo
    fi
    [ -f "$work/body.$name.md" ] && cat "$work/body.$name.md"
    n=0
    while IFS=$tab read -r bench png title; do
      [ "$bench" = "$name" ] || continue
      [ $n -eq 0 ] && { echo; echo "### Charts"; }
      n=$((n + 1))
      echo
      echo "![$title]($png)"
    done < "$work/charts.ok"
  done < "$work/drivers.tsv"
} > "$out/summary.md"

echo
echo "$me: results in $out"
echo "$me: $(grep -c . "$work/charts.ok") chart(s); summary: $out/summary.md"
if [ "$fail" -ne 0 ]; then
  echo "$me: FAILED: some benchmark failed (see $out/summary.md)" >&2
  exit 1
fi
exit 0
