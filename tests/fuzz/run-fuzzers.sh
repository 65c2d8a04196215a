#!/bin/sh
# run-fuzzers.sh - run the libFuzzer builds of the fuzz targets (make fuzz,
# make fuzz-ci, make fuzz-known; see tests/fuzz/README).
#
#   run-fuzzers.sh --bin DIR --corpus DIR --work DIR [--jobs N] MODE TARGET...
#
# MODE is one of
#   --seconds N   each target N seconds from its corpus, a random seed;
#   --ci          each target's corpus once, then the fixed seed and run
#                 count of the table below (what CI runs: the same
#                 executions every time, so a finding reproduces);
#   --known DIR   each input of DIR/TARGET/ once with FUZZ_KNOWN=1, which
#                 turns on the checks of known failures: each should fail
#                 until its issue is fixed.
# --jobs N (default: $FUZZ_JOBS, else 1) runs up to N targets at once,
# each in its own process (the targets are single-threaded, alloc-mt runs
# two threads); each target's output is printed whole, in the order given,
# when all have finished.  A target's executions do not depend on N.
# New inputs that reach new code go to WORK/TARGET/new/ (copy the useful
# ones into the corpus); a crash, a model violation, a timeout, a leak or
# running out of memory writes the input to WORK/TARGET/ and is printed as
# "fuzz: FINDING ..." with the command that replays it.  Exit status 1 if
# any target found something (or, with --known, if a known failure now
# passes: close its issue and move the input into the corpus).
set -u

bin= corpus= work= mode= arg= jobs=${FUZZ_JOBS:-1}
while [ $# -gt 0 ]; do
	case $1 in
	--bin) bin=$2; shift 2 ;;
	--corpus) corpus=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--seconds) mode=seconds; arg=$2; shift 2 ;;
	--ci) mode=ci; shift ;;
	--known) mode=known; arg=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "run-fuzzers.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ -z "$bin" ] || [ -z "$corpus" ] || [ -z "$work" ] || [ -z "$mode" ] || [ $# -eq 0 ]; then
	echo "usage: run-fuzzers.sh --bin DIR --corpus DIR --work DIR (--seconds N|--ci|--known DIR) TARGET..." >&2
	exit 2
fi

# CI: executions per target, sized so that all of them together take about
# eleven minutes of CPU on the project's 2-core machine, six with --jobs 2,
# inside CI's hour (2026-12-06, one at a time: alloc 212 s, queue 128 s,
# diff 111 s, alloc-mt 65 s, the others 19-47 s; alloc draws edge sizes,
# which cost it 2.5 times its earlier time per execution).  Longer hunts:
# make fuzz.  A target not listed gets 10000.
ci_runs() {
	case $1 in
	alloc) echo 25000 ;;
	alloc-check) echo 6000 ;;
	alloc-mt) echo 16000 ;;
	queue) echo 24000 ;;
	pool) echo 12000 ;;
	arena) echo 160000 ;;
	epoch) echo 20000 ;;
	diff) echo 12000 ;;
	options) echo 36000 ;;
	*) echo 10000 ;;
	esac
}
CI_SEED=20261201

# Every run: no input longer than 4 KiB (the targets read at most a few
# thousand operations), a hang of 10 s or 2 GiB of memory is a finding.
common="-max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1"

case $jobs in
''|*[!0-9]*|0) echo "run-fuzzers.sh: --jobs wants a count of 1 or more, not '$jobs'" >&2; exit 2 ;;
esac

failed=0
summary=

# Several at once: this script once per target, xargs keeping N running;
# then each target's output and summary line, in the order given.
if [ "$jobs" -gt 1 ] && [ $# -gt 1 ]; then
	mkdir -p "$work"
	export FUZZ_SELF="$0" FUZZ_BIN="$bin" FUZZ_CORPUS="$corpus" \
		FUZZ_WORK="$work" FUZZ_MODE="$mode" FUZZ_ARG="$arg"
	printf '%s\n' "$@" | xargs -P "$jobs" -I{} sh -c '
		t=$0
		case $FUZZ_MODE in ci) set -- --ci ;; *) set -- "--$FUZZ_MODE" "$FUZZ_ARG" ;; esac
		FUZZ_JOBS=1 sh "$FUZZ_SELF" --bin "$FUZZ_BIN" --corpus "$FUZZ_CORPUS" \
			--work "$FUZZ_WORK" "$@" -- "$t" >"$FUZZ_WORK/$t.out" 2>&1
		echo $? >"$FUZZ_WORK/$t.rc"' {}
	for t in "$@"; do
		out=$work/$t.out
		sed '/^fuzz: summary/,$d' "$out" | sed '${/^$/d;}'
		line=$(sed -n '/^fuzz: summary/,${/^fuzz: summary/d;/^$/d;p;}' "$out")
		summary="$summary
${line:-$t: no summary (see $out)}"
		[ "$(cat "$work/$t.rc" 2>/dev/null)" = 0 ] || failed=1
	done
	echo
	echo "fuzz: summary ($mode, $jobs at once)$summary"
	exit $failed
fi

for t in "$@"; do
	exe=$bin/fuzz-$t
	dir=$work/$t
	if [ ! -x "$exe" ]; then
		echo "fuzz: $t: $exe is not built (make fuzz-build)" >&2
		failed=1
		continue
	fi
	rm -rf "$dir"
	mkdir -p "$dir/new"
	log=$dir/log
	start=$(date +%s)
	case $mode in
	known)
		n=0 still=0
		for f in "$arg/$t"/*; do
			[ -f "$f" ] || continue
			case $f in *.txt|*README*) continue ;; esac
			n=$((n + 1))
			if FUZZ_KNOWN=1 "$exe" $common "$f" >>"$log" 2>&1; then
				echo "fuzz: $t: known failure $f now passes: close its issue, move it into the corpus"
				failed=1
			else
				still=$((still + 1))
				echo "fuzz: $t: $f still fails (as known):"
				grep -m1 '^fuzz: ' "$log" | sed 's/^/    /'
				: >"$log"
			fi
		done
		summary="$summary
$t: $still of $n known failures still fail"
		continue
		;;
	ci)
		# The corpus first, file by file: a regression shows as itself.
		"$exe" $common "$corpus/$t"/* >"$log" 2>&1
		rc=$?
		if [ $rc -eq 0 ]; then
			"$exe" $common -seed=$CI_SEED -runs="$(ci_runs "$t")" \
				-artifact_prefix="$dir/" "$dir/new" "$corpus/$t" >>"$log" 2>&1
			rc=$?
		fi
		;;
	seconds)
		"$exe" $common -max_total_time="$arg" -artifact_prefix="$dir/" \
			"$dir/new" "$corpus/$t" >"$log" 2>&1
		rc=$?
		;;
	esac
	secs=$(( $(date +%s) - start ))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	newn=$(find "$dir/new" -type f | wc -l)
	if [ $rc -eq 0 ]; then
		res=ok
	else
		res="FINDING (exit $rc)"
		failed=1
		echo "fuzz: FINDING in $t (exit status $rc); the end of $log:"
		tail -n 40 "$log" | sed 's/^/    /'
		found=0
		for a in "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* "$dir"/slow-unit-*; do
			[ -f "$a" ] || continue
			found=1
			echo "fuzz: FINDING in $t: the input is $a"
			echo "fuzz:   replay it: tests/fuzz/replay-$t $a   (or FUZZ_TRACE=1 $exe $a)"
		done
		if [ $found -eq 0 ]; then
			# The corpus replay: the file libFuzzer ran last.
			last=$(sed -n 's/^Running: //p' "$log" | tail -n1)
			echo "fuzz: FINDING in $t: in the corpus (tests/fuzz/corpus/$t/)${last:+: $last}"
		fi
	fi
	summary="$summary
$t: ${execs:-?} executions in ${secs} s, ${newn} new inputs in $dir/new: $res"
done
echo
echo "fuzz: summary ($mode)$summary"
exit $failed
