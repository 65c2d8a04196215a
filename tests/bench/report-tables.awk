# report-tables.awk: the median tables of summary.md, one per group
# (workload, unit, better) of a benchmark, with the best peer of each row
# and the ratio of each of ours to it.
#
# Part of the benchmark report generator (see report-read.awk for the
# tables it reads, report-calc.awk for medians and verdicts).  Counts, for
# the benchmark's verdict line, each row as nwin, npar or nloss, and lists
# the losses in `losses`.  A group measured at two or more thread counts
# gets a line chart now; one measured at a single count becomes a bar of
# the bar set of its benchmark column and unit (nbars, bsc, bsu, bsb, bsn,
# bsg), drawn later by bar_charts().

# The tables of benchmark b, written to the file body.
function median_tables(b, body,    gi, g, nc, no, col, oc, i, j, c, t, k, line, sepl, best, bestn, cell, r, v, s, bs) {
	print "### Medians (" REPS " repetition" (REPS == 1 ? "" : "s") ")" > body
	print "" > body
	print "Ratio: jpsync's median / the best peer's median in the row; " \
	    "**win** when better by more than 5%, *loss* when worse by more than 5%.  " \
	    "(n=K): a median of only K runs." > body
	for (gi = 1; gi <= ng[b]; gi++) {
		g = gl[b, gi]
		# The implementations that appear in this group, in driver order.
		nc = 0
		no = 0
		for (i = 1; i <= ni[b]; i++)
			for (j = 1; j <= nt[g]; j++)
				if ((g SUBSEP tl[g, j] SUBSEP il[b, i]) in present) {
					col[++nc] = il[b, i]
					if (ours(il[b, i]))
						oc[++no] = il[b, i]
					break
				}
		print "" > body
		print "#### " gw[g] ": " gu[g] ", " better_words(gb[g]) > body
		print "" > body
		line = "| threads |"
		sepl = "| ---: |"
		for (c = 1; c <= nc; c++) {
			line = line " " col[c] " |"
			sepl = sepl " ---: |"
		}
		line = line " best peer |"
		sepl = sepl " --- |"
		for (c = 1; c <= no; c++) {
			line = line " " oc[c] " / best |"
			sepl = sepl " ---: |"
		}
		print line > body
		print sepl > body
		for (j = 1; j <= nt[g]; j++) {
			t = tl[g, j]
			line = "| " t " |"
			best = ""
			bestn = ""
			for (c = 1; c <= nc; c++) {
				k = g SUBSEP t SUBSEP col[c]
				if (!(k in present))
					cell = ""
				else if (k in nfail)
					cell = "**FAILED** " nfail[k] "/" nruns(k)
				else
					cell = fmt(med[k]) (nruns(k) < REPS + 0 ? " (n=" nruns(k) ")" : "")
				line = line " " cell " |"
				if (!ours(col[c]) && (k in med) &&
				    (best == "" || (gb[g] == "higher" ? med[k] > best : med[k] < best))) {
					best = med[k]
					bestn = col[c]
				}
			}
			line = line " " bestn " |"
			for (c = 1; c <= no; c++) {
				k = g SUBSEP t SUBSEP oc[c]
				if (k in nfail)
					cell = "**FAILED**"
				else if (!(k in med) || best == "" || best == 0)
					cell = "-"
				else {
					r = med[k] / best
					v = verdict(r, gb[g])
					cell = sprintf("%.2f", r)
					if (v == "win") {
						cell = "**" cell " win**"
						nwin++
					} else if (v == "loss") {
						cell = "*" cell " loss*"
						nloss++
						losses = losses (losses == "" ? "" : "; ") gw[g] " at " t \
						    " thread" (t == 1 ? "" : "s") ": " oc[c] " " sprintf("%.2f", r) " of " bestn
					} else {
						cell = cell " par"
						npar++
					}
				}
				line = line " " cell " |"
			}
			print line > body
		}
		if (nt[g] >= 2)
			line_chart(b, g)
		else {
			# One thread count: a bar in the bar chart of its unit.
			s = gbc[g] SUBSEP gu[g] SUBSEP gb[g]
			if (!(s in barsets)) {
				barsets[s] = ++nbars
				bsc[nbars] = gbc[g]
				bsu[nbars] = gu[g]
				bsb[nbars] = gb[g]
				bsn[nbars] = 0
			}
			bs = barsets[s]
			bsg[bs, ++bsn[bs]] = g
		}
	}
}

# verdict.NAME.md (file vf): one line, how often jpsync wins, ties and
# loses against the best peer, and one for peak RSS when it was compared.
function verdict_line(vf) {
	if (nwin + npar + nloss == 0) {
		print "jpsync was not measured against a peer here (see the notes)." > vf
		close(vf)
		return
	}
	printf "jpsync against the best peer, row by row: %d win, %d par, %d loss", nwin, npar, nloss > vf
	if (losses != "")
		printf " (losses: %s)", losses > vf
	print "." > vf
	if (rwin + rpar + rloss > 0)
		printf "Peak RSS against the leanest peer, row by row: %d lower, %d par, " \
		    "%d higher.\n", rwin, rpar, rloss > vf
	close(vf)
}
