# report-calc.awk: the report's arithmetic: medians (written to
# medians.tsv, computed by median.awk), number formats, and who wins a row.
#
# Part of the benchmark report generator (see report-read.awk for the
# tables it reads).  "Ours" are the implementations named jpsync or
# starting with jp (jp_mutex, jp_spsc, jp_pool, ...); every other name is
# a peer.  Each of ours is compared with the best peer of the same row
# (benchmark, workload, unit, threads), the highest or lowest as the row's
# `better` says.  The ratio printed is ours / best peer: above 1 wins when
# higher is better, below 1 wins when lower is better.  Within TIE (5%)
# it counts as par.
#
# Sets med[k] (the median value, when no run of k FAILED) and mrss[k] (the
# median peak RSS, KiB) for every row k = g SUBSEP t SUBSEP i.

BEGIN {
	TIE = 0.05
}

function ours(name) { return name == "jpsync" || name ~ /^jp/ }

# Counts read without creating the element (a read of a[k] creates it, and
# `k in nfail` is how a FAILED cell is recognised).
function nfailed(k) { return (k in nfail) ? nfail[k] : 0 }
function nruns(k) { return ((k in nv) ? nv[k] : 0) + nfailed(k) }

# Sort the thread labels of group g numerically (unless some are not numbers).
function sort_threads(g,    i, j, t) {
	if (g in tcat)
		return
	for (i = 2; i <= nt[g]; i++)
		for (j = i; j > 1 && tl[g, j - 1] + 0 > tl[g, j] + 0; j--) {
			t = tl[g, j]; tl[g, j] = tl[g, j - 1]; tl[g, j - 1] = t
		}
}

# The medians of benchmark b, computed once so that tables and charts read
# the same numbers, and appended to medians.tsv (file medf): one line per
# group, thread count and implementation, in table order.
function medians(b, medf,    gi, g, j, i, k) {
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

function better_words(better) { return better == "higher" ? "higher is better" : "lower is better" }
