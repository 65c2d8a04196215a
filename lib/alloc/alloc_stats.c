/*
 * alloc_stats.c - jp_alloc_stats and JPSYNC_STATS (the table's format:
 * stats_table.c).
 *
 * The fast paths count one thing only, the blocks each bin hands out
 * (nalloc); everything else comes from counters the slow paths keep:
 * blocks that came into a bin from the class (nrefill), went back (nflush),
 * and the refills (nmiss).  The frees of a bin follow from its length:
 *     length = nrefill + frees - nalloc - nflush.
 * Bytes in use are the blocks out of the spans (class counters) less those
 * sitting in thread caches and on transfer chains, plus huge blocks.
 * Their peak is that of one more counter, the bytes out of the spans plus
 * huge blocks (jp__live_add in segment.c), kept where those change: at a
 * refill or a return of blocks to the spans and at each huge block's
 * allocation, free and resize, never on a fast path.  The counts of heaps
 * whose threads exited are tcache.c's (jp__heap_dead_counts).
 * Nothing here allocates, so the table can be printed at exit and from
 * inside a preloaded malloc.
 */
#include "tcache.h"
#include "central.h"
#include "segment.h"
#include "huge.h"
#include "sizeclass.h"
#include "prof.h"
#include "stats.h"
#include "counter.h"
#include "base/os.h"
#include "base/options.h"

#include <jpsync/alloc.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

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
bool jp__stats_gather(struct jp_alloc_stats *st, uint64_t *class_miss, bool interrupted)
{
	uint64_t cm[JP_NCLASSES] = { 0 };
	uint64_t cached = 0, misses = 0, in_spans = 0, chained = 0;
	uint64_t span_free = 0, orphaned = 0;

	memset(st, 0, sizeof *st);
	st->size = sizeof *st;
	st->version = JP_ALLOC_STATS_VERSION;
	st->nclasses = JP_NCLASSES;
	if (!take(&jp__heap_lock, interrupted))
		return false;
	for (struct jp_heap *h = jp__heaps; h != NULL; h = h->next) {
		st->threads++;
		for (uint32_t c = 0; c < JP_NCLASSES; c++) {
			uint64_t nalloc, nfree, count = jp__bin_counts(h, c, &nalloc, &nfree);

			st->class_allocs[c] += nalloc;
			st->class_frees[c] += nfree;
			cached += count * jp__classes[c].bsize;
			cm[c] += JP_CNT_LOAD(h->nmiss[c]);
			misses += JP_CNT_LOAD(h->nmiss[c]);
		}
	}
	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		uint64_t da, df, dm;

		jp__heap_dead_counts(c, &da, &df, &dm);
		st->class_allocs[c] += da;
		st->class_frees[c] += df;
		misses += dm;
		cm[c] += dm;
	}
	jp__unlock(&jp__heap_lock);

	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		st->class_size[c] = jp__class_size(c);
		for (unsigned a = 0; a < JP_NSHARDS; a++) {
			struct jp_central *k = &jp__central[a][c];

			if (!take(&k->lock, interrupted))
				return false;
			uint64_t bs = jp__classes[c].bsize;
			uint64_t cap = k->nspans * jp__classes[c].nblocks;
			uint64_t spare = cap > k->used_blocks ? cap - k->used_blocks : 0;

			in_spans += k->used_blocks * bs;
			chained += k->xfer_blocks * bs;
			span_free += spare * bs;
			/* Only a thread of this shard refills from its
			 * spans and chains (central.c). */
			if (jp__shard_threads(a) == 0)
				orphaned += (spare + k->xfer_blocks) * bs;
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
	st->in_transit = chained;
	st->span_free = span_free;
	st->orphaned = orphaned;
	st->huge_count = atomic_load_explicit(&jp__huge_counts->count, memory_order_relaxed);
	st->huge_bytes = atomic_load_explicit(&jp__huge_counts->bytes, memory_order_relaxed);
	st->allocs += atomic_load_explicit(&jp__huge_counts->allocs, memory_order_relaxed);
	st->frees += atomic_load_explicit(&jp__huge_counts->frees, memory_order_relaxed);
	st->in_use = (in_spans >= cached + chained ?
		     in_spans - cached - chained : 0) + st->huge_bytes;
	/* The peak of the bytes out of the spans plus huge blocks: blocks in
	 * thread caches and on transfer chains count as in use there, so it
	 * is at most their bytes above the true peak (jp_alloc_stats(3)). */
	st->peak_in_use = jp__live_peak();
	if (st->peak_in_use < st->in_use)
		st->peak_in_use = st->in_use;
	st->mapped = atomic_load_explicit(&jp__map_counts->mapped, memory_order_relaxed);
	st->peak_mapped = atomic_load_explicit(&jp__map_counts->peak_mapped, memory_order_relaxed);
	st->trimmed = atomic_load_explicit(&jp__map_counts->trimmed, memory_order_relaxed);
	st->decommits = atomic_load_explicit(&jp__map_counts->decommits, memory_order_relaxed);
	st->decommit_bytes = atomic_load_explicit(&jp__map_counts->decommit_bytes,
						  memory_order_relaxed);
	return true;
}

void jp__stats_collect(struct jp_alloc_stats *st, uint64_t *class_miss)
{
	jp__stats_gather(st, class_miss, false);
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

/* JPSYNC_STATS=1 prints on stderr, which programs such as cat and sort
 * close before the destructors run: keep a copy (jp__report_fd). */
void jp__stats_init(void)
{
	if (jp__options()->stats == JP_STATS_STDERR)
		jp__report_keep();
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
	char path[JP_STATS_PATH_MAX + 32];
	int fd;

	if (opt->stats == JP_STATS_FILE) {
		if (!stats_path(opt->stats_path, path, sizeof path))
			fd = -1, errno = ENAMETOOLONG;
		else
			fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0) {
			/* One line per process: jpsync-run checks the file before
			 * the program starts, and warns once for all of them. */
			jp__warn_cannot_write("STATS", path, errno, "; no statistics");
			return;
		}
		jp__stats_print(fd, interrupted, opt->stats_format);
		close(fd);
	} else if (opt->stats == JP_STATS_STDERR || interrupted)
		jp__stats_print(jp__report_fd(), interrupted, opt->stats_format);
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
