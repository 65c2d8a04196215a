/*
 * alloc_stats.c - jp_alloc_stats, jp_alloc_stats_print and JPSYNC_STATS.
 *
 * The fast paths count one thing only, the blocks each bin hands out
 * (nalloc); everything else comes from counters the slow paths keep:
 * blocks that came into a bin from the class (nrefill), went back (nflush),
 * and the refills (nmiss).  The frees of a bin follow from its length:
 *     length = nrefill + frees - nalloc - nflush.
 * Bytes in use are the blocks out of the spans (class counters) less those
 * sitting in thread caches and on transfer chains, plus huge blocks.
 * Their peak is that of one more counter, the bytes out of the spans plus
 * huge blocks (jp__live_add), kept where those change: at a refill or a
 * return of blocks to the spans and at each huge block's allocation, free
 * and resize, never on a fast path.
 * Nothing here allocates, so the table can be printed at exit and from
 * inside a preloaded malloc.
 */
#include "alloc_internal.h"
#include "base/options.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/*
 * The bytes out of the spans plus the huge blocks' (live), and the most
 * they have been (peak): one counter for both kinds, so that the peak is
 * that of their sum at one moment, not a sum of separate peaks (which was
 * 65 MiB too low for a program that held a 65 MiB block and freed it before
 * exit, or too high for one that moved from small to huge blocks).  Its own
 * cache line: it changes at every refill, and jp__ag is read on the fast
 * paths.  relaxed: statistics; each add's result is the sum at one point
 * of the counter's modification order, so the peak is a sum that existed.
 */
static struct {
	_Atomic uint64_t live, peak;
} JP_ALIGNED_CL live_bytes;

void jp__live_add(uint64_t delta)
{
	uint64_t v = atomic_fetch_add_explicit(&live_bytes.live, delta,
					       memory_order_relaxed) + delta;
	uint64_t p = atomic_load_explicit(&live_bytes.peak, memory_order_relaxed);

	/* A decrease wraps to above any peak: it is told by its sign bit (no
	 * process holds 2^63 bytes). */
	if ((int64_t)delta <= 0)
		return;
	while (v > p && !atomic_compare_exchange_weak_explicit(&live_bytes.peak, &p, v,
			memory_order_relaxed, memory_order_relaxed))
		;
}

/* The counts of exited threads' heaps (heap lock). */
static uint64_t dead_alloc[JP_NCLASSES], dead_free[JP_NCLASSES],
	dead_miss[JP_NCLASSES];

/* What bin c of heap h handed out and took back; returns its length. */
static uint64_t bin_counts(const struct jp_heap *h, uint32_t c,
			   uint64_t *nalloc, uint64_t *nfree)
{
	const struct jp_bin *b = &h->bins[c];
	uint64_t cn = JP_CNT_LOAD(b->cn);
	uint64_t count = JP_CNT_LOAD(b->max) - JP_CN_CREDIT(cn);

	*nalloc = JP_CN_NALLOC(cn) + JP_CNT_LOAD(b->nalloc_hi);
	*nfree = count - JP_CNT_LOAD(b->nrefill) + *nalloc +
		 JP_CNT_LOAD(h->nflush[c]);
	return count;
}

void jp__stats_fold(const struct jp_heap *h)
{
	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		uint64_t nalloc, nfree;

		bin_counts(h, c, &nalloc, &nfree);
		dead_alloc[c] += nalloc;
		dead_free[c] += nfree;
		dead_miss[c] += JP_CNT_LOAD(h->nmiss[c]);
	}
}

/*
 * Take l; in a signal handler (interrupted), not if the interrupted code
 * holds it: the lock word names its holder, and a thread that finds its
 * own name there would wait for itself (false then).  A lock another
 * thread holds is waited for: that thread releases it without our help.
 */
static bool take(struct jp__lock *l, bool interrupted)
{
	if (interrupted)
		return jp__lock_for_fork(l);
	jp__lock(l);
	return true;
}

/* jp__stats_collect; false (and *st partly filled) when interrupted code
 * holds a lock it needs. */
static bool collect(struct jp_alloc_stats *st, uint64_t *class_miss, bool interrupted)
{
	uint64_t cm[JP_NCLASSES] = { 0 };
	uint64_t cached = 0, misses = 0, in_spans = 0, chained = 0;

	memset(st, 0, sizeof *st);
	st->size = sizeof *st;
	st->version = JP_ALLOC_STATS_VERSION;
	st->nclasses = JP_NCLASSES;
	if (!take(&jp__heap_lock, interrupted))
		return false;
	for (struct jp_heap *h = jp__heaps; h != NULL; h = h->next) {
		st->threads++;
		for (uint32_t c = 0; c < JP_NCLASSES; c++) {
			uint64_t nalloc, nfree, count = bin_counts(h, c, &nalloc, &nfree);

			st->class_allocs[c] += nalloc;
			st->class_frees[c] += nfree;
			cached += count * jp__classes[c].bsize;
			cm[c] += JP_CNT_LOAD(h->nmiss[c]);
			misses += JP_CNT_LOAD(h->nmiss[c]);
		}
	}
	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		st->class_allocs[c] += dead_alloc[c];
		st->class_frees[c] += dead_free[c];
		misses += dead_miss[c];
		cm[c] += dead_miss[c];
	}
	jp__unlock(&jp__heap_lock);

	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		st->class_size[c] = jp__class_size(c);
		for (unsigned a = 0; a < JP_NSHARDS; a++) {
			struct jp_central *k = &jp__central[a][c];

			if (!take(&k->lock, interrupted))
				return false;
			in_spans += k->used_blocks * jp__classes[c].bsize;
			chained += k->xfer_blocks * jp__classes[c].bsize;
			jp__unlock(&k->lock);
		}
		st->allocs += st->class_allocs[c];
		st->frees += st->class_frees[c];
	}
	if (class_miss != NULL)
		memcpy(class_miss, cm, sizeof cm);
	st->cache_misses = misses;
	st->cache_hits = st->allocs >= misses ? st->allocs - misses : 0;
	st->cached = cached;
	st->huge_count = atomic_load_explicit(&jp__ag.huge_count, memory_order_relaxed);
	st->huge_bytes = atomic_load_explicit(&jp__ag.huge_bytes, memory_order_relaxed);
	st->allocs += atomic_load_explicit(&jp__ag.huge_allocs, memory_order_relaxed);
	st->frees += atomic_load_explicit(&jp__ag.huge_frees, memory_order_relaxed);
	st->in_use = (in_spans >= cached + chained ?
		     in_spans - cached - chained : 0) + st->huge_bytes;
	/* The peak of the bytes out of the spans plus huge blocks: blocks in
	 * thread caches and on transfer chains count as in use there, so it
	 * is at most their bytes above the true peak (jp_alloc_stats(3)). */
	st->peak_in_use = atomic_load_explicit(&live_bytes.peak, memory_order_relaxed);
	if (st->peak_in_use < st->in_use)
		st->peak_in_use = st->in_use;
	st->mapped = atomic_load_explicit(&jp__ag.mapped, memory_order_relaxed);
	st->peak_mapped = atomic_load_explicit(&jp__ag.peak_mapped, memory_order_relaxed);
	st->trimmed = atomic_load_explicit(&jp__ag.trimmed, memory_order_relaxed);
	st->decommits = atomic_load_explicit(&jp__ag.decommits, memory_order_relaxed);
	st->decommit_bytes = atomic_load_explicit(&jp__ag.decommit_bytes,
						  memory_order_relaxed);
	return true;
}

void jp__stats_collect(struct jp_alloc_stats *st, uint64_t *class_miss)
{
	collect(st, class_miss, false);
}

JP_EXPORT int jp_alloc_stats(struct jp_alloc_stats *st, size_t st_size)
{
	struct jp_alloc_stats all;
	size_t n;

	if (st == NULL || st_size < offsetof(struct jp_alloc_stats, in_use))
		return EINVAL;
	jp__stats_collect(&all, NULL);
	n = st_size < sizeof all ? st_size : sizeof all;
	all.size = n;
	memcpy(st, &all, n);
	return 0;
}

/* ---- the table -------------------------------------------------------- */

/* The whole table fits (52 classes of 80 bytes and the head), so that it
 * goes out in one write: tables of processes that exit together, appended
 * to one file, do not interleave. */
struct out {
	char buf[12288];
	size_t len;
	int fd;
	int err;
};

static void out_flush(struct out *o)
{
	if (o->len > 0 && o->err == 0)
		o->err = jp__os_write(o->fd, o->buf, o->len);
	o->len = 0;
}

static void out_str(struct out *o, const char *s)
{
	size_t n = strlen(s);

	if (o->len + n > sizeof o->buf)
		out_flush(o);
	if (n > sizeof o->buf)
		n = sizeof o->buf;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* v right-aligned in width columns. */
static void out_num(struct out *o, uint64_t v, int width)
{
	char num[24];
	int n;

	jp__fmt_u64(num, v);
	for (n = (int)strlen(num); n < width; n++)
		out_str(o, " ");
	out_str(o, num);
}

/* part/whole as a percentage with one decimal, right-aligned in 6 (pad)
 * or as it is. */
static void out_pct_as(struct out *o, uint64_t part, uint64_t whole, bool pad)
{
	char num[24], frac[4];
	uint64_t permille;

	if (whole == 0) {
		out_str(o, pad ? "     -" : "-");
		return;
	}
	permille = (uint64_t)((double)part * 1000.0 / (double)whole + 0.5);
	jp__fmt_u64(num, permille / 10);
	frac[0] = '.';
	frac[1] = (char)('0' + permille % 10);
	frac[2] = '%';
	frac[3] = '\0';
	for (int n = (int)strlen(num); pad && n < 3; n++)
		out_str(o, " ");
	out_str(o, num);
	out_str(o, frac);
}

static void out_pct(struct out *o, uint64_t part, uint64_t whole)
{
	out_pct_as(o, part, whole, true);
}

/* A label, then v in bytes right-aligned and in human units. */
static void out_bytes(struct out *o, const char *label, uint64_t v)
{
	char h[24];

	out_str(o, label);
	out_num(o, v, 16);
	out_str(o, " bytes  ");
	out_str(o, jp__fmt_bytes(h, v));
}

/* ns as seconds with three decimals, right-aligned in 16, then " s". */
static void out_secs(struct out *o, uint64_t ns)
{
	uint64_t ms = ns / 1000000;
	char frac[6];

	out_num(o, ms / 1000, 12);
	frac[0] = '.';
	frac[1] = (char)('0' + ms % 1000 / 100);
	frac[2] = (char)('0' + ms % 100 / 10);
	frac[3] = (char)('0' + ms % 10);
	frac[4] = '\0';
	out_str(o, frac);
	out_str(o, " s");
}

/*
 * The process as the kernel sees it, as mimalloc and time(1) show it: who
 * it is, how long it has run, its CPU time, peak resident set and page
 * faults.  getrusage and clock_gettime do not allocate.
 */
static void out_process(struct out *o)
{
	struct jp_os_usage u;
	char name[80];

	jp__os_usage(&u);
	out_str(o, "  program         ");
	out_str(o, jp__os_program_name(name, sizeof name));
	out_str(o, ", pid ");
	out_num(o, (uint64_t)getpid(), 0);
	out_str(o, "\n  elapsed         ");
	out_secs(o, jp__os_since_load_ns());
	out_str(o, "  (since the library was loaded)\n  CPU time, user  ");
	out_secs(o, u.utime_ns);
	out_str(o, "\n  CPU time, system");
	out_secs(o, u.stime_ns);
	out_str(o, "\n");
	out_bytes(o, "  peak RSS        ", u.max_rss);
	out_str(o, "\n  page faults     ");
	out_num(o, u.minflt, 16);
	out_str(o, " minor, ");
	out_num(o, u.majflt, 0);
	out_str(o, " major\n");
}

static void out_human(struct out *o, uint64_t v)
{
	char h[24];

	out_str(o, jp__fmt_bytes(h, v));
}

/* The table, from jp_alloc_stats_print or a signal handler (interrupted):
 * then only the summary's head and a note if the interrupted code holds
 * one of the allocator's locks. */
static int stats_print(int fd, bool interrupted)
{
	struct jp_alloc_stats st;
	struct out o = { .fd = fd };
	uint64_t cm[JP_NCLASSES];

	if (fd < 0)
		return EBADF;
	if (!collect(&st, cm, interrupted)) {
		out_str(&o, "jpsync allocator statistics (pid ");
		out_num(&o, (uint64_t)getpid(), 0);
		out_str(&o, "): not now, the signal interrupted the allocator "
			    "(send it again)\n");
		out_flush(&o);
		return o.err;
	}
	/* The summary: one line, in human units. */
	out_str(&o, "jpsync allocator statistics (pid ");
	out_num(&o, (uint64_t)getpid(), 0);
	out_str(&o, "): ");
	out_human(&o, st.in_use);
	out_str(&o, " in use (peak ");
	out_human(&o, st.peak_in_use);
	out_str(&o, "), ");
	out_human(&o, st.mapped);
	out_str(&o, " mapped (peak ");
	out_human(&o, st.peak_mapped);
	out_str(&o, "), ");
	out_num(&o, st.allocs, 0);
	out_str(&o, " allocations, ");
	out_pct_as(&o, st.cache_hits, st.cache_hits + st.cache_misses, false);
	out_str(&o, " from thread caches\n");
	out_process(&o);
	/* The details, one labelled figure a line. */
	out_bytes(&o, "  in use          ", st.in_use);
	out_str(&o, "\n");
	out_bytes(&o, "  in use, peak    ", st.peak_in_use);
	out_str(&o, "  (at one moment, thread caches included)\n");
	out_bytes(&o, "  mapped          ", st.mapped);
	out_str(&o, "\n");
	out_bytes(&o, "  mapped, peak    ", st.peak_mapped);
	out_str(&o, "\n");
	out_bytes(&o, "  in thread caches", st.cached);
	out_str(&o, "\n");
	out_bytes(&o, "  given back      ", st.trimmed);
	out_str(&o, "  (to the system, so far)\n");
	out_bytes(&o, "  decommitted     ", st.decommit_bytes);
	out_str(&o, "  in ");
	out_num(&o, st.decommits, 0);
	out_str(&o, st.decommits == 1 ? " madvise call\n" : " madvise calls\n");
	out_bytes(&o, "  huge blocks     ", st.huge_bytes);
	out_str(&o, "  in ");
	out_num(&o, st.huge_count, 0);
	out_str(&o, st.huge_count == 1 ? " block (above 256 KiB)\n" : " blocks (above 256 KiB)\n");
	if (jp__ag.check) {
		/* Check mode's quarantine that fell back to madvise (huge.c). */
		out_str(&o, "  check mode      ");
		out_num(&o, jp__huge_unprotected(), 16);
		out_str(&o, "  freed blocks above 256 KiB left accessible (mmap failed)\n");
	}
	out_str(&o, "  threads         ");
	out_num(&o, st.threads, 16);
	out_str(&o, "  (with a cache, now)\n  allocations     ");
	out_num(&o, st.allocs, 16);
	out_str(&o, "\n  frees           ");
	out_num(&o, st.frees, 16);
	out_str(&o, "\n  cache hits      ");
	out_num(&o, st.cache_hits, 16);
	out_str(&o, "  ");
	out_pct_as(&o, st.cache_hits, st.cache_hits + st.cache_misses, false);
	out_str(&o, " hit rate, of allocations of up to 256 KiB\n");
	/* Per size class: the columns, labelled. */
	out_str(&o, "  class  block size    allocations          frees  blocks in use   hit%\n");
	for (uint32_t c = 0; c < st.nclasses; c++) {
		uint64_t a = st.class_allocs[c], f = st.class_frees[c];

		if (a == 0 && f == 0)
			continue;
		out_num(&o, c, 7);
		out_num(&o, st.class_size[c], 12);
		out_num(&o, a, 15);
		out_num(&o, f, 15);
		out_num(&o, a >= f ? a - f : 0, 15);
		out_str(&o, " ");
		out_pct(&o, a >= cm[c] ? a - cm[c] : 0, a);
		out_str(&o, "\n");
	}
	out_flush(&o);
	return o.err;
}

JP_EXPORT int jp_alloc_stats_print(int fd)
{
	return stats_print(fd, false);
}

/*
 * JPSYNC_STATS=1 prints on stderr, but programs such as cat and sort close
 * stderr (close_stdout, an atexit handler) before the library's destructor
 * runs: the allocator keeps a close-on-exec copy of fd 2 from its start,
 * and prints there if it is still the same file (a program may have put
 * another file on that number meanwhile), else on fd 2.
 */
static int stats_fd = -1;
static uint64_t stats_id[2];

void jp__stats_init(void)
{
	if (jp__options()->stats == JP_STATS_STDERR)
		stats_fd = jp__os_dup_high(2, 1000, stats_id);
}

/*
 * The file of JPSYNC_STATS=path for this process: "%p" in path is its
 * process id ("%%" a "%"), so that each process of a program writes a file
 * of its own; without "%p" each process appends its table (one write,
 * headed by its pid), and jpsync-run empties the file before the program
 * starts.  false when the name would not fit.
 */
static bool stats_path(const char *tmpl, char *out, size_t cap)
{
	char num[24];
	size_t len = 0;

	out[0] = '\0';
	for (const char *p = tmpl; *p != '\0'; p++) {
		char one[2] = { *p, '\0' };

		if (p[0] == '%' && p[1] == 'p') {
			jp__str_add(out, cap, &len, jp__fmt_u64(num, (uint64_t)getpid()));
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			jp__str_add(out, cap, &len, "%");
			p++;
		} else
			jp__str_add(out, cap, &len, one);
		if (len >= cap - 1)
			return false;
	}
	return true;
}

/*
 * The table where JPSYNC_STATS sends it: standard error (=1, and for
 * JPSYNC_STATS_SIGNAL without JPSYNC_STATS) or the file (=path).
 * Everything here is async-signal-safe (open, write, close, getrusage,
 * clock_gettime; no allocation), so the signal handler uses it too.
 */
static void stats_to_dest(bool interrupted)
{
	const struct jp_options *opt = jp__options();
	char path[JP_STATS_PATH_MAX + 32], num[24];
	int fd;

	if (opt->stats == JP_STATS_FILE) {
		if (!stats_path(opt->stats_path, path, sizeof path))
			fd = -1, errno = ENAMETOOLONG;
		else
			fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0) {
			/* One line per process: jpsync-run checks the file before
			 * the program starts, and warns once for all of them. */
			jp__os_puts(2, "jpsync: warning: JPSYNC_STATS: cannot write ");
			jp__os_puts(2, path);
			jp__os_puts(2, " (errno ");
			jp__os_puts(2, jp__fmt_u64(num, (uint64_t)errno));
			jp__os_puts(2, "); no statistics\n");
			return;
		}
		stats_print(fd, interrupted);
		close(fd);
	} else if (opt->stats == JP_STATS_STDERR || interrupted)
		stats_print(jp__os_fd_is(stats_fd, stats_id) ? stats_fd : 2, interrupted);
}

/* JPSYNC_STATS=1 (stderr) or =path: the table at exit. */
__attribute__((destructor)) static void stats_at_exit(void)
{
	if (jp__options()->stats != JP_STATS_NONE)
		stats_to_dest(false);
}

/*
 * JPSYNC_STATS_SIGNAL=SIG: the table each time the process receives SIG.
 * The handler may interrupt any code, the allocator's own included: it
 * formats on its stack, takes the allocator's locks only when the
 * interrupted code does not hold them (take(); else it prints a one-line
 * note), reads the counters with atomic loads, and keeps errno.  It is
 * installed when the library is loaded, before the program's main: a
 * handler the program installs for SIG later replaces it (the program
 * wins), and it is not inherited across exec.
 */
static void stats_on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	stats_to_dest(true);
	errno = saved;
}

__attribute__((constructor)) static void stats_signal_init(void)
{
	const char *v = jp__os_getenv("JPSYNC_STATS_SIGNAL");
	struct sigaction sa;
	int sig;

	/* Without the variable the options are not read here: a program may
	 * still set the others before its first allocation (test-check sets
	 * JPSYNC_CHECK in its main). */
	if (v == NULL || *v == '\0')
		return;
	sig = jp__options()->stats_signal;
	if (sig == 0)
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = stats_on_signal;
	sa.sa_flags = SA_RESTART;
	sigfillset(&sa.sa_mask);	/* one table at a time */
	sigaction(sig, &sa, NULL);
}
