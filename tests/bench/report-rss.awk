# report-rss.awk: the peak RSS section of a benchmark in summary.md: one
# table, rows workload x threads, columns the implementations, with the
# leanest peer and jpsync's ratio to it, and a bar chart of each workload
# at its largest thread count.
#
# Part of the benchmark report generator (see report-read.awk for the
# tables it reads).  Where every median peak RSS of the benchmark lies
# within 25% of every other, the table and chart would show nothing: one
# line says so instead.  Counts each compared row as rwin (lower), rpar or
# rloss (higher) for the verdict line.

function rss_section(b, body,    k, hasrss, rlo, rhi, line, sepl, i, nrow, rowlab, rowval, rowthr, gi, g, j, t, best, bestn, mine, any, r, v, thr) {
	hasrss = 0
	rlo = rhi = ""
	for (k in mrss)
		if (index(k, b SUBSEP) == 1) {
			hasrss = 1
			if (rlo == "" || mrss[k] < rlo) rlo = mrss[k]
			if (rhi == "" || mrss[k] > rhi) rhi = mrss[k]
		}
	if (hasrss && rlo > 0 && rhi / rlo < 1.25) {
		print "" > body
		printf "Peak RSS: %s to %s MiB for every implementation, workload and " \
		    "thread count (within 25%%), so neither tabulated nor charted.\n",
		    mib(rlo), mib(rhi) > body
		return
	}
	if (!hasrss)
		return
	print "" > body
	print "### Peak RSS (MiB, median of ru_maxrss; lower is better)" > body
	print "" > body
	line = "| workload | threads |"
	sepl = "| --- | ---: |"
	for (i = 1; i <= ni[b]; i++) {
		line = line " " il[b, i] " |"
		sepl = sepl " ---: |"
	}
	print line " leanest peer | jpsync / leanest |" > body
	print sepl " --- | ---: |" > body
	nrow = 0
	for (gi = 1; gi <= ng[b]; gi++) {
		g = gl[b, gi]
		if ((b, gw[g]) in rssdone)
			continue	# the same runs, reported under another unit
		rssdone[b, gw[g]] = 1
		for (j = 1; j <= nt[g]; j++) {
			t = tl[g, j]
			line = "| " gw[g] " | " t " |"
			best = ""
			bestn = ""
			mine = ""
			any = 0
			for (i = 1; i <= ni[b]; i++) {
				k = g SUBSEP t SUBSEP il[b, i]
				line = line " " (k in mrss ? mib(mrss[k]) : "") " |"
				if (!(k in mrss))
					continue
				any = 1
				if (ours(il[b, i])) {
					if (mine == "" || mrss[k] < mine)
						mine = mrss[k]
				} else if (best == "" || mrss[k] < best) {
					best = mrss[k]
					bestn = il[b, i]
				}
			}
			if (!any)
				continue
			r = (mine != "" && best != "" && best > 0) ? sprintf("%.2f", mine / best) : "-"
			if (r != "-") {
				v = verdict(mine / best, "lower")
				if (v == "win") rwin++
				else if (v == "loss") rloss++
				else rpar++
			}
			print line " " bestn " | " r " |" > body
			if (j == nt[g]) {
				# The chart shows each workload at its largest thread count.
				rowlab[++nrow] = gw[g]
				rowthr[nrow] = t
				for (i = 1; i <= ni[b]; i++) {
					k = g SUBSEP t SUBSEP il[b, i]
					rowval[nrow, i] = (k in mrss) ? mib(mrss[k]) : ""
				}
			}
		}
	}
	if (nrow > 0) {
		thr = same_threads(nrow, rowlab, rowthr)
		bar_chart(safe(b "-rss"), b ": peak RSS per workload" \
		    (thr != "" ? " at " thr " threads" : " at its largest thread count"),
		    "peak RSS, MiB", "lower", thr != "" ? "workload" : "workload (threads)",
		    nrow, rowlab, rowval, b)
	}
}
