# mimalloc-bench.awk - the tables of tests/bench/mimalloc-bench.sh, in
# markdown, from its CSV (the driver contract's columns; a workload
# TEST/SYSCALL holds strace's count of SYSCALL in TEST):
#   awk -F, -v scs="mmap munmap madvise mremap futex" -f mimalloc-bench.awk CSV
# For each test (row) and allocator (column): the median time and the
# median peak RSS over the repetitions, FAILED where any repetition failed,
# and jpsync's ratio to the best of the other allocators: best time / jpsync
# time (above 1, jpsync is faster) and jpsync RSS / the lowest RSS (above
# 1, jpsync uses more).  With strace counts, a third table of them.
BEGIN {
  cols = "jpsync glibc jemalloc mimalloc tcmalloc mimalloc3 snmalloc"
  n = split(cols, c, " "); for (i = 1; i <= n; i++) incols[c[i]] = 1
}
# The median of cell k (median.awk).
function med(k) { return median(v, k, cnt[k]) }
# A median for each measured cell; FAILED where any repetition failed.
function cell(k, fmt, scale) {
  if (!(k in seen)) return "-"
  if (k in bad) return "FAILED"
  return sprintf(fmt, med(k) / scale)
}
function header(title, last,    i, s, d) {
  print ""; print title; print ""
  s = "| test | threads |"; d = "|---|---:|"
  for (i = 1; i <= nim; i++) { s = s " " im[i] " |"; d = d "---:|" }
  print s " " last " |"; print d "---|"
}
# best(G, F, MODE): the peer (not jpsync) with the lowest median of
# field F (2 time, 9 RSS) in group G; "" when none.  Sets bestv.
function best(g, f,    i, k, m, b) {
  b = ""; bestv = ""
  for (i = 1; i <= nim; i++) {
    k = g SUBSEP im[i] SUBSEP f
    if (im[i] == "jpsync" || !(k in seen) || (k in bad) || !cnt[k]) continue
    m = med(k)
    if (bestv == "" || m < bestv) { bestv = m; b = im[i] }
  }
  return b
}
NR == 1 { next }
{
  t = $2; sc = ""
  if (t ~ /\//) { sc = t; sub(/.*\//, "", sc); sub(/\/.*/, "", t) }
  g = t SUBSEP $3
  if (!(g in gseen)) { gseen[g] = 1; gorder[++ng] = g }
  if (!($4 in known) && !($4 in incols)) extra = extra " " $4   # columns at the end
  known[$4] = 1
  f = (sc == "") ? 2 : sc; k = g SUBSEP $4 SUBSEP f
  seen[k] = 1
  if (sc != "") { anysc = 1; scg[g] = 1 }
  if ($6 == "FAILED") { bad[k] = 1; if (sc == "") { bad[g SUBSEP $4 SUBSEP 9] = 1; seen[g SUBSEP $4 SUBSEP 9] = 1 }; next }
  cnt[k]++; v[k, cnt[k]] = $6 + 0
  if (sc == "" && $9 != "") { k9 = g SUBSEP $4 SUBSEP 9; seen[k9] = 1; cnt[k9]++; v[k9, cnt[k9]] = $9 + 0 }
}
END {
  n = split(cols extra, c, " "); nim = 0
  for (i = 1; i <= n; i++) if (c[i] in known) im[++nim] = c[i]
  header("Time: median, seconds (relative time for larson, rptest, xmalloc-test, glibc-thread); lower is better",
    "jpsync speed / best peer")
  for (x = 1; x <= ng; x++) {
    split(gorder[x], p, SUBSEP); s = "| " p[1] " | " p[2] " |"
    for (i = 1; i <= nim; i++) s = s " " cell(gorder[x] SUBSEP im[i] SUBSEP 2, "%.2f", 1) " |"
    b = best(gorder[x], 2); k = gorder[x] SUBSEP "jpsync" SUBSEP 2; r = "-"
    if (b != "" && (k in seen) && !(k in bad) && med(k) > 0) r = sprintf("%.2f (%s)", bestv / med(k), b)
    print s " " r " |"
  }
  header("Peak RSS: median, MiB; lower is better; leanest: the lowest of the other allocators, glibc included",
    "jpsync RSS / leanest")
  for (x = 1; x <= ng; x++) {
    split(gorder[x], p, SUBSEP); s = "| " p[1] " | " p[2] " |"
    for (i = 1; i <= nim; i++) s = s " " cell(gorder[x] SUBSEP im[i] SUBSEP 9, "%.1f", 1024) " |"
    b = best(gorder[x], 9); k = gorder[x] SUBSEP "jpsync" SUBSEP 9; r = "-"
    if (b != "" && (k in seen) && !(k in bad) && bestv > 0) r = sprintf("%.2f (%s)", med(k) / bestv, b)
    print s " " r " |"
  }
  if (anysc) {
    nsc = split(scs, sv, " ")
    header("System calls, one run under strace -f -c: " scs, "jpsync mmap+munmap+madvise / mimalloc3")
    for (x = 1; x <= ng; x++) {
      if (!(gorder[x] in scg)) continue
      split(gorder[x], p, SUBSEP); s = "| " p[1] " | " p[2] " |"
      for (i = 1; i <= nim; i++) {
        cs = ""
        for (j = 1; j <= nsc; j++) {
          k = gorder[x] SUBSEP im[i] SUBSEP sv[j]
          cs = cs (j > 1 ? " " : "") ((k in bad) ? "FAILED" : (k in seen) ? med(k) : "-")
        }
        s = s " " cs " |"
      }
      r = "-"; tj = tm = 0; ok = 1
      for (j = 1; j <= 3; j++) {
        kj = gorder[x] SUBSEP "jpsync" SUBSEP sv[j]; km = gorder[x] SUBSEP "mimalloc3" SUBSEP sv[j]
        if (!cnt[kj] || !cnt[km] || (kj in bad) || (km in bad)) ok = 0
        else { tj += med(kj); tm += med(km) }
      }
      if (ok) r = (tm > 0) ? sprintf("%.2f (%d / %d)", tj / tm, tj, tm) : sprintf("- (%d / 0)", tj)
      print s " " r " |"
    }
  }
  print ""
  print "(\"FAILED\": a run of that cell failed; \"-\": not measured; see mimalloc-bench.notes)"
}
