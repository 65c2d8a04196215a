# report-charts.awk: the gnuplot scripts of the report's PNG charts.
#
# Part of the benchmark report generator (see report-read.awk for the
# tables it reads).  line_chart() draws a group's medians against threads,
# one line per implementation; bar_chart() draws rows (workloads) against
# implementations.  Each writes its data and script under WORK/plot/ and
# one line to WORK/charts.list (script, PNG, benchmark, title);
# report-write.sh runs gnuplot on them in the results folder.  An
# implementation keeps its colour (its column in the CSV) in every chart
# of its benchmark; ours are drawn thicker.  CAPTION (-v) is the machine
# line printed under every chart.

BEGIN {
	SCALEWORD[1] = ""
	SCALEWORD[1e3] = ", thousands"
	SCALEWORD[1e6] = ", millions"
	SCALEWORD[1e9] = ", billions"
}

# A file name part: anything but letters, digits and _.+- becomes _.
function safe(s) { gsub(/[^A-Za-z0-9_.+-]/, "_", s); return s }
# A gnuplot string.
function gpstr(s) { gsub(/["\\]/, "", s); return "\"" s "\"" }

# Shared gnuplot preamble: small PNG, title, caption, grid.
function gp_head(gp, png, title) {
	print "set terminal pngcairo size 640,400 font \"sans,9\" noenhanced" > gp
	print "set output " gpstr(png) > gp
	print "set title " gpstr(title) > gp
	print "set label 1 " gpstr(CAPTION) " at screen 0.01, screen 0.03 font \",7\"" > gp
	print "set bmargin 5" > gp
	print "set grid ytics" > gp
	print "set key outside right top" > gp
	# gnuplot's fifth default colour (yellow) is hard to see on white.
	print "set linetype 5 lc rgb \"#b8860b\"" > gp
}

# The factor that brings hi under 10 000 (the axis says which).
function scale(hi) {
	return hi >= 1e10 ? 1e9 : hi >= 1e7 ? 1e6 : hi >= 1e4 ? 1e3 : 1
}

# A linear y range from 0 with room above the highest value (gnuplot
# refuses an empty range, as all zeros would give).
function yrange(lo, hi) {
	if (lo >= 0 && hi > 0)
		return "[0:" hi * 1.08 "]"
	if (lo == hi)
		return "[" (lo - 1) ":" (hi + 1) "]"
	return "[*:*]"
}

# Log scale when the values span more than 100x, else a range from 0.
function yaxis(gp, lo, hi, sc) {
	if (lo > 0 && hi / lo > 100)
		print "set logscale y 10" > gp
	else
		print "set yrange " yrange(lo / sc, hi / sc) > gp
}

# A line chart of group g of benchmark b: value against threads.
function line_chart(b, g,    title, id, gp, png, i, j, impl, k, d, n, plot, lo, hi, v, sep, xt, sc) {
	id = safe(b "-" gw[g] (wunits[b, gw[g]] > 1 ? "-" gu[g] : ""))
	png = id ".png"
	gp = WORK "/plot/" id ".gp"
	lo = hi = ""
	for (i = 1; i <= ni[b]; i++)
		for (j = 1; j <= nt[g]; j++) {
			k = g SUBSEP tl[g, j] SUBSEP il[b, i]
			if (!(k in med))
				continue
			v = med[k]
			if (lo == "" || v < lo) lo = v
			if (hi == "" || v > hi) hi = v
		}
	if (hi == "")
		return
	sc = scale(hi)
	title = b ": " gw[g] " (" gu[g] " against threads)"
	gp_head(gp, png, title)
	print "set xlabel \"threads\"" > gp
	print "set ylabel " gpstr(gu[g] SCALEWORD[sc] " (" better_words(gb[g]) ")") > gp
	plot = ""
	sep = "plot "
	for (i = 1; i <= ni[b]; i++) {
		impl = il[b, i]
		d = WORK "/plot/" id "." i ".dat"
		n = 0
		for (j = 1; j <= nt[g]; j++) {
			k = g SUBSEP tl[g, j] SUBSEP impl
			if (!(k in med))
				continue
			print (g in tcat ? j : tl[g, j]), med[k] / sc > d
			n++
		}
		if (n == 0)
			continue
		close(d)
		plot = plot sep gpstr(d) " using 1:2 with linespoints lt " i " pt " (i % 7 + 1) \
		    " lw " (ours(impl) ? 3 : 1.5) " title " gpstr(impl)
		sep = ", \\\n  "
	}
	xt = ""
	for (j = 1; j <= nt[g]; j++)
		xt = xt (j > 1 ? ", " : "") (g in tcat ? gpstr(tl[g, j]) " " j : tl[g, j])
	print "set xtics (" xt ")" > gp
	# Room beside the first and last thread counts, so their tics show.
	if (!(g in tcat) && tl[g, nt[g]] + 0 >= 4 * (tl[g, 1] + 0) && tl[g, 1] + 0 > 0) {
		print "set logscale x 2" > gp
		print "set xrange [" (tl[g, 1] / 1.25) ":" (tl[g, nt[g]] * 1.25) "]" > gp
	} else if (g in tcat)
		print "set xrange [0.7:" (nt[g] + 0.3) "]" > gp
	else {
		v = (tl[g, nt[g]] - tl[g, 1]) * 0.06 + 0.1
		print "set xrange [" (tl[g, 1] - v) ":" (tl[g, nt[g]] + v) "]" > gp
	}
	yaxis(gp, lo, hi, sc)
	print plot > gp
	close(gp)
	print gp "\t" png "\t" b "\t" title > (WORK "/charts.list")
}

# A grouped bar chart: nrow rows (rowlab[j], one cluster each) against the
# implementations of b that have a value rowval[j, i] in some row (one
# colour each, the same as in the benchmark's line charts).
function bar_chart(id, title, unit, better, xlabel, nrow, rowlab, rowval, b,    gp, png, d, i, j, c, lo, hi, v, line, sc, nc, col, plot, xt) {
	png = id ".png"
	gp = WORK "/plot/" id ".gp"
	d = WORK "/plot/" id ".dat"
	lo = hi = ""
	nc = 0
	for (i = 1; i <= ni[b]; i++) {
		v = ""
		for (j = 1; j <= nrow; j++) {
			if (rowval[j, i] == "")
				continue
			v = rowval[j, i] + 0
			if (lo == "" || v < lo) lo = v
			if (hi == "" || v > hi) hi = v
		}
		if (v != "")
			col[++nc] = i
	}
	if (hi == "")
		return
	sc = scale(hi)
	xt = ""
	for (j = 1; j <= nrow; j++) {
		line = ""
		for (c = 1; c <= nc; c++) {
			v = rowval[j, col[c]]
			line = line (c > 1 ? "\t" : "") (v == "" ? "?" : v / sc)
		}
		print line > d
		xt = xt (j > 1 ? ", " : "") wrap(rowlab[j]) " " (j - 1)
	}
	close(d)
	gp_head(gp, png, title)
	print "set ylabel " gpstr(unit SCALEWORD[sc] " (" better_words(better) ")") > gp
	print "set style data histograms" > gp
	print "set style histogram clustered gap 1" > gp
	print "set style fill solid 0.8 border -1" > gp
	print "set datafile separator \"\\t\"" > gp
	print "set datafile missing \"?\"" > gp
	print "set xtics nomirror (" xt ")" > gp
	print "set xlabel " gpstr(xlabel) > gp
	if (nrow > 4)
		print "set xtics font \",8\"" > gp
	yaxis(gp, lo, hi, sc)
	plot = ""
	for (c = 1; c <= nc; c++)
		plot = plot (c > 1 ? ", \\\n  " : "plot ") (c > 1 ? "\"\"" : gpstr(d)) " using " c \
		    " lt " col[c] " title " gpstr(il[b, col[c]])
	print plot > gp
	close(gp)
	print gp "\t" png "\t" b "\t" title > (WORK "/charts.list")
}

# A tic label for the script: quoted, and broken in two at the "-", "_"
# or " " nearest its middle when it is long.
function wrap(s,    i, k, c, best) {
	gsub(/["\\]/, "", s)
	if (length(s) <= 12)
		return "\"" s "\""
	k = 0
	for (i = 2; i < length(s); i++) {
		c = substr(s, i, 1)
		if ((c == "-" || c == "_" || c == " ") &&
		    (k == 0 || (i - length(s) / 2) ^ 2 < best)) {
			k = i
			best = (i - length(s) / 2) ^ 2
		}
	}
	if (k == 0)
		return "\"" s "\""
	return "\"" substr(s, 1, k - 1) "\\n" substr(s, k + 1) "\""
}
