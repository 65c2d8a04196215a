#!/bin/sh
# The fast-path budget (tests/bench/fast-path.budget): the callgrind count
# of a 64-byte free+malloc pair through jpsync's preload module, four ways
# (free, free_sized, operator delete, sized operator delete), must not
# exceed the count the 1.2 work started from by more than the allowance.
# The comparison is checked on itself too: the same counts against
# baselines 1 + allowance lower must fail.  Skipped (77, with the reason)
# without valgrind, under a valgrind tool or a sanitizer, in a cross build,
# and on a compiler, target or CFLAGS other than the budget's: callgrind's
# counts are exact, but only for the same code.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}"
budget=${JP_FAST_PATH_BUDGET:-$top_srcdir/tests/bench/fast-path.budget}
skip() { echo "SKIP: $*"; exit 77; }
field() { sed -n "s/^$1 //p" "$budget" | head -n 1; }

[ -z "${VALGRIND:-}" ] || skip "not a valgrind-tool check"
case ${SANITIZERS:-no} in no|"") ;; *) skip "a sanitizer build ($SANITIZERS) counts other code" ;; esac
[ -z "${JP_EMULATOR:-}" ] && [ "${JP_FOREIGN:-no}" != yes ] || skip "a cross build"
command -v valgrind >/dev/null 2>&1 || skip "valgrind not installed (scripts/install-deps.sh)"
[ -f "$budget" ] || { echo "FAIL: $budget missing"; exit 1; }
cc_now=$($CC --version 2>/dev/null | head -n 1)
cflags_now=$(sed -n 's/^CFLAGS = //p' "$top_builddir/Makefile" | head -n 1)
[ "$cc_now" = "$(field compiler)" ] ||
  skip "counted with '$(field compiler)'; this build's compiler is '$cc_now'"
[ "${JP_HOST:-}" = "$(field host)" ] || skip "counted on $(field host); this build is for ${JP_HOST:-?}"
[ "$cflags_now" = "$(field cflags)" ] ||
  skip "counted with CFLAGS '$(field cflags)'; this build's are '$cflags_now'"

module=$top_builddir/shim/.libs/libjpsync-preload.so
pair=$top_builddir/tests/bench/alloc-pair
[ -f "$module" ] || { echo "FAIL: $module not built"; exit 1; }
[ -x "$pair" ] || { echo "FAIL: $pair not built"; exit 1; }
allow=$(field allowance)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# count PROGRAM MODE: instructions per pair (the difference of two runs
# over their difference in pairs cancels start-up and exit).
count() {
  for n in 20000 40000; do
    LD_PRELOAD=$module LD_LIBRARY_PATH=$top_builddir/lib/.libs \
      valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$n" "$1" "$n" "$2" \
      > "$tmp/out" 2> "$tmp/err" || { echo "FAIL: $1 $n $2 under callgrind:"; tail -n 5 "$tmp/err"; return 1; }
    grep -q 'malloc=.*jpsync' "$tmp/out" ||
      { echo "FAIL: $1: malloc did not come from the preload module: $(cat "$tmp/out")"; return 1; }
  done
  a=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$tmp/cg.20000" | head -n 1)
  b=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$tmp/cg.40000" | head -n 1)
  [ -n "$a" ] && [ -n "$b" ] || { echo "FAIL: no callgrind total"; return 1; }
  awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f\n", (b - a) / 20000 }'
}

fail=0
: > "$tmp/counts"
for variant in pair64 pair64-sized pair64-delete pair64-sized-delete; do
  case $variant in
    pair64) prog=$pair mode=free ;;
    pair64-sized) prog=$pair mode=sized ;;
    pair64-delete) prog=$pair-cxx mode=delete ;;
    pair64-sized-delete) prog=$pair-cxx mode=sized ;;
  esac
  if [ ! -x "$prog" ]; then echo "note: $variant: $prog not built (no C++)"; continue; fi
  base=$(field "$variant")
  [ -n "$base" ] || { echo "FAIL: $budget has no $variant"; fail=1; continue; }
  got=$(count "$prog" "$mode") || { echo "$got"; fail=1; continue; }
  echo "$variant $base $got" >> "$tmp/counts"
done

# over DELTA: the variants whose count exceeds baseline - DELTA + allowance.
over() {
  awk -v d="$1" -v allow="$allow" '$3 > $2 - d + allow { print }' "$tmp/counts"
}
while read -r variant base got; do
  verdict=ok
  [ -n "$(over 0 | grep "^$variant ")" ] && verdict=FAIL
  echo "$verdict: $variant: $got instructions a pair (baseline $base, allowance $allow)"
done < "$tmp/counts"
[ -z "$(over 0)" ] || fail=1
# The check itself: with every baseline 1 + allowance lower, each count
# is over its budget.
if [ -s "$tmp/counts" ] &&
   [ "$(over $((allow + 1)) | wc -l)" -ne "$(wc -l < "$tmp/counts")" ]; then
  echo "FAIL: the comparison passes counts 1 + allowance above their baselines"; fail=1
fi
[ -s "$tmp/counts" ] || { echo "FAIL: nothing counted"; fail=1; }
exit $fail
