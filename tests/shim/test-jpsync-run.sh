#!/bin/sh
# jpsync-run's command line: --help, --version, --print-env for every
# option, usage errors (exit 2, one line naming the problem plus the --help
# hint), a missing PROGRAM (2), a program not found (127) or not executable
# (126), a statically linked program named in a warning, LD_PRELOAD
# prepended to, PROGRAM's options and exit status passed
# through.  The cases that run a program under the module are left out in
# sanitizer builds, and in a cross build, where the build machine's programs
# are of another architecture than the module.  jpsync-run itself runs
# through $tx (tests/target-exec.sh: under qemu-user when emulated).
set -u
. "${top_srcdir:-.}/tests/shim/preload-common.sh"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: not a valgrind check"; exit 77; fi
[ -x "$run" ] || fail "$run not built"
make_tmp
status=0
bad() { echo "FAIL: $*"; status=1; }
abs_builddir=$(cd "$top_builddir" && pwd)
abs_module="$abs_builddir/shim/.libs/libjpsync-preload.so"

# --help and --version: stdout, exit 0.
$tx "$run" --help > "$tmp/help" 2> "$tmp/err"; rc=$?
[ $rc -eq 0 ] || bad "--help exit status $rc"
[ -s "$tmp/err" ] && bad "--help wrote to stderr"
grep -q '^Usage: jpsync-run \[OPTION\]\.\.\. \[--\] PROGRAM' "$tmp/help" || bad "--help has no Usage line"
for o in --cache=N --cache-bytes=SIZE --magazine=N --madvise-min=SIZE --check '--stats\[=FILE\]' \
         --stats-signal=SIG --verbose \
         --lockdep --print-env; do
  grep -q -- "^  $o" "$tmp/help" || bad "--help does not list $o"
done
version=$(sed -n 's/^Version: *//p' "$top_builddir/jpsync.pc")
out=$($tx "$run" --version); rc=$?
[ $rc -eq 0 ] && [ "$out" = "jpsync-run (libjpsync) $version" ] ||
  bad "--version printed '$out' (exit $rc), expected 'jpsync-run (libjpsync) $version'"
# -h and -V: the same as --help and --version (GNU's short forms).
$tx "$run" -h > "$tmp/h" 2> "$tmp/err"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && cmp -s "$tmp/h" "$tmp/help" ||
  bad "-h: exit $rc, not the --help text"
out=$($tx "$run" -V); rc=$?
[ $rc -eq 0 ] && [ "$out" = "jpsync-run (libjpsync) $version" ] ||
  bad "-V printed '$out' (exit $rc)"
grep -q -- '^  -h, --help' "$tmp/help" || bad "--help does not list -h"
grep -q -- '^  -V, --version' "$tmp/help" || bad "--help does not list -V"
echo "ok: --help and --version, -h and -V"

# --print-env: the lines jpsync-run would set, nothing run.  From the build
# tree, the module is the uninstalled one.
expect_env() {
  # expect_env 'EXPECTED LINES' ARGS...
  want=$1; shift
  got=$(env -u LD_PRELOAD $tx "$run" --print-env "$@" 2>&1); rc=$?
  if [ $rc -ne 0 ] || [ "$got" != "$want" ]; then
    bad "--print-env $*: exit $rc, printed:"; printf '%s\n' "$got"
    echo "expected:"; printf '%s\n' "$want"
  fi
}
pre="LD_PRELOAD=$abs_module"
expect_env "$pre"
expect_env "$pre
JPSYNC_CACHE_N=64" --cache=64
expect_env "$pre
JPSYNC_CACHE_N=4K" --cache 4K
expect_env "$pre
JPSYNC_CACHE_BYTES=1M" --cache-bytes=1M
expect_env "$pre
JPSYNC_CACHE_BYTES=0" --cache-bytes 0
expect_env "$pre
JPSYNC_CACHE_BYTES=1024G" --cache-bytes=1024G
expect_env "$pre
JPSYNC_MAG_SIZE=1024" --magazine=1024
expect_env "$pre
JPSYNC_MADVISE_MIN=64K" --madvise-min=64K
expect_env "$pre
JPSYNC_MADVISE_MIN=off" --madvise-min=off
expect_env "$pre
JPSYNC_MADVISE_MIN=0" --madvise-min=0
expect_env "$pre
JPSYNC_CHECK=1" --check
expect_env "$pre
JPSYNC_STATS=1" --stats
expect_env "$pre
JPSYNC_STATS=/tmp/s.txt" --stats=/tmp/s.txt
expect_env "$pre
JPSYNC_VERBOSE=1" --verbose
expect_env "$pre
JPSYNC_LOCKDEP=1" --lockdep
expect_env "$pre
JPSYNC_CACHE_N=8
JPSYNC_CACHE_BYTES=64K
JPSYNC_MAG_SIZE=4
JPSYNC_MADVISE_MIN=1M
JPSYNC_CHECK=1
JPSYNC_STATS=1
JPSYNC_VERBOSE=1
JPSYNC_LOCKDEP=1" --lockdep --verbose --stats --check --madvise-min=1M --magazine=4 --cache-bytes=64K --cache=16 --cache=8
# --stats takes what JPSYNC_STATS takes: the on/off spellings are not file
# names (they were: --stats=0 wrote a file named 0).  A file of such a name
# is ./0.
for v in 0 no off false 1 yes on true OFF; do
  expect_env "$pre
JPSYNC_STATS=$v" --stats=$v
done
got=$(cd "$tmp" && env -u LD_PRELOAD $tx "$run" --print-env --stats=./1 | sed -n 's/^JPSYNC_STATS=//p')
[ "$got" = "$(cd "$tmp" && pwd)/./1" ] || bad "--stats=./1 gave '$got'"
# A file name as long as the system allows (255 bytes was the limit).
long=/tmp/$(printf '%0300d' 0)/s.txt
expect_env "$pre
JPSYNC_STATS=$long" --stats="$long"
# A relative --stats file is named from the current directory (the program
# may change directory before it exits).
got=$(cd "$tmp" && env -u LD_PRELOAD $tx "$run" --print-env --stats=out/s.txt | sed -n 's/^JPSYNC_STATS=//p')
[ "$got" = "$(cd "$tmp" && pwd)/out/s.txt" ] || bad "--stats=out/s.txt gave '$got'"
echo "ok: --print-env for every option"

# LD_PRELOAD: the module goes first, the existing entries stay.  (ld.so
# complains about the made-up names when it starts jpsync-run itself.)
got=$(LD_PRELOAD=/opt/x/libfirst.so $tx "$run" --print-env 2>/dev/null | sed -n 's/^LD_PRELOAD=//p')
[ "$got" = "$abs_module:/opt/x/libfirst.so" ] || bad "prepend: LD_PRELOAD=$got"
got=$(LD_PRELOAD="/a/one.so /b/two.so" $tx "$run" --print-env 2>/dev/null | sed -n 's/^LD_PRELOAD=//p')
[ "$got" = "$abs_module:/a/one.so /b/two.so" ] || bad "prepend to a list: LD_PRELOAD=$got"
# (This one loads the module into jpsync-run: not with a sanitizer runtime.
# Emulated, the host's loader also sees LD_PRELOAD when it starts the
# emulator; its complaint goes to /dev/null with the rest.)
if ! sanitized; then
  got=$(LD_PRELOAD="$abs_module:/a/one.so" $tx "$run" --print-env 2>/dev/null | sed -n 's/^LD_PRELOAD=//p')
  [ "$got" = "$abs_module:/a/one.so" ] || bad "module already first: LD_PRELOAD=$got"
fi
echo "ok: LD_PRELOAD is prepended to"

# --stats with a program that closes stderr before it exits (coreutils'
# close_stdout): the table still reaches the stderr it started with.
if ! sanitized && ! foreign; then
  $tx "$run" --stats cat /dev/null > "$tmp/out" 2> "$tmp/err"; rc=$?
  [ $rc -eq 0 ] || bad "--stats cat /dev/null: exit $rc"
  grep -q '^jpsync allocator statistics' "$tmp/err" ||
    bad "--stats cat /dev/null printed no table"
  echo "ok: --stats with a program that closes stderr (cat)"
fi

# Usage errors: exit 2, nothing on stdout, exactly two lines on stderr.
usage_error() {
  $tx "$run" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
  lines=$(wc -l < "$tmp/err")
  first=$(sed -n 1p "$tmp/err"); second=$(sed -n 2p "$tmp/err")
  if [ $rc -ne 2 ] || [ -s "$tmp/out" ] || [ "$lines" -ne 2 ] ||
     [ "${first#jpsync-run: }" = "$first" ] ||
     [ "$second" != "Try 'jpsync-run --help' for more information." ]; then
    bad "jpsync-run $*: exit $rc, stdout $(wc -c < "$tmp/out") bytes, stderr:"; cat "$tmp/err"
  fi
}
usage_error --bogus true
usage_error -x true
usage_error --cache=0 true
usage_error --cache=4097 true
usage_error --cache=abc true
usage_error --cache= true
usage_error --cache=-1 true
usage_error --cache=1.5K true
usage_error --cache-bytes=lots true
usage_error --cache-bytes=1025G true
usage_error --cache-bytes=-1 true
usage_error --cache-bytes= true
usage_error --cache-bytes
usage_error --magazine=0 true
usage_error --magazine=1025 true
usage_error --madvise-min=12X true
usage_error --madvise-min=of true
usage_error --madvise-min=99999999999999999999 true
usage_error --stats= true
usage_error --stats=2 true
usage_error --stats=-1 true
$tx "$run" --stats=2 true 2>&1 | grep -q "^jpsync-run: invalid value '2' for --stats: .*\./2" ||
  bad "--stats=2 does not say how to name a file 2"
usage_error --stats-signal=BOGUS true
usage_error --stats-signal=KILL true
usage_error --stats-signal=SEGV true
usage_error --stats-signal=9999 true
usage_error --stats-signal= true
usage_error --check=1 true
usage_error --print-env=yes
usage_error --cache
usage_error
usage_error --cache=8
usage_error --
$tx "$run" --cache=0 true 2>&1 | grep -q "^jpsync-run: invalid value '0' for --cache" ||
  bad "--cache=0 does not name the option and the value"
$tx "$run" --cache-bytes=lots true 2>&1 | grep -q "^jpsync-run: invalid value 'lots' for --cache-bytes: " ||
  bad "--cache-bytes=lots does not name the option and the value"
echo "ok: usage errors exit 2 with one line and the --help hint"

# One table: every variable the library reads (JPSYNC_VERBOSE=1 prints
# them all, from lib/base/options.c) is an option in --help with its range, and
# the ranges jpsync-run enforces are the library's.
if foreign; then
  echo "not run here ($foreign_why): the variables --verbose lists are --help's"
elif ! sanitized && command -v timeout >/dev/null 2>&1; then
  timeout -k 5 60 "$run" --verbose true 2> "$tmp/vars" ||
    bad "--verbose true failed"
  nvars=0
  for var in $(sed -n 's/^jpsync: JPSYNC_\([A-Z_]*\)=.*/\1/p' "$tmp/vars"); do
    nvars=$((nvars + 1))
    grep -q "JPSYNC_$var[=)]" "$tmp/help" || bad "--help does not name JPSYNC_$var"
  done
  [ $nvars -ge 8 ] || bad "--verbose listed $nvars variables"
fi
grep -q '(1 to 4096; default 4096; JPSYNC_CACHE_N)' "$tmp/help" || bad "--help: no range for --cache"
grep -q '(1 to 1024;' "$tmp/help" || bad "--help: no range for --magazine"
expect_env "$pre
JPSYNC_CACHE_N=1K" --cache=1K
expect_env "$pre
JPSYNC_MAG_SIZE=1K" --magazine=1K
usage_error --cache=5K true
usage_error --magazine=2K true
$tx "$run" --cache=5K true 2>&1 | grep -q "^jpsync-run: invalid value '5K' for --cache: out of range (1 to 4096)" ||
  bad "--cache=5K does not name the range"
$tx "$run" --cache-bytes=2T true 2>&1 | grep -q "for --cache-bytes: not a number (0 to 1024G, with an optional K, M or G suffix)" ||
  bad "--cache-bytes=2T does not name the range"
echo "ok: the options, their ranges and help are the library's table"

# --verbose: the library says once, first, its version and where it was
# loaded from (here the build tree's), then the options.
if ! foreign && ! sanitized && command -v timeout >/dev/null 2>&1; then
  timeout -k 5 60 "$run" --verbose true 2> "$tmp/err" || bad "--verbose true failed"
  first=$(sed -n 1p "$tmp/err")
  case $first in
    "jpsync: libjpsync $version loaded from $abs_builddir/lib/.libs/libjpsync.so"*) ;;
    *) bad "--verbose: first line '$first'";;
  esac
  [ "$(grep -c '^jpsync: libjpsync ' "$tmp/err")" -eq 1 ] || { bad "--verbose: not one version line:"; cat "$tmp/err"; }
  echo "ok: --verbose names the library's version and path"
fi

# PROGRAM not found: 127; found but not executable: 126 (as env(1)).
$tx "$run" jpsync-no-such-program-here > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 127 ] || bad "missing program: exit $rc"
grep -q "^jpsync-run: 'jpsync-no-such-program-here': No such file or directory" "$tmp/err" ||
  { bad "missing program message:"; cat "$tmp/err"; }
$tx "$run" "$tmp/nonexistent/prog" > /dev/null 2>&1; rc=$?
[ $rc -eq 127 ] || bad "missing path: exit $rc"
printf 'echo hi\n' > "$tmp/noexec"; chmod 644 "$tmp/noexec"
$tx "$run" "$tmp/noexec" > /dev/null 2>&1; rc=$?
[ $rc -eq 126 ] || bad "not executable: exit $rc"
echo "ok: not found 127, not executable 126"

# A statically linked program, which LD_PRELOAD cannot reach: one warning
# that names it, then it runs all the same, with its own exit status; the
# same when it is found in PATH.  A dynamically linked one draws none.
if ! foreign; then
  printf 'int main(void) { return 7; }\n' > "$tmp/static.c"
  if cc -static -o "$tmp/static-prog" "$tmp/static.c" 2> /dev/null; then
    for how in "$tmp/static-prog" static-prog; do
      PATH="$tmp:$PATH" $tx "$run" --stats "$how" > /dev/null 2> "$tmp/err"; rc=$?
      [ $rc -eq 7 ] || bad "static program $how: exit $rc, not its own 7"
      [ "$(wc -l < "$tmp/err")" -eq 1 ] &&
        grep -q "^jpsync-run: warning: '$how' is statically linked: LD_PRELOAD cannot " "$tmp/err" ||
        { bad "static program $how: not one warning naming it:"; cat "$tmp/err"; }
    done
    # A static PIE (no PT_INTERP, no DT_SONAME) too.
    if cc -static-pie -fPIE -o "$tmp/static-pie" "$tmp/static.c" 2> /dev/null; then
      $tx "$run" "$tmp/static-pie" > /dev/null 2> "$tmp/err"; rc=$?
      [ $rc -eq 7 ] && grep -q "^jpsync-run: warning: '$tmp/static-pie' is statically linked: " "$tmp/err" ||
        { bad "static PIE: exit $rc, or no warning:"; cat "$tmp/err"; }
    else
      echo "not run here: cc cannot link a static PIE"
    fi
    echo "ok: a statically linked program is named in a warning, and runs"
  else
    echo "not run here: cc cannot link a static program (no libc.a)"
  fi
  # Not ELF enough to say (a truncated header): no warning (execvp then
  # hands it to sh, which fails).
  printf '\177ELF\002\001' > "$tmp/cut-elf"; chmod 755 "$tmp/cut-elf"
  $tx "$run" "$tmp/cut-elf" > /dev/null 2> "$tmp/err"; rc=$?
  [ $rc -ne 0 ] && ! grep -q 'statically linked' "$tmp/err" ||
    { bad "a truncated ELF file: exit $rc, or a warning:"; cat "$tmp/err"; }
  # The dynamic loader run as a program takes LD_PRELOAD: no warning.
  ld=$(readelf -l /bin/sh 2> /dev/null | sed -n 's/.*program interpreter: \(.*\)]$/\1/p')
  if [ -n "$ld" ] && ! sanitized; then
    $tx "$run" "$ld" /bin/sh -c 'exit 5' > /dev/null 2> "$tmp/err"; rc=$?
    [ $rc -eq 5 ] && ! grep -q 'statically linked' "$tmp/err" ||
      { bad "$ld as a program: exit $rc, not 5, or a warning:"; cat "$tmp/err"; }
  fi
  if ! sanitized; then
    $tx "$run" sh -c 'exit 0' 2> "$tmp/err" && [ ! -s "$tmp/err" ] ||
      { bad "sh (dynamically linked) drew a message:"; cat "$tmp/err"; }
  fi
fi

# Away from the build tree and from an installed tree, the module is looked
# for in the configured pkglibdir only; missing there, exit 125 naming it.
mkdir -p "$tmp/elsewhere"; cp "$run" "$tmp/elsewhere/jpsync-run"
$tx "$tmp/elsewhere/jpsync-run" --print-env > "$tmp/out" 2> "$tmp/err"; rc=$?
if [ $rc -eq 125 ]; then
  grep -q "^jpsync-run: cannot find the preload module libjpsync-preload.so (looked for $tmp/elsewhere/.libs/libjpsync-preload.so, " "$tmp/err" ||
    { bad "module not found: message"; cat "$tmp/err"; }
  echo "ok: a missing module is exit status 125"
elif [ $rc -eq 0 ] && ! grep -q "$abs_builddir" "$tmp/out"; then
  echo "note: a module is installed in the configured pkglibdir: $(cat "$tmp/out")"
else
  bad "a copy of jpsync-run outside the build tree: exit $rc"; cat "$tmp/out" "$tmp/err"
fi

if foreign; then
  echo "SKIP (rest): running programs under jpsync-run: $foreign_why"
  exit $status
fi
if sanitized; then
  echo "SKIP (rest): sanitizer build, programs cannot run under the module"
  exit $status
fi
command -v timeout >/dev/null 2>&1 || { echo "SKIP (rest): no timeout(1)"; exit $status; }
t="timeout -k 5 60"

# Running: the variables arrive, PROGRAM's options are its own, its exit
# status comes back.
$t "$run" --cache=64 --check -- env > "$tmp/env"; rc=$?
[ $rc -eq 0 ] || bad "env under jpsync-run: exit $rc"
grep -q "^LD_PRELOAD=$abs_module\$" "$tmp/env" || bad "env does not see LD_PRELOAD"
grep -q '^JPSYNC_CACHE_N=64$' "$tmp/env" || bad "env does not see JPSYNC_CACHE_N"
grep -q '^JPSYNC_CHECK=1$' "$tmp/env" || bad "env does not see JPSYNC_CHECK"
$t "$run" --cache-bytes=2M -- env > "$tmp/env"; rc=$?
[ $rc -eq 0 ] || bad "env under jpsync-run --cache-bytes=2M: exit $rc"
grep -q '^JPSYNC_CACHE_BYTES=2M$' "$tmp/env" || bad "env does not see JPSYNC_CACHE_BYTES"
got=$(LD_PRELOAD= $t "$run" printf '%s|' --cache=0 --help -- x)
[ "$got" = "--cache=0|--help|--|x|" ] || bad "PROGRAM's arguments: '$got'"
$t "$run" sh -c 'exit 7'; rc=$?
[ $rc -eq 7 ] || bad "exit status 7 came back as $rc"
# The module is really in the program.
$t "$run" cat /proc/self/maps > "$tmp/maps"
grep -q "$abs_module" "$tmp/maps" || bad "the module is not mapped in cat"
# --stats=FILE: written at exit, by name from where jpsync-run started.
(cd "$tmp" && $t "$run" --stats=stats.txt env -C / true) ||
  bad "--stats=FILE run failed"
grep -q 'jpsync allocator statistics' "$tmp/stats.txt" 2>/dev/null ||
  bad "--stats=stats.txt wrote no statistics"
# Every process's table is kept: appended, each headed by its pid (the file
# emptied first), or one file per process with %p.  (Three processes: cat,
# ls and the last cat, which sh becomes; sh itself ends with _exit.)
echo "an old table" > "$tmp/all.txt"
$t "$run" --stats="$tmp/all.txt" sh -c 'cat /dev/null; ls / > /dev/null; exec cat /dev/null' ||
  bad "--stats=FILE with three processes failed"
n=$(grep -c '^jpsync allocator statistics (pid [0-9]*): ' "$tmp/all.txt")
pids=$(sed -n 's/^jpsync allocator statistics (pid \([0-9]*\)).*/\1/p' "$tmp/all.txt" | sort -u | wc -l)
[ "$n" -eq 3 ] && [ "$pids" -eq 3 ] || bad "--stats=FILE kept $n tables of $pids processes, expected 3 of 3"
grep -q "an old table" "$tmp/all.txt" && bad "--stats=FILE did not empty the file first"
mkdir "$tmp/per"
$t "$run" --stats="$tmp/per/s.%p.txt" sh -c 'cat /dev/null; ls / > /dev/null; exec cat /dev/null' ||
  bad "--stats=FILE.%p run failed"
n=$(ls "$tmp/per" | grep -c '^s\.[0-9]*\.txt$')
[ "$n" -eq 3 ] || bad "--stats=s.%p.txt made $n files, expected 3: $(ls "$tmp/per")"
for f in "$tmp"/per/s.*.txt; do
  pid=${f##*/s.}; pid=${pid%.txt}
  head -n 1 "$f" | grep -q "^jpsync allocator statistics (pid $pid): " || bad "$f is not the table of $pid"
done
# The table: a summary line in human units, then labelled figures and columns.
head -n 1 "$tmp/all.txt" | grep -Eq ': [0-9.]+ (B|KiB|MiB|GiB) in use \(peak [0-9.]+ (B|KiB|MiB|GiB)\), [0-9.]+ (B|KiB|MiB|GiB) mapped \(peak .*\), [0-9]+ allocations, ([0-9.]+%|-) from thread caches$' ||
  bad "the table's first line is no summary: $(head -n 1 "$tmp/all.txt")"
grep -q '^  class  block size    allocations          frees  blocks in use   hit%$' "$tmp/all.txt" ||
  bad "the class table has no labelled columns"
# A file that cannot be written: one warning, for all the processes, and the
# program runs as it would (exit status, output).
out=$($t "$run" --stats=/nonexistent-dir/s.txt sh -c 'cat /dev/null; ls / > /dev/null; echo ran' 2> "$tmp/err"); rc=$?
[ $rc -eq 0 ] && [ "$out" = ran ] || bad "--stats to an unwritable file: exit $rc, output '$out'"
[ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "^jpsync-run: warning: cannot write the statistics to /nonexistent-dir/s.txt: " "$tmp/err" ||
  { bad "--stats to an unwritable file: not exactly one warning:"; cat "$tmp/err"; }
$t "$run" --stats=/nonexistent-dir/s.%p sh -c 'cat /dev/null; true' 2> "$tmp/err" ||
  bad "--stats=unwritable %p: failed"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || { bad "--stats=unwritable %p: not one warning:"; cat "$tmp/err"; }
# --verbose: the options in force, on stderr.
$t "$run" --verbose --magazine=8 true 2> "$tmp/err"
grep -q 'JPSYNC_MAG_SIZE=8' "$tmp/err" || { bad "--verbose printed:"; cat "$tmp/err"; }
$t "$run" --verbose --cache-bytes=64K true 2> "$tmp/err"
grep -q '^jpsync: JPSYNC_CACHE_BYTES=65536$' "$tmp/err" ||
  { bad "--verbose --cache-bytes=64K printed:"; cat "$tmp/err"; }
echo "ok: programs run with the variables, their arguments and exit status"
exit $status
