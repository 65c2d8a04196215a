#!/bin/sh
# The heap profile, read by google-pprof as a user reads it:
# tests/alloc/heap-profile-prog keeps 64 MiB in keep_big and 16 MiB in
# keep_small (4 KiB blocks), allocates and frees 32 MiB in churn, and
# grows one block to 24 MiB by realloc in grow.
# Sampled at one per 16 KiB (about 3600, 900 and 1800 samples), each
# figure is within 15% of the truth: over 4 standard errors for the
# smallest (1 / sqrt(900) = 3.3%), so a correct profiler fails about once in
# 30000 runs, and a wrong weight, order or free fails every time.
#   - at exit: exactly FILE.<pid>.heap; --text lists keep_big, then
#     keep_small, with their bytes in use; churn holds nothing in use and
#     its 32 MiB in --alloc_space; grow holds its 24 MiB (a block resized
#     by mremap is drawn again at its new size: it once left the profile);
#   - on the stats signal: FILE.<pid>.1.heap as well;
#   - every --heap-profile-interval of growth: numbered profiles;
#   - without --heap-profile: no file.
# Skipped (77) without google-pprof, under valgrind or a sanitizer (no
# preload), and in a cross build (google-pprof, a host program, reads the
# target's binary).
set -u
. "${top_srcdir:-.}/tests/shim/preload-common.sh"
skip_if_no_preload
if [ -n "${JP_EMULATOR:-}" ] || foreign; then
  echo "SKIP: a cross build: google-pprof (a host program) cannot read the target's profile and binary"; exit 77
fi
pprof=$(command -v google-pprof || true)
[ -n "$pprof" ] || { echo "SKIP: google-pprof not installed (google-perftools; scripts/install-deps.sh)"; exit 77; }
prog=$top_builddir/tests/alloc/heap-profile-prog
[ -x "$prog" ] || fail "$prog not built"
make_tmp
status=0
bad() { echo "FAIL: $*"; status=1; }

# mib FILE FUNCTION: the function's flat figure in a --text listing, in
# google-pprof's "MB", which are MiB (it divides by 1048576).
mib() { awk -v f="$2" '$6 == f { print $1; exit }' "$1"; }
# near VALUE TRUTH: within 15%.
near() { awk -v v="${1:-0}" -v t="$2" 'BEGIN { exit !(v >= t * 0.85 && v <= t * 1.15) }'; }

# At exit.
timeout 120 "$run" --heap-profile="$tmp/prof" --heap-profile-rate=16K "$prog" ||
  fail "the program failed under --heap-profile"
set -- "$tmp"/prof.*
[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one file prof.<pid>.heap, got: $*"
case ${1##*/} in prof.[0-9]*.heap) ;; *) fail "at exit: ${1##*/}, not prof.<pid>.heap" ;; esac
exitprof=$1
head -n 1 "$exitprof" | grep -q '^heap profile: .* @ heap_v2/16384$' ||
  bad "header: $(head -n 1 "$exitprof")"
grep -q '^MAPPED_LIBRARIES:$' "$exitprof" || bad "no MAPPED_LIBRARIES section"
# Text only: a NUL byte (a length miscounted) is not part of the format.
[ "$(tr -d '\000' < "$exitprof" | wc -c)" -eq "$(wc -c < "$exitprof")" ] ||
  bad "a NUL byte in the profile"
"$pprof" --text "$prog" "$exitprof" > "$tmp/inuse" 2> "$tmp/err" ||
  { cat "$tmp/err"; fail "google-pprof --text failed"; }
cat "$tmp/inuse"
big=$(mib "$tmp/inuse" keep_big)
small=$(mib "$tmp/inuse" keep_small)
near "$big" 64 || bad "keep_big: ${big:-nothing} MiB in use, not 64 within 15%"
near "$small" 16 || bad "keep_small: ${small:-nothing} MiB in use, not 16 within 15%"
first=$(awk '$6 ~ /^(keep_big|keep_small|churn)$/ { print $6; exit }' "$tmp/inuse")
[ "$first" = keep_big ] || bad "the first of the program's functions listed is ${first:-none}, not keep_big"
grown=$(mib "$tmp/inuse" grow)
near "$grown" 24 || bad "grow: ${grown:-nothing} MiB in use, not 24 within 15%"
churn=$(mib "$tmp/inuse" churn)
awk -v v="${churn:-0}" 'BEGIN { exit !(v < 0.5) }' ||
  bad "churn: $churn MiB in use, though it freed everything"
"$pprof" --text --alloc_space "$prog" "$exitprof" > "$tmp/alloc" 2> "$tmp/err" ||
  { cat "$tmp/err"; fail "google-pprof --text --alloc_space failed"; }
churn=$(mib "$tmp/alloc" churn)
near "$churn" 32 || bad "churn: ${churn:-nothing} MiB allocated, not 32 within 15%"

# On the stats signal: a numbered profile too.
rm -f "$tmp"/prof.*
timeout 120 "$run" --heap-profile="$tmp/prof" --heap-profile-rate=16K --stats-signal=USR2 \
  "$prog" signal 2> "$tmp/err" || { cat "$tmp/err"; fail "the program failed with the signal"; }
set -- "$tmp"/prof.*.1.heap
if [ -f "$1" ]; then
  "$pprof" --text "$prog" "$1" > "$tmp/sig" 2> "$tmp/err" || bad "google-pprof cannot read $1"
  [ "$(awk '$6 ~ /^(keep_big|keep_small)$/ { print $6; exit }' "$tmp/sig")" = keep_big ] ||
    bad "the profile on the signal does not list keep_big first"
else
  bad "no prof.<pid>.1.heap after the stats signal"
fi

# Every 16 MiB of growth: at least 3 numbered profiles for 80 MiB.
rm -f "$tmp"/prof.*
timeout 120 "$run" --heap-profile="$tmp/prof" --heap-profile-rate=16K \
  --heap-profile-interval=16M "$prog" || fail "the program failed with --heap-profile-interval"
n=$(ls "$tmp" | grep -c '^prof\.[0-9]*\.[0-9]*\.heap$')
[ "$n" -ge 3 ] || bad "$n interval profiles for 80 MiB of growth every 16 MiB, not 3 or more"

# Sampling off: no file.
rm -f "$tmp"/prof.*
timeout 120 "$run" "$prog" || fail "the program failed without --heap-profile"
[ -z "$(ls "$tmp" | grep '\.heap$')" ] || bad "a profile without --heap-profile: $(ls "$tmp")"

exit $status
