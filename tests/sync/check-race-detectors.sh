#!/bin/sh
# The race detectors understand the library.  First jp_mutex and jp_cond,
# from the library's sources: a deliberately racy
# counter (tests/sync/race-counter.c) is reported by helgrind, drd and
# ThreadSanitizer, and the same program with the counter under a jp_mutex
# is reported by none of them.  The same for jp_rwlock, jp_sem and
# jp_barrier (tests/sync/race-rwlock.c: its racy form writes under a read lock).  The programs are built here from the
# library's sources, so the check does not depend on how this tree was
# configured: plain (valgrind client requests compiled in) for valgrind,
# -fsanitize=thread for TSan.  Exit 77 when no detector is available.
#
# No run can run away.  Valgrind runs one thread at a time; with its
# default pipe lock a thread that spins on an atomic can take the lock back
# at every time slice and starve the thread it waits for (drd on "rp epoch
# 200" once spent 6 minutes so in a loaded make distcheck).  So valgrind
# runs with --fair-sched=try (a ticket lock: the threads take turns; "try"
# falls back to the pipe where the kernel lacks what it needs; override
# with JP_RACE_FAIR_SCHED=no|yes|try), the programs yield or park
# where they wait, and every run is bounded by timeout(1) (each
# JP_RACE_TIMEOUT seconds, default 60, where a normal run takes 0.5-3
# s): one that runs past it fails, naming the program and the tool.
# Each "ok" line gives the run's seconds.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}"
if [ -n "${VALGRIND:-}" ]; then echo "SKIP: runs the detectors itself"; exit 77; fi
if [ "${JP_FOREIGN:-no}" = yes ]; then
  echo "SKIP: ${JP_HOST:-cross} build: valgrind and TSan run on the native build only"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
srcs=""
for f in sync/sync_mode.c sync/mutex.c sync/cond.c sync/wait.c base/park.c sync/lockdep.c \
         base/os.c base/msg.c base/stack.c base/stack_cfi.c base/options.c base/lock.c \
         base/thread_exit.c \
         sync/rwlock.c sync/sem.c sync/barrier.c; do srcs="$srcs $top_srcdir/lib/$f"; done
inc="-I$top_builddir -I$top_srcdir/include -I$top_builddir/include -I$top_srcdir/lib"
fail=0 ran=0
bound=${JP_RACE_TIMEOUT:-60}
vg="valgrind -q --fair-sched=${JP_RACE_FAIR_SCHED:-try}"
if command -v timeout >/dev/null 2>&1; then
  bounded="timeout -k 5 $bound"
else
  bounded=""; echo "note: timeout(1) not found, the runs are not bounded"
fi
now_ms() { s=$(date +%s%N); echo $((s / 1000000)); }

# run WHAT LOG COMMAND... : run COMMAND, its output to LOG, within $bound
# seconds; rc is its exit status and secs its wall time.  Returns 1 (and
# fails the check, loudly) when the bound killed it.
run() {
  what=$1 log=$2; shift 2
  t0=$(now_ms)
  # shellcheck disable=SC2086
  $bounded "$@" > "$log" 2>&1; rc=$?
  t1=$(now_ms); ms=$((t1 - t0)); secs=$((ms / 1000)).$((ms % 1000 / 100))
  if [ -n "$bounded" ] && { [ $rc -eq 124 ] || [ $rc -eq 137 ]; }; then
    echo "FAIL: TIMEOUT: $what ran past ${bound} s and was killed (a thread starved?)"
    tail -n 20 "$log"; fail=1; return 1
  fi
  return 0
}

build() { # name extra-flags...
  name=$1; shift
  # shellcheck disable=SC2086
  if ! $CC -std=gnu11 -O1 -g -pthread "$@" $inc -o "$tmp/$name" "$prog" $srcs 2> "$tmp/$name.cc"; then
    echo "FAIL: cannot build $name:"; cat "$tmp/$name.cc"; fail=1; return 1
  fi
}

expect() { # racy|clean tool log rc pattern
  want=$1 tool=$2 log=$3 rc=$4 pat=$5
  if [ "$want" = racy ]; then
    if [ "$rc" -ne 0 ] && grep -q "$pat" "$log"; then
      echo "ok: $tool reports the racy $p ($secs s)"
    else
      echo "FAIL: $tool did not report the racy $p (exit $rc)"; tail -n 20 "$log"; fail=1
    fi
  else
    if [ "$rc" -eq 0 ] && ! grep -q "$pat" "$log"; then
      echo "ok: $tool is silent on the correct $p ($secs s)"
    else
      echo "FAIL: $tool reports the correct $p (exit $rc)"; tail -n 40 "$log"; fail=1
    fi
  fi
}

# race-counter: jp_mutex and jp_cond; race-rwlock: jp_rwlock, jp_sem and
# jp_barrier.
for p in race-counter race-rwlock; do
  prog="$top_srcdir/tests/sync/$p.c"
  # ---- helgrind and drd ---------------------------------------------------
  case "${SANITIZERS:-no}" in
    no|"") san=no ;;
    *) san=yes ;;
  esac
  if [ "$san" = yes ]; then
    echo "note: sanitizer build, valgrind part skipped"
  elif ! command -v valgrind >/dev/null 2>&1; then
    echo "note: valgrind not found, helgrind and drd part skipped"
  elif [ ! -f /usr/include/valgrind/helgrind.h ] && ! grep -q 'HAVE_VALGRIND_HELGRIND_H 1' "$top_builddir/config.h"; then
    echo "note: valgrind headers missing, helgrind and drd part skipped"
  else
    # -gdwarf-4: valgrind 3.19 cannot read the DWARF 5 that clang writes by default.
    if build $p-racy-vg -gdwarf-4 && build $p-locked-vg -gdwarf-4 -DLOCKED; then
      for tool in helgrind drd; do
        # shellcheck disable=SC2086
        run "$tool on the racy $p" "$tmp/$p.r.$tool" $vg --tool=$tool --error-exitcode=3 \
            "$tmp/$p-racy-vg" && expect racy $tool "$tmp/$p.r.$tool" $rc 'data race\|Conflicting'
        # shellcheck disable=SC2086
        run "$tool on the correct $p" "$tmp/$p.l.$tool" $vg --tool=$tool --error-exitcode=3 \
            "$tmp/$p-locked-vg" && expect clean $tool "$tmp/$p.l.$tool" $rc 'data race\|Conflicting'
        ran=1
      done
    fi
  fi

  # ---- ThreadSanitizer ----------------------------------------------------
  echo 'int main(void) { return 0; }' > "$tmp/t.c"
  if $CC -fsanitize=thread -o "$tmp/t" "$tmp/t.c" 2>/dev/null && "$tmp/t" 2>/dev/null; then
    if build $p-racy-tsan -fsanitize=thread && build $p-locked-tsan -fsanitize=thread -DLOCKED; then
      run "ThreadSanitizer on the racy $p" "$tmp/$p.r.tsan" \
          env TSAN_OPTIONS="exitcode=66 halt_on_error=0" "$tmp/$p-racy-tsan" &&
        expect racy ThreadSanitizer "$tmp/$p.r.tsan" $rc 'ThreadSanitizer: data race'
      run "ThreadSanitizer on the correct $p" "$tmp/$p.l.tsan" \
          env TSAN_OPTIONS="exitcode=66" "$tmp/$p-locked-tsan" &&
        expect clean ThreadSanitizer "$tmp/$p.l.tsan" $rc 'WARNING: ThreadSanitizer'
      ran=1
    fi
    # The same program linked to the library as built (not instrumented
    # in a plain build): the library tells TSan at run time.
    case "${SANITIZERS:-no}" in *address*) ;; *)
      for v in racy locked; do
        d=""; [ $v = locked ] && d=-DLOCKED
        # shellcheck disable=SC2086
        if $CC -std=gnu11 -O1 -g -pthread -fsanitize=thread $d -I$top_srcdir/include \
             -I$top_builddir/include -o "$tmp/$p-$v-lib" "$prog" -L"$top_builddir/lib/.libs" \
             -ljpsync 2> "$tmp/$p-$v-lib.cc"; then
          run "ThreadSanitizer on the $v $p (with the library as built)" "$tmp/$p.$v.lib" \
              env LD_LIBRARY_PATH="$top_builddir/lib/.libs" TSAN_OPTIONS="exitcode=66 halt_on_error=0" \
              "$tmp/$p-$v-lib" || continue
          if [ $v = racy ]; then
            expect racy "ThreadSanitizer (with the library as built)" "$tmp/$p.$v.lib" $rc 'ThreadSanitizer: data race'
          else
            expect clean "ThreadSanitizer (with the library as built)" "$tmp/$p.$v.lib" $rc 'WARNING: ThreadSanitizer'
          fi
        else
          echo "FAIL: cannot build $p-$v-lib:"; cat "$tmp/$p-$v-lib.cc"; fail=1
        fi
      done ;;
    esac
  else
    echo "note: $CC cannot build and run -fsanitize=thread programs, TSan part skipped"
  fi
done

# ---- user programs, with the library as built ----------------------------
# tests/sync/race-programs.c: the programs a user writes (every primitive, and
# memory handed between threads), linked to lib/.libs/libjpsync.so as this
# tree built it.  ThreadSanitizer: the program is built with
# -fsanitize=thread and the library is not (in a plain build), as with a
# distribution's package; it must report no correct program and every
# racy one.  helgrind and drd: the same programs, built plain.
libdir=$top_builddir/lib/.libs
correct="workqueue spsc mpsc mpmc pool arena epoch wait rounds alloc heap-reuse"
racy="racy-counter racy-queue racy-alloc"
rp="$top_srcdir/tests/sync/race-programs.c"
rpinc="-I$top_srcdir/include -I$top_builddir/include -I$top_srcdir/tests"
run_programs() { # tool prog-binary run-prefix...
  tool=$1 bin=$2; shift 2
  for p in $correct $racy; do
    run "$tool on race-programs $p (rp $p 200)" "$tmp/p.$tool.$p" \
        env LD_LIBRARY_PATH="$libdir" "$@" "$bin" "$p" 200 || continue
    case " $racy " in *" $p "*) want=racy ;; *) want=clean ;; esac
    if [ "$want" = racy ]; then
      if [ "$rc" -ne 0 ] && grep -q "$pat" "$tmp/p.$tool.$p"; then
        echo "ok: $tool reports $p ($secs s)"
      else
        echo "FAIL: $tool did not report $p (exit $rc)"; tail -n 20 "$tmp/p.$tool.$p"; fail=1
      fi
    elif [ "$rc" -eq 0 ] && ! grep -q "$pat" "$tmp/p.$tool.$p"; then
      echo "ok: $tool is silent on $p ($secs s)"
    else
      echo "FAIL: $tool reports the correct program $p (exit $rc)"; tail -n 60 "$tmp/p.$tool.$p"; fail=1
    fi
  done
}
case "${SANITIZERS:-no}" in
  *address*) echo "note: AddressSanitizer build, the library cannot be linked into a TSan program" ;;
  *)
    if $CC -fsanitize=thread -o "$tmp/t" "$tmp/t.c" 2>/dev/null && "$tmp/t" 2>/dev/null; then
      # shellcheck disable=SC2086
      if $CC -std=gnu11 -O1 -g -pthread -fsanitize=thread $rpinc -o "$tmp/rp-tsan" "$rp" \
           -L"$libdir" -ljpsync 2> "$tmp/rp-tsan.cc"; then
        pat='WARNING: ThreadSanitizer'
        run_programs ThreadSanitizer "$tmp/rp-tsan" env TSAN_OPTIONS="exitcode=66 halt_on_error=0"
        ran=1
      else
        echo "FAIL: cannot build race-programs with -fsanitize=thread:"; cat "$tmp/rp-tsan.cc"; fail=1
      fi
    fi ;;
esac
if [ "$san" = no ] && command -v valgrind >/dev/null 2>&1 &&
   grep -q 'HAVE_VALGRIND_HELGRIND_H 1' "$top_builddir/config.h"; then
  # shellcheck disable=SC2086
  if $CC -std=gnu11 -O1 -g -gdwarf-4 -pthread $rpinc -o "$tmp/rp" "$rp" -L"$libdir" -ljpsync \
       2> "$tmp/rp.cc"; then
    pat='Possible data race\|Conflicting'
    for tool in helgrind drd; do
      # shellcheck disable=SC2086
      run_programs $tool "$tmp/rp" $vg --tool=$tool --error-exitcode=3
    done
    ran=1
  else
    echo "FAIL: cannot build race-programs:"; cat "$tmp/rp.cc"; fail=1
  fi
fi

[ $fail -ne 0 ] && exit 1
[ $ran -eq 0 ] && { echo "SKIP: no race detector available"; exit 77; }
exit 0
