#!/bin/sh
# medians.sh CSV [PEER] - the table a benchmark driver prints: for each
# benchmark,workload,threads of CSV (the driver contract's columns), the
# median of each implementation over the repetitions (FAILED rows left
# out), and the ratio of ours (an implementation named jpsync or starting
# with jp) to the best peer of the row, and to PEER when given.  Ratios are
# above 1 when ours is better, whichever way "better" points.
set -u
csv=$1 peer=${2:-}
grep -v '^benchmark,' "$csv" | grep -v ',FAILED,' |
  sort -t, -k1,1 -k2,2 -k3,3n -k4,4 |
  awk -F, "$(cat "$(dirname "$0")/median.awk")"'
    function flush() {
      if (n == 0) return
      print key "," impl "," median(v, 0, n) "," unit "," better
      n = 0
    }
    {
      k = $1 "," $2 "," $3
      if (k != key || $4 != impl) { flush(); key = k; impl = $4 }
      v[0, ++n] = $6; unit = $7; better = $8
    }
    END { flush() }' |
  awk -F, -v peer="$peer" '
    function ratio(a, b, k) { return (better[k] == "higher") ? a / b : b / a }
    {
      k = $1 "," $2 "," $3
      if (!(k in seen)) { order[++nk] = k; seen[k] = 1 }
      unit[k] = $6; better[k] = $7
      line[k] = line[k] sprintf(" %s=%s", $4, $5)
      if ($4 == "jpsync" || $4 ~ /^jp/) { jp[k] = $5; next }
      if ($4 == peer) pv[k] = $5
      if (!(k in best) || (($7 == "higher") ? $5 > best[k] : $5 < best[k])) { best[k] = $5; bestname[k] = $4 }
    }
    END {
      printf "%-46s %s\n", "benchmark,workload,threads (unit)",
        "medians; ratio jpsync/best peer" (peer != "" ? ", jpsync/" peer : "") " (>1: jpsync better)"
      for (i = 1; i <= nk; i++) {
        k = order[i]
        r = ""
        if ((k in jp) && (k in best) && best[k] > 0 && jp[k] > 0)
          r = sprintf("  ratio %.2f vs %s", ratio(jp[k], best[k], k), bestname[k])
        if (peer != "" && (k in jp) && (k in pv) && pv[k] > 0 && jp[k] > 0)
          r = r sprintf(", %.2f vs %s", ratio(jp[k], pv[k], k), peer)
        printf "%-46s%s%s\n", k " (" unit[k] ")", line[k], r
      }
    }'
