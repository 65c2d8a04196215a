#!/bin/sh
# report.sh: run every benchmark driver (the driver contract of
# doc/benchmarks.md) into a results folder, then write the report there
# with report-write.sh.  `make bench-report` and `make bench-report-quick`
# run it from the build tree.
#
# What it writes itself: machine.txt (the machine, the versions of
# everything measured, the command), each driver's NAME.csv, NAME.notes
# (both written by the driver) and NAME.log (what the driver printed), and
# drivers.tsv (each driver's exit status, seconds and result).  From
# these, report-write.sh writes medians.tsv, summary.md (medians, jpsync
# against the best peer, notes, versions) and PNG charts drawn with
# gnuplot; run alone, it rewrites the report of an earlier run.
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
rm -f "$out/summary.md" "$out/machine.txt"

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
printf 'benchmark\tdriver\texit_status\tseconds\tresult\n' > "$out/drivers.tsv"
ran=" "
for s in $scripts; do
  name=$(basename "$s" .sh)
  case $ran in *" $name "*) continue ;; esac	# listed twice
  ran="$ran$name "
  case $s in
    /*) path=$s ;;
    *) path=$top_srcdir/$s; [ -f "$path" ] || path=$top_builddir/$s ;;
  esac
  if [ ! -f "$path" ]; then	# report-write.sh notes it
    printf '%s\t%s\t-\t-\tmissing\n' "$name" "$s" >> "$out/drivers.tsv"
    continue
  fi
  rm -f "$out/$name.csv" "$out/$name.notes"
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
  [ -f "$out/$name.csv" ] || state="FAILED (no $name.csv written)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$s" "$rc" "$secs" "$state" >> "$out/drivers.tsv"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
echo "load average at end: ${load1:-unknown}" >> "$out/machine.txt"

# ---------------------------------------------------------------------------
# The report: medians, charts and summary.md, from what the run wrote.
echo
echo "$me: results in $out"
# Its exit status is the report's (see the top of this file).
GNUPLOT=$GNUPLOT sh "$top_srcdir/tests/bench/report-write.sh" "$out"
