# shellcheck shell=sh disable=SC2154 # the variables are report-write.sh's
# report-summary.sh: summary.md of a results folder; sourced by
# report-write.sh, whose variables it reads (the facts of machine.txt,
# $out, $work with drivers.tsv, status.tsv, notes.md, charts.ok and the
# awk's body.NAME.md and verdict.NAME.md).  write_summary prints, in
# order: the run (machine, load, command), how to read the tables, one
# line per driver with its result, the notes, the verdict of each
# benchmark, machine.txt, then each benchmark's section: its verdict,
# the driver's notes, its tables and its charts.  A driver's row that
# says FAILED sets fail=1.

write_summary() {
  echo "# libjpsync benchmark report"
  echo
  echo "Measured on $cpu, $nonline cores, Linux $kernel, $when;"
  echo "${os:-}, load average ${load0:-?} at the start and ${load1:-?} at the end."
  echo "Every number is the median of $reps repetition(s)$( [ "$quick" = 1 ] && echo ' in quick mode (tiny sizes)')."
  echo
  echo "Command: \`${invoked:+$invoked, i.e. }$cmdline\` with"
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
}
