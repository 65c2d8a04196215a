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

/*
 * The table is put together on the stack with the library's one string
 * builder (jp__str_add, msg.c) and goes out in one write(2): tables of
 * processes that exit together, appended (O_APPEND) to one file, do not
 * interleave.  The whole of either format fits: the text table is at most
 * the head (~1.5 KiB) and 52 classes of 80 bytes; the JSON object the same
 * head's fields (~1 KiB), a program name of at most 255 bytes escaped (6
 * bytes each at worst) and 52 classes of at most 130 bytes (~9 KiB).
 */
#define TABLE_CAP 12288

static void put(char *b, size_t *len, const char *s)
{
	jp__str_add(b, TABLE_CAP, len, s);
}

/* v right-aligned in width columns. */
static void put_num(char *b, size_t *len, uint64_t v, int width)
{
	char num[24];
	int n;

	jp__fmt_u64(num, v);
	for (n = (int)strlen(num); n < width; n++)
		put(b, len, " ");
	put(b, len, num);
}

/* part/whole as a percentage with one decimal, right-aligned in 6 (pad)
 * or as it is. */
static void put_pct_as(char *b, size_t *len, uint64_t part, uint64_t whole, bool pad)
{
	char num[24], frac[4];
	uint64_t permille;

	if (whole == 0) {
		put(b, len, pad ? "     -" : "-");
		return;
	}
	permille = (uint64_t)((double)part * 1000.0 / (double)whole + 0.5);
	jp__fmt_u64(num, permille / 10);
	frac[0] = '.';
	frac[1] = (char)('0' + permille % 10);
	frac[2] = '%';
	frac[3] = '\0';
	for (int n = (int)strlen(num); pad && n < 3; n++)
		put(b, len, " ");
	put(b, len, num);
	put(b, len, frac);
}

/* A label, then v in bytes right-aligned and in human units. */
static void put_bytes(char *b, size_t *len, const char *label, uint64_t v)
{
	char h[24];

	put(b, len, label);
	put_num(b, len, v, 16);
	put(b, len, " bytes  ");
	put(b, len, jp__fmt_bytes(h, v));
}

/* ns as seconds with three decimals, right-aligned in 16, then " s". */
static void put_secs(char *b, size_t *len, uint64_t ns)
{
	uint64_t ms = ns / 1000000;
	char frac[6];

	put_num(b, len, ms / 1000, 12);
	frac[0] = '.';
	frac[1] = (char)('0' + ms % 1000 / 100);
	frac[2] = (char)('0' + ms % 100 / 10);
	frac[3] = (char)('0' + ms % 10);
	frac[4] = '\0';
	put(b, len, frac);
	put(b, len, " s");
}

static void put_human(char *b, size_t *len, uint64_t v)
{
	char h[24];

	put(b, len, jp__fmt_bytes(h, v));
}

/*
 * The process as the kernel sees it, as mimalloc and time(1) show it: who
 * it is, how long it has run, its CPU time, peak resident set and page
 * faults.  getrusage and clock_gettime do not allocate.
 */
static void put_process(char *b, size_t *len, const struct jp_os_usage *u)
{
	char name[80];

	put(b, len, "  program         ");
	put(b, len, jp__os_program_name(name, sizeof name));
	put(b, len, ", pid ");
	put_num(b, len, (uint64_t)getpid(), 0);
	put(b, len, "\n  elapsed         ");
	put_secs(b, len, jp__os_since_load_ns());
	put(b, len, "  (since the library was loaded)\n  CPU time, user  ");
	put_secs(b, len, u->utime_ns);
	put(b, len, "\n  CPU time, system");
	put_secs(b, len, u->stime_ns);
	put(b, len, "\n");
	put_bytes(b, len, "  peak RSS        ", u->max_rss);
	put(b, len, "\n  page faults     ");
	put_num(b, len, u->minflt, 16);
	put(b, len, " minor, ");
	put_num(b, len, u->majflt, 0);
	put(b, len, " major\n");
}

/* The text table (jp_alloc_stats(3) says what each figure means). */
static void put_text(char *b, size_t *len, const struct jp_alloc_stats *st,
		     const uint64_t *cm, const struct jp_os_usage *u)
{
	/* The summary: one line, in human units. */
	put(b, len, "jpsync allocator statistics (pid ");
	put_num(b, len, (uint64_t)getpid(), 0);
	put(b, len, "): ");
	put_human(b, len, st->in_use);
	put(b, len, " in use (peak ");
	put_human(b, len, st->peak_in_use);
	put(b, len, "), ");
	put_human(b, len, st->mapped);
	put(b, len, " mapped (peak ");
	put_human(b, len, st->peak_mapped);
	put(b, len, "), ");
	put_num(b, len, st->allocs, 0);
	put(b, len, " allocations, ");
	put_pct_as(b, len, st->cache_hits, st->cache_hits + st->cache_misses, false);
	put(b, len, " from thread caches\n");
	put_process(b, len, u);
	/* The details, one labelled figure a line. */
	put_bytes(b, len, "  in use          ", st->in_use);
	put(b, len, "\n");
	put_bytes(b, len, "  in use, peak    ", st->peak_in_use);
	put(b, len, "  (at one moment, thread caches included)\n");
	put_bytes(b, len, "  mapped          ", st->mapped);
	put(b, len, "\n");
	put_bytes(b, len, "  mapped, peak    ", st->peak_mapped);
	put(b, len, "\n");
	put_bytes(b, len, "  in thread caches", st->cached);
	put(b, len, "\n");
	put_bytes(b, len, "  given back      ", st->trimmed);
	put(b, len, "  (to the system, so far)\n");
	put_bytes(b, len, "  decommitted     ", st->decommit_bytes);
	put(b, len, "  in ");
	put_num(b, len, st->decommits, 0);
	put(b, len, st->decommits == 1 ? " madvise call\n" : " madvise calls\n");
	put_bytes(b, len, "  huge blocks     ", st->huge_bytes);
	put(b, len, "  in ");
	put_num(b, len, st->huge_count, 0);
	put(b, len, st->huge_count == 1 ? " block (above 256 KiB)\n" : " blocks (above 256 KiB)\n");
	if (jp__ag.check) {
		/* Check mode's quarantine that fell back to madvise (huge.c). */
		put(b, len, "  check mode      ");
		put_num(b, len, jp__huge_unprotected(), 16);
		put(b, len, "  freed blocks above 256 KiB left accessible (mmap failed)\n");
	}
	put(b, len, "  threads         ");
	put_num(b, len, st->threads, 16);
	put(b, len, "  (with a cache, now)\n  allocations     ");
	put_num(b, len, st->allocs, 16);
	put(b, len, "\n  frees           ");
	put_num(b, len, st->frees, 16);
	put(b, len, "\n  cache hits      ");
	put_num(b, len, st->cache_hits, 16);
	put(b, len, "  ");
	put_pct_as(b, len, st->cache_hits, st->cache_hits + st->cache_misses, false);
	put(b, len, " hit rate, of allocations of up to 256 KiB\n");
	/* Per size class: the columns, labelled. */
	put(b, len, "  class  block size    allocations          frees  blocks in use   hit%\n");
	for (uint32_t c = 0; c < st->nclasses; c++) {
		uint64_t a = st->class_allocs[c], f = st->class_frees[c];

		if (a == 0 && f == 0)
			continue;
		put_num(b, len, c, 7);
		put_num(b, len, st->class_size[c], 12);
		put_num(b, len, a, 15);
		put_num(b, len, f, 15);
		put_num(b, len, a >= f ? a - f : 0, 15);
		put(b, len, " ");
		put_pct_as(b, len, a >= cm[c] ? a - cm[c] : 0, a, true);
		put(b, len, "\n");
	}
}

/* ,"key":v (no comma when first). */
static void put_field(char *b, size_t *len, const char *key, uint64_t v, bool first)
{
	char num[24];

	put(b, len, first ? "\"" : ",\"");
	put(b, len, key);
	put(b, len, "\":");
	put(b, len, jp__fmt_u64(num, v));
}

/* The head of every JSON object: schema, type, program, pid. */
static void put_json_head(char *b, size_t *len, const char *type)
{
	char comm[32];
	const char *name = jp__os_program_bytes(comm, sizeof comm);

	put_field(b, len, "schema", 1, true);
	put(b, len, ",\"type\":\"");
	put(b, len, type);
	put(b, len, "\",\"program\":\"");
	jp__str_add_json(b, TABLE_CAP, len, name, strlen(name), 255);
	put(b, len, "\"");
	put_field(b, len, "pid", (uint64_t)getpid(), false);
}

/* The same figures as one JSON object on one line (JSON Lines); the
 * schema is jpsync(7)'s: keep the two in step, and add fields at the end
 * of the head, before "classes", which stays last. */
static void put_json(char *b, size_t *len, const struct jp_alloc_stats *st,
		     const uint64_t *cm, const struct jp_os_usage *u)
{
	bool first = true;

	put(b, len, "{");
	put_json_head(b, len, "stats");
	put_field(b, len, "elapsed_ns", jp__os_since_load_ns(), false);
	put_field(b, len, "user_ns", u->utime_ns, false);
	put_field(b, len, "system_ns", u->stime_ns, false);
	put_field(b, len, "peak_rss", u->max_rss, false);
	put_field(b, len, "minor_faults", u->minflt, false);
	put_field(b, len, "major_faults", u->majflt, false);
	put_field(b, len, "in_use", st->in_use, false);
	put_field(b, len, "peak_in_use", st->peak_in_use, false);
	put_field(b, len, "mapped", st->mapped, false);
	put_field(b, len, "peak_mapped", st->peak_mapped, false);
	put_field(b, len, "cached", st->cached, false);
	put_field(b, len, "given_back", st->trimmed, false);
	put_field(b, len, "decommitted", st->decommit_bytes, false);
	put_field(b, len, "decommits", st->decommits, false);
	put_field(b, len, "huge_bytes", st->huge_bytes, false);
	put_field(b, len, "huge_blocks", st->huge_count, false);
	put_field(b, len, "threads", st->threads, false);
	put_field(b, len, "allocations", st->allocs, false);
	put_field(b, len, "frees", st->frees, false);
	put_field(b, len, "cache_hits", st->cache_hits, false);
	put_field(b, len, "cache_misses", st->cache_misses, false);
	if (jp__ag.check)
		put_field(b, len, "check_unprotected", jp__huge_unprotected(), false);
	put(b, len, ",\"classes\":[");
	for (uint32_t c = 0; c < st->nclasses; c++) {
		uint64_t a = st->class_allocs[c], f = st->class_frees[c];

		if (a == 0 && f == 0)
			continue;
		put(b, len, first ? "{" : ",{");
		first = false;
		put_field(b, len, "class", c, true);
		put_field(b, len, "block_size", st->class_size[c], false);
		put_field(b, len, "allocations", a, false);
		put_field(b, len, "frees", f, false);
		put_field(b, len, "misses", cm[c], false);
		put(b, len, "}");
	}
	put(b, len, "]}\n");
}

/* The table, from jp_alloc_stats_print or a signal handler (interrupted):
 * then only a note if the interrupted code holds one of the allocator's
 * locks. */
static int stats_print(int fd, bool interrupted, int format)
{
	struct jp_alloc_stats st;
	struct jp_os_usage u;
	uint64_t cm[JP_NCLASSES];
	char b[TABLE_CAP];
	size_t len = 0;

	if (fd < 0)
		return EBADF;
	b[0] = '\0';
	if (!collect(&st, cm, interrupted)) {
		if (format == JP_STATS_JSON) {
			put(b, &len, "{");
			put_json_head(b, &len, "busy");
			put(b, &len, "}\n");
		} else {
			put(b, &len, "jpsync allocator statistics (pid ");
			put_num(b, &len, (uint64_t)getpid(), 0);
			put(b, &len, "): not now, the signal interrupted the allocator "
				     "(send it again)\n");
		}
		return jp__os_write(fd, b, len);
	}
	jp__os_usage(&u);
	if (format == JP_STATS_JSON)
		put_json(b, &len, &st, cm, &u);
	else
		put_text(b, &len, &st, cm, &u);
	return jp__os_write(fd, b, len);
}

/* Text whatever JPSYNC_STATS_FORMAT says: a program that calls it parses
 * what it gets, and the variable is the user's, not the program's. */
JP_EXPORT int jp_alloc_stats_print(int fd)
{
	return stats_print(fd, false, JP_STATS_TEXT);
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
		stats_print(fd, interrupted, opt->stats_format);
		close(fd);
	} else if (opt->stats == JP_STATS_STDERR || interrupted)
		stats_print(jp__os_fd_is(stats_fd, stats_id) ? stats_fd : 2, interrupted,
			    opt->stats_format);
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
	jp__prof_on_signal();
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
