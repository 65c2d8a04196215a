# report.awk: the arithmetic and layout of the benchmark report (driven by
# tests/bench/report.sh).  Reads the drivers' CSVs (the header and columns
# of the driver contract in doc/benchmarks.md) and writes, under WORK:
#
#   status.tsv        per CSV: name, rows, FAILED rows, malformed lines, header ok
#   medians.tsv       per benchmark/workload/unit/threads/implementation: the
#                     median value, runs, FAILED runs, median peak RSS (KiB)
#   body.NAME.md      the summary.md section of the benchmark NAME
#   verdict.NAME.md   one line: how often jpsync wins, ties and loses
#   charts.list       one line per chart: gnuplot script, PNG, benchmark, title
#   plot/             the charts' data files and gnuplot scripts
#
# Plain POSIX awk (Debian's default awk is mawk): no asort, no gensub.
#
# "Ours" are the implementations named jpsync or starting with jp
# (jp_mutex, jp_spsc, jp_pool, ...); every other name is a peer.  Each of
# ours is compared with the best peer of the same row (benchmark, workload,
# unit, threads), the highest or lowest as the row's `better` says.  The
# ratio printed is ours / best peer: above 1 wins when higher is better,
# below 1 wins when lower is better.  Within TIE (5%) it counts as par.
#
# Variables (-v): WORK (folder), CAPTION (the machine line of every chart),
# REPS (repetitions asked for).

BEGIN {
	FS = ","
	HEADER = "benchmark,workload,threads,implementation,repetition,value,unit,better,peak_rss_kb"
	NUM = "^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$"
	TIE = 0.05
	SCALEWORD[1] = ""
	SCALEWORD[1e3] = ", thousands"
	SCALEWORD[1e6] = ", millions"
	SCALEWORD[1e9] = ", billions"
	nb = 0
}

FNR == 1 {
	sub(/\r$/, "")
	file = FILENAME
	b = file
	sub(/.*\//, "", b)
	sub(/[.]csv$/, "", b)
	bl[++nb] = b
	nrows[b] = nfailrows[b] = nbad[b] = 0
	hdr_ok[b] = ($0 == HEADER)
	if (hdr_ok[b])
		next
}

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

function ours(name) { return name == "jpsync" || name ~ /^jp/ }

# Counts read without creating the element (a read of a[k] creates it, and
# `k in nfail` is how a FAILED cell is recognised).
function nfailed(k) { return (k in nfail) ? nfail[k] : 0 }
function nruns(k) { return ((k in nv) ? nv[k] : 0) + nfailed(k) }

# Median of the n values arr[k, 1..n] (insertion sort: n is a handful).
function median(arr, k, n,    i, j, t, a) {
	if (n < 1)
		return ""
	for (i = 1; i <= n; i++)
		a[i] = arr[k, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

# Numbers for people: 3 significant digits, k/M/G above 10 000.
function fmt(x,    ax) {
	ax = x < 0 ? -x : x
	if (ax >= 1e9) return sprintf("%.3gG", x / 1e9)
	if (ax >= 1e6) return sprintf("%.3gM", x / 1e6)
	if (ax >= 1e4) return sprintf("%.3gk", x / 1e3)
	if (ax >= 1000 || x == int(x)) return sprintf("%.0f", x)
	return sprintf("%.3g", x)
}

function mib(kib) { return kib == "" ? "" : sprintf("%.1f", kib / 1024) }

# For each ours/peer pair: "win", "par" or "loss".
function verdict(r, better) {
	if (better == "higher")
		return r > 1 + TIE ? "win" : r < 1 / (1 + TIE) ? "loss" : "par"
	return r < 1 / (1 + TIE) ? "win" : r > 1 + TIE ? "loss" : "par"
}

function safe(s) { gsub(/[^A-Za-z0-9_.+-]/, "_", s); return s }
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

function better_words(better) { return better == "higher" ? "higher is better" : "lower is better" }

# Sort the thread labels of group g numerically (unless some are not numbers).
function sort_threads(g,    i, j, t) {
	if (g in tcat)
		return
	for (i = 2; i <= nt[g]; i++)
		for (j = i; j > 1 && tl[g, j - 1] + 0 > tl[g, j] + 0; j--) {
			t = tl[g, j]; tl[g, j] = tl[g, j - 1]; tl[g, j - 1] = t
		}
}

# A line chart of group g: value against threads, one line per implementation.
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
	if (lo > 0 && hi / lo > 100)
		print "set logscale y 10" > gp
	else
		print "set yrange " yrange(lo / sc, hi / sc) > gp
	print plot > gp
	close(gp)
	print gp "\t" png "\t" b "\t" title > (WORK "/charts.list")
	return png
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

# The factor that brings hi under 10 000 (the axis says which).
function scale(hi) {
	return hi >= 1e10 ? 1e9 : hi >= 1e7 ? 1e6 : hi >= 1e4 ? 1e3 : 1
}

# Workloads of one bar set named FAMILY_CONFIG (queue-bench's mpmc_1p1c,
# mpmc_2p2c, ...), each at its own thread count, also get a line chart of
# the family against threads: a synthetic group whose medians are theirs.
function families(b, bs,    j, g, f, nf, fl, fn, G, t, i, k, m, dup) {
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

# A grouped bar chart: rows (workloads, one cluster each) against the
# implementations that have a value in some row (one colour each, the same
# as in the benchmark's line charts).
function bar_chart(id, title, unit, better, nrow, rowlab, rowval, b,    gp, png, d, i, j, lo, hi, v, line, sc, nc, col, plot, xt) {
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
	print "set xlabel " gpstr(XLABEL) > gp
	if (nrow > 4)
		print "set xtics font \",8\"" > gp
	if (lo > 0 && hi / lo > 100)
		print "set logscale y 10" > gp
	else
		print "set yrange " yrange(lo / sc, hi / sc) > gp
	plot = ""
	for (c = 1; c <= nc; c++)
		plot = plot (c > 1 ? ", \\\n  " : "plot ") (c > 1 ? "\"\"" : gpstr(d)) " using " c \
		    " lt " col[c] " title " gpstr(il[b, col[c]])
	print plot > gp
	close(gp)
	print gp "\t" png "\t" b "\t" title > (WORK "/charts.list")
}

# A tic label for the script: quoted, and broken in two at the "-" or "_"
# nearest its middle when it is long.
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
		nwin = npar = nloss = 0
		rwin = rpar = rloss = 0
		losses = ""
		nbars = 0
		delete barsets
		# Medians first, so tables and charts read the same numbers.
		for (gi = 1; gi <= ng[b]; gi++) {
			g = gl[b, gi]
			sort_threads(g)
			for (j = 1; j <= nt[g]; j++)
				for (i = 1; i <= ni[b]; i++) {
					k = g SUBSEP tl[g, j] SUBSEP il[b, i]
					if (!(k in present))
						continue
					if ((k in nv) && !(k in nfail))
						med[k] = median(val, k, nv[k])
					if (k in nr)
						mrss[k] = median(rss, k, nr[k])
					print b "\t" gw[g] "\t" gu[g] "\t" gb[g] "\t" tl[g, j] "\t" il[b, i] "\t" \
					    (k in med ? med[k] : "FAILED") "\t" nruns(k) "\t" nfailed(k) "\t" \
					    (k in mrss ? mrss[k] : "") > medf
				}
		}
		if (ng[b] == 0) {
			print "No results." > body
			close(body)
			continue
		}
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
				gpng[g] = line_chart(b, g)
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
		# Peak RSS: one table per benchmark, rows workload x threads.
		# Where every run's peak RSS is within 25% of every other's, the
		# table and chart would show nothing: one line says so instead.
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
			hasrss = 0
		}
		if (hasrss) {
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
			delete rowlab
			delete rowval
			delete rowthr
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
				XLABEL = thr != "" ? "workload" : "workload (threads)"
				bar_chart(safe(b "-rss"), b ": peak RSS per workload" \
				    (thr != "" ? " at " thr " threads" : " at its largest thread count"),
				    "peak RSS, MiB", "lower", nrow, rowlab, rowval, b)
			}
		}
		# Bar charts of the one-thread-count workloads, one per benchmark
		# column and unit.
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
			XLABEL = thr != "" ? "workload" : "workload (threads)"
			what = (bsc[bs] != b) ? bsc[bs] : ""
			if (bsn[bs] == 1)
				what = what (what != "" ? " " : "") rowlab[1]
			gsub(/[-_]/, " ", suf)
			title = b ": " (what != "" ? what ", " : "") bsu[bs] suf \
			    (thr != "" ? " at " thr " thread" (thr == 1 ? "" : "s") : \
			     bsn[bs] > 1 ? " per workload (threads)" : "")
			bar_chart(safe(b "-" (bsc[bs] != b ? bsc[bs] "-" : "") bsu[bs]), title,
			    bsu[bs] suf, bsb[bs], bsn[bs], rowlab, rowval, b)
			families(b, bs)
		}
		close(body)
		vf = WORK "/verdict." b ".md"
		if (nwin + npar + nloss == 0) {
			print "jpsync was not measured against a peer here (see the notes)." > vf
			close(vf)
			continue
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
}
