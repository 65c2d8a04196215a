# report-read.awk: reads the drivers' CSVs into the report's tables.
#
# Part of the benchmark report generator (report-write.sh runs awk -f on
# report-read.awk, report-calc.awk, report-tables.awk, report-rss.awk,
# report-charts.awk and report-main.awk, in that order).  Each CSV
# (NAME.csv, the header and columns of the driver contract in
# doc/benchmarks.md) is one benchmark NAME.  A row that breaks the contract
# is counted as malformed and otherwise ignored.
#
# What the other parts read (b is a benchmark, g a group, t a thread
# count as written in the CSV, i an implementation):
#
#   nb, bl[1..nb]          the benchmarks, in the order of the files
#   nrows[b], nfailrows[b], nbad[b], hdr_ok[b]
#                          rows, FAILED rows, malformed rows, header as
#                          the contract says (1) or not (0)
#   ng[b], gl[b, 1..]      the groups of b in CSV order: one group per
#                          workload, unit and `better`
#   gw[g]                  the group's name in the report: the workload, or
#                          "COLUMN: workload" when the benchmark column is
#                          not b (sync-bench's "lock: short")
#   gbc[g], graw[g]        the benchmark column and the bare workload
#   gu[g], gb[g]           unit, and "higher" or "lower" (is better)
#   wunits[b, w]           how many units the workload named w has
#   ni[b], il[b, 1..]      the implementations of b in CSV order
#   nt[g], tl[g, 1..]      the thread counts of g in CSV order (sorted
#                          later); tcat[g] is set when one is not a number
#   present[k]             a row exists for k = g SUBSEP t SUBSEP i
#   nv[k], val[k, 1..]     its values; nfail[k]: its FAILED runs
#   nr[k], rss[k, 1..]     its peak RSS values (KiB)
#
# Plain POSIX awk (Debian's default awk is mawk): no asort, no gensub.

BEGIN {
	FS = ","
	HEADER = "benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb"
	NUM = "^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$"
	nb = 0
}

# The first line of a file: a new benchmark, named after the file.
FNR == 1 {
	sub(/\r$/, "")
	b = FILENAME
	sub(/.*\//, "", b)
	sub(/[.]csv$/, "", b)
	bl[++nb] = b
	nrows[b] = nfailrows[b] = nbad[b] = 0
	hdr_ok[b] = ($0 == HEADER)
	if (hdr_ok[b])
		next
}

# A row: checked against the contract, then filed under its group,
# thread count and implementation.
{
	sub(/\r$/, "")
	if ($0 == "")
		next
	nrows[b]++
	if (NF != 9 || $2 == "" || $3 == "" || $4 == "" || $7 == "" ||
	    ($8 != "higher" && $8 != "lower") ||
	    ($6 != "FAILED" && $6 !~ NUM) || ($9 != "" && $9 !~ NUM)) {
		nbad[b]++
		next
	}
	w = ($1 == b) ? $2 : $1 ": " $2
	g = b SUBSEP w SUBSEP $7 SUBSEP $8
	if (!(g in gseen)) {
		gseen[g] = 1
		ng[b]++
		gl[b, ng[b]] = g
		gw[g] = w
		gbc[g] = $1
		graw[g] = $2
		gu[g] = $7
		gb[g] = $8
		wunits[b, w]++
	}
	if (!((b, $4) in iseen)) {
		iseen[b, $4] = 1
		ni[b]++
		il[b, ni[b]] = $4
	}
	if (!((g, $3) in tseen)) {
		tseen[g, $3] = 1
		nt[g]++
		tl[g, nt[g]] = $3
		if ($3 !~ /^[0-9]+$/)
			tcat[g] = 1
	}
	k = g SUBSEP $3 SUBSEP $4
	present[k] = 1
	if ($6 == "FAILED") {
		nfail[k]++
		nfailrows[b]++
	} else {
		nv[k]++
		val[k, nv[k]] = $6 + 0
	}
	if ($9 != "") {
		nr[k]++
		rss[k, nr[k]] = $9 + 0
	}
}
