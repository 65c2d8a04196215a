# report-main.awk: after the last CSV, writes under WORK, per benchmark:
#
#   status.tsv        name, rows, FAILED rows, malformed lines, header ok
#   medians.tsv       per benchmark/workload/unit/threads/implementation: the
#                     median value, runs, FAILED runs, median peak RSS (KiB)
#   body.NAME.md      the summary.md section of the benchmark NAME: the
#                     median tables, then the peak RSS table
#   verdict.NAME.md   how often jpsync wins, ties and loses
#   charts.list       one line per chart: gnuplot script, PNG, benchmark, title
#   plot/             the charts' data files and gnuplot scripts
#
# Part of the benchmark report generator; report-write.sh runs
#   awk -v WORK=DIR -v CAPTION=TEXT -v REPS=N -f report-read.awk
#       -f report-calc.awk -f report-tables.awk -f report-rss.awk
#       -f report-charts.awk -f report-bars.awk -f report-main.awk NAME.csv...
# REPS is the number of repetitions asked for: a median of fewer runs is
# marked (n=K) in the tables.

END {
	stat = WORK "/status.tsv"
	medf = WORK "/medians.tsv"
	printf "" > (WORK "/charts.list")
	print "benchmark\tworkload\tunit\tbetter\tthreads\timplementation\tmedian\truns\tfailed\tpeak_rss_kb" > medf
	for (bi = 1; bi <= nb; bi++) {
		b = bl[bi]
		print b "\t" nrows[b] "\t" nfailrows[b] "\t" nbad[b] "\t" hdr_ok[b] > stat
		body = WORK "/body." b ".md"
		printf "" > body
		# The per-benchmark state the writers share.
		nwin = npar = nloss = 0
		rwin = rpar = rloss = 0
		losses = ""
		nbars = 0
		delete barsets
		medians(b, medf)
		if (ng[b] == 0) {
			print "No results." > body
			close(body)
			continue
		}
		median_tables(b, body)
		rss_section(b, body)
		bar_charts(b)
		close(body)
		verdict_line(WORK "/verdict." b ".md")
	}
}
