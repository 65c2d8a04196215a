/*
 * prof.c - the heap profile (JPSYNC_HEAP_PROFILE): sampled allocations,
 * their stacks, and the profiles google-pprof reads.
 *
 * Sampling, unbiased per byte as tcmalloc and jemalloc do it: the bytes
 * between two samples are exponentially distributed with mean R
 * (JPSYNC_HEAP_PROFILE_RATE), so a block of s bytes is sampled with
 * probability 1 - exp(-s/R) whatever came before it.  For the blocks of
 * one size class that is a geometric countdown: the number of blocks of
 * the class up to and including the next sampled one is
 * floor(E * R / s) + 1, E exponential with mean 1.  The countdown lives in
 * the bin's own count of blocks handed out (struct jp_bin, cn bits 16-63),
 * which every allocation already adds to: armed, the count is set to
 * 2^48 - k, and the allocation that makes it carry out of bit 63 is the
 * sampled one (jp_alloc branches on the carry of the add it does anyway:
 * one instruction, not taken while sampling is off).  The count keeps its
 * meaning for the statistics: the arming subtracts what it adds to the
 * count from nalloc_hi, and the carry adds 2^48 back, so nalloc_hi + count
 * is the exact number handed out, modulo 2^64, at every step.  A huge
 * block (above the largest class) is counted down in bytes per thread.
 *
 * The draws (E, the countdowns, the arming) are prof_draw.c's.
 *
 * A sample records the block's address, its size class's size (what the
 * program holds, and what the probability above is of: jemalloc's
 * profiles count the same usable size) and its stack's id in the stack
 * depot (base/stack.h), in a hash table of live samples, and adds to the
 * stack's totals: in use (until its free) and allocated (ever).
 *
 * Frees find their sample without a look-up on the fast path: the fast
 * path's block test (jp__is_block) compares k * e, for block k of the
 * span, with the limit in the fast-path copy of the slice the block
 * starts in, so while a slice holds sampled blocks its limit is the
 * product of the lowest of them: the frees of that block and of those
 * above it in that slice take the slow path (free_generic in alloc.c), the
 * rest of the span stays on the fast path.  free_generic asks here (the
 * span's own limit still says what is a block) when the block's bit is
 * set in the span's 64-bit filter of sampled addresses, a lock and a
 * look-up for one free in 64 at most of those that are not sampled, and
 * pushes the others as the fast path does.  The slice's count of sampled
 * blocks (in the segment header) puts its limit back when the last one is
 * freed (until then a freed lowest one leaves the limit lower than it
 * need be: slower, never wrong), the span's clears its filter.  A huge
 * block's header says whether it is sampled.
 *
 * The profile is gperftools' heap format, version 2 ("heap profile: ...
 * @ heap_v2/R"): one line per stack, "inuse_count: inuse_bytes
 * [alloc_count: alloc_bytes] @ pc pc ...", the sampled figures as they
 * are (google-pprof scales each line by 1 / (1 - exp(-size/R)), size its
 * bytes over its count), then MAPPED_LIBRARIES: and /proc/self/maps.  It
 * is written with write(2) from a buffer on the stack: nothing allocates,
 * so it can be written at exit, from a signal handler and from malloc.
 *
 * Tables: the samples live in JP_PROF_TABS tables, one per shard of the
 * allocator (central.h), each with its own lock, live samples and totals
 * per stack; the profile adds them up.  A small block's sample goes to the
 * table of the shard its span was made for (jp_span.prof_tab, fixed for
 * the span's life, so that its free finds it, and the span's counts and
 * its slices' limits are under one lock); a huge block's to table 0.
 * Threads of different shards allocate from different spans, so their
 * samples mostly take different locks and write different lines (not
 * those of blocks above the thread caches' largest, which all come from
 * shard 0, nor those of spans adopted from another shard): with one lock
 * and one table for all, two threads sampling 360,000 blocks a second
 * spent a fifth of their time passing the lock's and the totals' cache
 * lines to each other (perf, alloc-bench balanced -t 2).
 *
 * Locks: the tables' (jp__prof_lock_at), leaves (nothing is taken while
 * one is held; the fork handlers take them last, in index order, as the
 * profile's writer does).
 */
#include "alloc_init.h"
#include "tcache.h"
#include "central.h"
#include "segment.h"
#include "sizeclass.h"
#include "prof.h"
#include "counter.h"
#include "base/os.h"
#include "base/options.h"
#include "base/stack.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Bytes of huge blocks to allocate before the next sample (per thread);
 * 0: not drawn yet. */
static __thread uint64_t prof_huge_left __attribute__((tls_model("initial-exec")));

/* ---- live samples --------------------------------------------------- */

/* A table's live samples: open addressing, at most half full, from
 * 2^10 slots of 16 bytes (16 KiB: a program that holds a few hundred
 * samples probes memory that stays in cache) doubling up to 2^17 (2 MiB:
 * 64Ki live samples, 32 GiB in use at the default rate, per table).  Each
 * is written at once when mapped, so that a sample does not take two page
 * faults (the zero page's read, then its copy) on the way. */
#define LIVE_BITS_MIN	10
#define LIVE_BITS_MAX	17
#define LIVE_MAX	((size_t)1 << (LIVE_BITS_MAX - 1))	/* beyond: samples are dropped */
#define NSTACKS		16385		/* the depot's ids, 0 = no stack */

struct live {
	uint64_t addr;		/* 0: empty */
	uint32_t size16;	/* the size / 16 (sizes are multiples of 16
				 * up to 64 GiB; a bigger one counts 64 GiB) */
	uint32_t id;
};

struct stack_total {
	uint64_t inuse_n, inuse_b, alloc_n, alloc_b;
};

/* One table (see the top); all but the lock under the lock. */
struct prof_tab {
	struct jp__lock lock;
	struct live *live;
	unsigned live_bits;	/* live has 2^live_bits slots */
	size_t nlive;
	uint64_t dropped;
	struct stack_total *totals;
	struct stack_total all;
} JP_ALIGNED_CL;

_Static_assert(JP_PROF_TABS >= JP_NSHARDS, "a table per shard");

static struct prof_tab tabs[JP_PROF_TABS];
/* The bytes in use as the samples estimate them (each stands for at least
 * the rate's bytes), and that figure at the last interval profile: kept
 * only when interval profiles are asked for (prof_interval). */
static _Atomic uint64_t est_inuse, est_last;
static _Atomic unsigned prof_seq;

void jp__prof_init(void)
{
	for (unsigned i = 0; i < JP_PROF_TABS; i++)
		jp__lock_init(&tabs[i].lock);
}

struct jp__lock *jp__prof_lock_at(unsigned i)
{
	return &tabs[i].lock;
}

/* n bytes of fresh memory, each page written once (see above). */
static void *map_written(size_t n)
{
	void *m;

	if (jp__os_map(&m, n) != 0)
		return NULL;
	for (size_t off = 0; off < n; off += 4096)
		((volatile char *)m)[off] = 0;
	return m;
}

static size_t slot_of(unsigned bits, uintptr_t a)
{
	return (size_t)(((uint64_t)a >> 4) * 0x9e3779b97f4a7c15ULL >> (64 - bits));
}

static size_t slot_next(unsigned bits, size_t i)
{
	return (i + 1) & (((size_t)1 << bits) - 1);
}

/* A free slot for a, which is not in live (of 2^bits slots). */
static size_t slot_free(const struct live *live, unsigned bits, uintptr_t a)
{
	size_t i;

	for (i = slot_of(bits, a); live[i].addr != 0; i = slot_next(bits, i))
		;
	return i;
}

/* Room in t for one more live sample: its tables mapped, the live one
 * grown to keep it at most half full.  False when there is none. */
static bool tables(struct prof_tab *t)
{
	struct live *old = t->live;
	size_t nold = (size_t)1 << t->live_bits;
	unsigned bits = t->live_bits == 0 ? LIVE_BITS_MIN : t->live_bits + 1;
	struct live *live;

	if (t->totals == NULL &&
	    (t->totals = map_written(NSTACKS * sizeof *t->totals)) == NULL)
		return false;
	if (old != NULL && t->nlive < nold / 2)
		return true;
	if (t->nlive >= LIVE_MAX || (live = map_written(sizeof *live << bits)) == NULL)
		return false;
	for (size_t i = 0; old != NULL && i < nold; i++)
		if (old[i].addr != 0)
			live[slot_free(live, bits, (uintptr_t)old[i].addr)] = old[i];
	t->live = live;
	t->live_bits = bits;
	if (old != NULL)
		(void)jp__os_unmap(old, nold * sizeof *old);
	return true;
}

static uint64_t estimate(uint64_t size)
{
	return size > jp__settings.prof_rate ? size : jp__settings.prof_rate;
}

/* Remove the sample of a from t, if there (under t's lock); its size, or
 * 0. */
static uint64_t live_remove(struct prof_tab *t, uintptr_t a)
{
	struct live *live = t->live;
	unsigned bits = t->live_bits;
	size_t i, j;
	uint64_t size;

	if (live == NULL || t->nlive == 0)
		return 0;
	for (i = slot_of(bits, a); live[i].addr != a; i = slot_next(bits, i))
		if (live[i].addr == 0)
			return 0;
	size = (uint64_t)live[i].size16 * 16;
	t->totals[live[i].id].inuse_n--;
	t->totals[live[i].id].inuse_b -= size;
	t->all.inuse_n--;
	t->all.inuse_b -= size;
	if (jp__settings.prof_interval != 0)
		atomic_fetch_sub_explicit(&est_inuse, estimate(size), memory_order_relaxed);
	t->nlive--;
	/* Backward shift: no tombstones. */
	for (j = slot_next(bits, i); live[j].addr != 0; j = slot_next(bits, j)) {
		size_t home = slot_of(bits, live[j].addr);

		/* j's entry may move to i when its home is not in (i, j]. */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			live[i] = live[j];
			i = j;
		}
	}
	live[i].addr = 0;
	return size;
}

size_t jp__prof_nlive(void)
{
	size_t n = 0;

	for (unsigned i = 0; i < JP_PROF_TABS; i++) {
		jp__lock(&tabs[i].lock);
		n += tabs[i].nlive;
		jp__unlock(&tabs[i].lock);
	}
	return n;
}

/* The table of the samples of span s's blocks (NULL: huge blocks). */
static struct prof_tab *tab_of(const struct jp_span *s)
{
	return &tabs[s != NULL ? s->prof_tab : 0];
}

static void write_interval(void);

/* Interval profiles: true when the estimate in use, grown by est, passed
 * the last profile's by the interval (one thread wins the profile). */
static bool interval_due(uint64_t est)
{
	uint64_t now = atomic_fetch_add_explicit(&est_inuse, est, memory_order_relaxed) + est;
	uint64_t last = atomic_load_explicit(&est_last, memory_order_relaxed);

	/* relaxed: a trigger; the profile takes the tables' locks. */
	return now >= last + jp__settings.prof_interval &&
	       atomic_compare_exchange_strong_explicit(&est_last, &last, now,
						       memory_order_relaxed, memory_order_relaxed);
}

/* Record block p of size bytes (span s for a small block, else NULL);
 * false when the table is full. */
static bool record(void *p, uint64_t size, struct jp_span *s)
{
	uintptr_t pcs[JP_STACK_MAX];
	unsigned n = jp__stack_capture(pcs, JP_STACK_MAX, 0, true);
	uint32_t id = jp__stack_depot_put(pcs, n);
	struct prof_tab *t = tab_of(s);
	struct stack_total *tot;
	bool due = false;
	size_t i;

	if (size > (uint64_t)UINT32_MAX * 16)
		size = (uint64_t)UINT32_MAX * 16;
	size = (size + 15) & ~(uint64_t)15;
	jp__lock(&t->lock);
	if (!tables(t)) {
		t->dropped++;
		jp__unlock(&t->lock);
		return false;
	}
	i = slot_free(t->live, t->live_bits, (uintptr_t)p);
	t->live[i] = (struct live){ (uintptr_t)p, (uint32_t)(size / 16), id };
	t->nlive++;
	tot = &t->totals[id];
	tot->inuse_n++;
	tot->inuse_b += size;
	tot->alloc_n++;
	tot->alloc_b += size;
	t->all.inuse_n++;
	t->all.inuse_b += size;
	t->all.alloc_n++;
	t->all.alloc_b += size;
	if (s != NULL) {
		struct jp_segment *seg = (struct jp_segment *)((uintptr_t)p & ~(uintptr_t)JP_SEG_MASK);
		unsigned k = ((uintptr_t)p >> JP_SLICE_SHIFT) & (JP_NSLICES - 1);
		/* p's product in the block test (jp__is_block), k * e for
		 * block k of the span: as the limit of p's slice, it sends
		 * the frees of p and of the blocks above it there to the slow
		 * path (see the top); those below, and the span's other
		 * slices, stay fast. */
		uint64_t m = ((uintptr_t)p + s->nstart) * s->divc;

		__atomic_store_n(&s->sampled_mask, s->sampled_mask | jp__prof_bit((uintptr_t)p),
				 __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->nsampled, 1, __ATOMIC_RELAXED);
		if (seg->prof_nsampled[k]++ == 0 || m < seg->slices[k].limit)
			__atomic_store_n(&seg->slices[k].limit, m, __ATOMIC_RELAXED);
	}
	/* Before the unlock: a free of p, which may follow at once in
	 * another thread, takes its estimate back. */
	if (jp__settings.prof_interval != 0)
		due = interval_due(estimate(size));
	jp__unlock(&t->lock);
	if (due)
		write_interval();
	return true;
}

void *jp__prof_bin_due(struct jp_heap *h, struct jp_bin *b, void *p)
{
	uint32_t cls = (uint32_t)(b - h->bins);

	/* The count carried: 2^48 back into nalloc_hi, and the next one. */
	JP_CNT_ADD(b->nalloc_hi, (uint64_t)1 << 48);
	/* Without the profile, a count that went 2^48 allocations without a
	 * refill (which folds it) carries too: folded, that is all. */
	if (!jp__settings.prof)
		return p;
	jp__prof_bin_arm(b, cls);
	record(p, jp__classes[cls].bsize, jp__span_of((uintptr_t)p));
	return p;
}

bool jp__prof_huge(void *p, uint64_t usable)
{
	uint64_t left = prof_huge_left;

	if (left == 0)
		left = jp__prof_draw();
	if (left > usable) {
		prof_huge_left = left - usable;
		return false;
	}
	/* Crossed: p is sampled; the next interval starts after it. */
	prof_huge_left = jp__prof_draw();
	return record(p, usable, NULL);
}

void jp__prof_free(void *p, struct jp_span *s)
{
	struct prof_tab *t = tab_of(s);

	jp__lock(&t->lock);
	if (live_remove(t, (uintptr_t)p) != 0 && s != NULL) {
		struct jp_segment *seg = (struct jp_segment *)((uintptr_t)p & ~(uintptr_t)JP_SEG_MASK);
		unsigned k = ((uintptr_t)p >> JP_SLICE_SHIFT) & (JP_NSLICES - 1);

		/* The last sample of its slice: the slice's frees may be fast
		 * again.  (Before the block goes back: the span cannot be
		 * released and published anew meanwhile.) */
		if (--seg->prof_nsampled[k] == 0)
			__atomic_store_n(&seg->slices[k].limit, s->limit, __ATOMIC_RELAXED);
		if (__atomic_sub_fetch(&s->nsampled, 1, __ATOMIC_RELAXED) == 0)
			__atomic_store_n(&s->sampled_mask, 0, __ATOMIC_RELAXED);
	}
	jp__unlock(&t->lock);
}

/* ---- the profile ---------------------------------------------------- */

/* A line of the profile is built with the library's one string builder
 * (jp__str_add) and written whole: a stack line holds at most
 * JP_STACK_MAX addresses of 19 bytes each, and its counts. */
#define LINE_MAX_BYTES	(64 + JP_STACK_MAX * 20)

static void add_num(char *line, size_t *len, uint64_t v)
{
	char num[24];

	jp__str_add(line, LINE_MAX_BYTES, len, jp__fmt_u64(num, v));
}

/* "inuse_n: inuse_b [alloc_n: alloc_b] @" */
static void add_counts(char *line, size_t *len, const struct stack_total *t)
{
	add_num(line, len, t->inuse_n);
	jp__str_add(line, LINE_MAX_BYTES, len, ": ");
	add_num(line, len, t->inuse_b);
	jp__str_add(line, LINE_MAX_BYTES, len, " [");
	add_num(line, len, t->alloc_n);
	jp__str_add(line, LINE_MAX_BYTES, len, ": ");
	add_num(line, len, t->alloc_b);
	jp__str_add(line, LINE_MAX_BYTES, len, "] @");
}

/* Every table's lock, in index order; false, taking none, when the code a
 * signal interrupted holds one (interrupted).  All are looked at before
 * any is taken: a handler that waited for table 0 while its thread held
 * table 3 could wait for a writer that holds table 0 and waits for 3. */
static bool lock_tabs(bool interrupted)
{
	for (unsigned i = 0; interrupted && i < JP_PROF_TABS; i++)
		if (jp__lock_mine(&tabs[i].lock))
			return false;
	for (unsigned i = 0; i < JP_PROF_TABS; i++)
		jp__lock(&tabs[i].lock);
	return true;
}

/* The totals of stack id over the n tables of totals in v (locked). */
static struct stack_total sum_of(struct stack_total *const *v, unsigned n, uint32_t id)
{
	struct stack_total t = { 0, 0, 0, 0 };

	for (unsigned i = 0; i < n; i++) {
		t.inuse_n += v[i][id].inuse_n;
		t.inuse_b += v[i][id].inuse_b;
		t.alloc_n += v[i][id].alloc_n;
		t.alloc_b += v[i][id].alloc_b;
	}
	return t;
}

/* The profile into fd; false when interrupted code holds a lock. */
static bool write_profile(int fd, bool interrupted)
{
	char line[LINE_MAX_BYTES];
	size_t len = 0;
	struct stack_total t = { 0, 0, 0, 0 }, none, *used[JP_PROF_TABS];
	unsigned nused = 0;

	if (!lock_tabs(interrupted))
		return false;
	/* Id 0 (no stack captured) is counted but has no line: the header is
	 * the sum of the lines. */
	for (unsigned i = 0; i < JP_PROF_TABS; i++) {
		t.inuse_n += tabs[i].all.inuse_n;
		t.inuse_b += tabs[i].all.inuse_b;
		t.alloc_n += tabs[i].all.alloc_n;
		t.alloc_b += tabs[i].all.alloc_b;
		if (tabs[i].totals != NULL)
			used[nused++] = tabs[i].totals;
	}
	none = sum_of(used, nused, 0);
	t.inuse_n -= none.inuse_n;
	t.inuse_b -= none.inuse_b;
	t.alloc_n -= none.alloc_n;
	t.alloc_b -= none.alloc_b;
	jp__str_add(line, sizeof line, &len, "heap profile: ");
	add_counts(line, &len, &t);
	jp__str_add(line, sizeof line, &len, " heap_v2/");
	add_num(line, &len, jp__settings.prof_rate);
	jp__str_add(line, sizeof line, &len, "\n");
	jp__os_write(fd, line, len);
	for (uint32_t id = 1; id < NSTACKS; id++) {
		uintptr_t pcs[JP_STACK_MAX];
		unsigned n;
		char hex[24];

		t = sum_of(used, nused, id);
		if (t.alloc_n == 0)
			continue;
		n = jp__stack_depot_get(id, pcs, JP_STACK_MAX);
		if (n == 0)
			continue;
		len = 0;
		add_counts(line, &len, &t);
		for (unsigned k = 0; k < n; k++) {
			jp__str_add(line, sizeof line, &len, " ");
			jp__str_add(line, sizeof line, &len, jp__fmt_hex(hex, pcs[k]));
		}
		jp__str_add(line, sizeof line, &len, "\n");
		jp__os_write(fd, line, len);
	}
	for (unsigned i = JP_PROF_TABS; i-- > 0;)
		jp__unlock(&tabs[i].lock);
	len = 0;
	jp__str_add(line, sizeof line, &len, "\nMAPPED_LIBRARIES:\n");
	jp__os_write(fd, line, len);
	(void)jp__os_copy_file("/proc/self/maps", fd);
	return true;
}

/* FILE.<pid>.heap (seq 0) or FILE.<pid>.<seq>.heap, into path. */
static void profile_path(char *path, size_t cap, unsigned seq)
{
	char num[24];
	size_t len = 0;

	path[0] = '\0';
	jp__str_add(path, cap, &len, jp__options()->heap_profile);
	jp__str_add(path, cap, &len, ".");
	jp__str_add(path, cap, &len, jp__fmt_u64(num, (uint64_t)getpid()));
	if (seq != 0) {
		jp__str_add(path, cap, &len, ".");
		jp__str_add(path, cap, &len, jp__fmt_u64(num, seq));
	}
	jp__str_add(path, cap, &len, ".heap");
}

static void write_to(unsigned seq, bool interrupted)
{
	char path[JP_STATS_PATH_MAX + 64];
	int fd, saved = errno;

	profile_path(path, sizeof path, seq);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		jp__warn_cannot_write("HEAP_PROFILE", path, errno, "");
		errno = saved;
		return;
	}
	if (!write_profile(fd, interrupted))
		jp__os_puts(fd, "jpsync: no heap profile now: the signal interrupted "
			    "the profiler\n");
	close(fd);
	errno = saved;
}

static void write_interval(void)
{
	write_to(atomic_fetch_add_explicit(&prof_seq, 1, memory_order_relaxed) + 1, false);
}

void jp__prof_on_signal(void)
{
	if (jp__settings.prof)
		write_to(atomic_fetch_add_explicit(&prof_seq, 1, memory_order_relaxed) + 1,
			 true);
}

/* At exit: FILE.<pid>.heap. */
__attribute__((destructor)) static void prof_at_exit(void)
{
	if (jp__settings.prof)
		write_to(0, false);
}
