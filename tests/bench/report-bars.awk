# report-bars.awk: the charts of workloads measured at one thread count
# each: one bar chart per bar set (benchmark column and unit, collected by
# median_tables()), and a line chart for each family of configurations
# among its bars.
#
# Part of the benchmark report generator (see report-read.awk for the
# tables it reads and report-charts.awk for the drawing).

# The bar charts of benchmark b, one per bar set, in table order.
function bar_charts(b,    bs, j, g, i, k, rowlab, rowval, rowthr, suf, thr, what, title) {
	for (bs = 1; bs <= nbars; bs++) {
		delete rowlab
		delete rowval
		delete rowthr
		for (j = 1; j <= bsn[bs]; j++) {
			g = bsg[bs, j]
			rowlab[j] = graw[g]
			rowthr[j] = tl[g, 1]
			for (i = 1; i <= ni[b]; i++) {
				k = g SUBSEP tl[g, 1] SUBSEP il[b, i]
				rowval[j, i] = (k in med) ? med[k] : ""
			}
		}
		# A shared ending ("-per-notify") goes into the title.
		suf = common_suffix(bsn[bs], rowlab)
		for (j = 1; j <= bsn[bs] && suf != ""; j++)
			rowlab[j] = substr(rowlab[j], 1, length(rowlab[j]) - length(suf))
		thr = same_threads(bsn[bs], rowlab, rowthr)
		what = (bsc[bs] != b) ? bsc[bs] : ""
		if (bsn[bs] == 1)
			what = what (what != "" ? " " : "") rowlab[1]
		gsub(/[-_]/, " ", suf)
		title = b ": " (what != "" ? what ", " : "") bsu[bs] suf \
		    (thr != "" ? " at " thr " thread" (thr == 1 ? "" : "s") : \
		     bsn[bs] > 1 ? " per workload (threads)" : "")
		bar_chart(safe(b "-" (bsc[bs] != b ? bsc[bs] "-" : "") bsu[bs]), title,
		    bsu[bs] suf, bsb[bs], thr != "" ? "workload" : "workload (threads)",
		    bsn[bs], rowlab, rowval, b)
		families(b, bs)
	}
}

# Workloads of one bar set named FAMILY_CONFIG (queue-bench's mpmc_1p1c,
# mpmc_2p2c, ...), each at its own thread count, also get a line chart of
# the family against threads: a synthetic group whose medians are theirs.
function families(b, bs,    j, g, f, nf, fl, fn, fm, G, t, i, k, m, dup) {
	nf = 0
	for (j = 1; j <= bsn[bs]; j++) {
		g = bsg[bs, j]
		f = graw[g]
		if (!sub(/_[^_]+$/, "", f) || f == "")
			continue
		if (!((bs, f) in fn)) {
			fn[bs, f] = 0
			fl[++nf] = f
		}
		fm[bs, f, ++fn[bs, f]] = g
	}
	for (i = 1; i <= nf; i++) {
		f = fl[i]
		if (fn[bs, f] < 2)
			continue
		G = b SUBSEP "family " f SUBSEP gu[fm[bs, f, 1]] SUBSEP gb[fm[bs, f, 1]]
		gw[G] = (bsc[bs] != b ? bsc[bs] ": " : "") f
		gu[G] = gu[fm[bs, f, 1]]
		gb[G] = gb[fm[bs, f, 1]]
		wunits[b, gw[G]] = 1
		nt[G] = 0
		dup = 0
		for (m = 1; m <= fn[bs, f]; m++) {
			g = fm[bs, f, m]
			t = tl[g, 1]
			if ((G, t) in tseen)
				dup = 1
			tseen[G, t] = 1
			tl[G, ++nt[G]] = t
			if (t !~ /^[0-9]+$/)
				tcat[G] = 1
			for (k = 1; k <= ni[b]; k++)
				if ((g SUBSEP t SUBSEP il[b, k]) in med)
					med[G SUBSEP t SUBSEP il[b, k]] = med[g SUBSEP t SUBSEP il[b, k]]
		}
		if (dup)
			continue	# two configurations at one thread count: no line
		sort_threads(G)
		line_chart(b, G)
	}
}

# When every row has the same thread count: that count, the labels left
# as they are; else "" and each label gets its count.
function same_threads(n, lab, thr,    j) {
	for (j = 2; j <= n; j++)
		if (thr[j] != thr[1]) {
			for (j = 1; j <= n; j++)
				lab[j] = lab[j] " (" thr[j] ")"
			return ""
		}
	return thr[1]
}

# The longest "-..." or "_..." ending that all n labels share (and that
# leaves something of each); "" if none.
function common_suffix(n, lab,    i, j, c, suf, ok) {
	if (n < 2)
		return ""
	for (i = 2; i < length(lab[1]); i++) {
		c = substr(lab[1], i, 1)
		if (c != "-" && c != "_")
			continue
		suf = substr(lab[1], i)
		ok = 1
		for (j = 2; j <= n && ok; j++)
			if (length(lab[j]) <= length(suf) ||
			    substr(lab[j], length(lab[j]) - length(suf) + 1) != suf)
				ok = 0
		if (ok)
			return suf
	}
	return ""
}
