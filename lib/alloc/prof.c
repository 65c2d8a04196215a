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
 * Lock: jp__prof_lock, a leaf (nothing is taken while it is held; the fork
 * handlers take it last).
 */
#include "alloc_init.h"
#include "tcache.h"
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

struct jp__lock jp__prof_lock;

/* Bytes of huge blocks to allocate before the next sample (per thread);
 * 0: not drawn yet. */
static __thread uint64_t prof_huge_left __attribute__((tls_model("initial-exec")));

/* ---- live samples --------------------------------------------------- */

/* The live samples' table: open addressing, at most half full, from
 * 2^10 slots of 16 bytes (16 KiB: a program that holds a few hundred
 * samples probes memory that stays in cache) doubling up to 2^17 (2 MiB:
 * 64Ki live samples, 32 GiB in use at the default rate).  Each table is
 * written at once when mapped, so that a sample does not take two page
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

/* Under jp__prof_lock. */
static struct live *live;
static unsigned live_bits;	/* live has 2^live_bits slots */
static struct stack_total *totals;
static size_t nlive;
static uint64_t dropped;
static struct stack_total all;
/* The bytes in use as the samples estimate them (each stands for at least
 * the rate's bytes), and that figure at the last interval profile. */
static uint64_t est_inuse, est_last;
static _Atomic unsigned prof_seq;

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

static size_t slot_of(uintptr_t a)
{
	return (size_t)(((uint64_t)a >> 4) * 0x9e3779b97f4a7c15ULL >> (64 - live_bits));
}

static size_t slot_next(size_t i)
{
	return (i + 1) & (((size_t)1 << live_bits) - 1);
}

/* A free slot for a, which is not in the table. */
static size_t slot_free(uintptr_t a)
{
	size_t i;

	for (i = slot_of(a); live[i].addr != 0; i = slot_next(i))
		;
	return i;
}

/* Room for one more live sample: the tables mapped, the live one grown
 * to keep it at most half full.  False when there is none. */
static bool tables(void)
{
	struct live *old = live;
	size_t nold = (size_t)1 << live_bits;
	unsigned bits = live_bits == 0 ? LIVE_BITS_MIN : live_bits + 1;

	if (totals == NULL && (totals = map_written(NSTACKS * sizeof *totals)) == NULL)
		return false;
	if (live != NULL && nlive < nold / 2)
		return true;
	if (nlive >= LIVE_MAX || (live = map_written(sizeof *live << bits)) == NULL) {
		live = old;
		return false;
	}
	live_bits = bits;
	for (size_t i = 0; old != NULL && i < nold; i++)
		if (old[i].addr != 0)
			live[slot_free((uintptr_t)old[i].addr)] = old[i];
	if (old != NULL)
		(void)jp__os_unmap(old, nold * sizeof *old);
	return true;
}

static uint64_t estimate(uint64_t size)
{
	return size > jp__settings.prof_rate ? size : jp__settings.prof_rate;
}

/* Remove the sample of a, if any (under the lock); its size, or 0. */
static uint64_t live_remove(uintptr_t a)
{
	size_t i, j;
	uint64_t size;

	if (live == NULL || nlive == 0)
		return 0;
	for (i = slot_of(a); live[i].addr != a; i = slot_next(i))
		if (live[i].addr == 0)
			return 0;
	size = (uint64_t)live[i].size16 * 16;
	totals[live[i].id].inuse_n--;
	totals[live[i].id].inuse_b -= size;
	all.inuse_n--;
	all.inuse_b -= size;
	est_inuse -= estimate(size);
	nlive--;
	/* Backward shift: no tombstones. */
	for (j = slot_next(i); live[j].addr != 0; j = slot_next(j)) {
		size_t home = slot_of(live[j].addr);

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
	size_t n;

	jp__lock(&jp__prof_lock);
	n = nlive;
	jp__unlock(&jp__prof_lock);
	return n;
}

static void write_interval(void);

/* Record block p of size bytes (span s for a small block, else NULL);
 * false when the table is full. */
static bool record(void *p, uint64_t size, struct jp_span *s)
{
	uintptr_t pcs[JP_STACK_MAX];
	unsigned n = jp__stack_capture(pcs, JP_STACK_MAX, 0, true);
	uint32_t id = jp__stack_depot_put(pcs, n);
	bool due = false;
	size_t i;

	jp__lock(&jp__prof_lock);
	if (!tables()) {
		dropped++;
		jp__unlock(&jp__prof_lock);
		return false;
	}
	i = slot_free((uintptr_t)p);
	if (size > (uint64_t)UINT32_MAX * 16)
		size = (uint64_t)UINT32_MAX * 16;
	size = (size + 15) & ~(uint64_t)15;
	live[i] = (struct live){ (uintptr_t)p, (uint32_t)(size / 16), id };
	nlive++;
	totals[id].inuse_n++;
	totals[id].inuse_b += size;
	totals[id].alloc_n++;
	totals[id].alloc_b += size;
	all.inuse_n++;
	all.inuse_b += size;
	all.alloc_n++;
	all.alloc_b += size;
	est_inuse += estimate(size);
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
	if (jp__settings.prof_interval != 0 && est_inuse >= est_last + jp__settings.prof_interval) {
		est_last = est_inuse;
		due = true;
	}
	jp__unlock(&jp__prof_lock);
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
	jp__lock(&jp__prof_lock);
	if (live_remove((uintptr_t)p) != 0 && s != NULL) {
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
	jp__unlock(&jp__prof_lock);
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

/* The profile into fd; false when interrupted code holds the lock. */
static bool write_profile(int fd, bool interrupted)
{
	char line[LINE_MAX_BYTES];
	size_t len = 0;
	struct stack_total t;

	if (interrupted ? !jp__lock_for_fork(&jp__prof_lock) : (jp__lock(&jp__prof_lock), false))
		return false;
	/* Id 0 (no stack captured) is counted but has no line: the header is
	 * the sum of the lines. */
	t = all;
	if (totals != NULL) {
		t.inuse_n -= totals[0].inuse_n;
		t.inuse_b -= totals[0].inuse_b;
		t.alloc_n -= totals[0].alloc_n;
		t.alloc_b -= totals[0].alloc_b;
	}
	jp__str_add(line, sizeof line, &len, "heap profile: ");
	add_counts(line, &len, &t);
	jp__str_add(line, sizeof line, &len, " heap_v2/");
	add_num(line, &len, jp__settings.prof_rate);
	jp__str_add(line, sizeof line, &len, "\n");
	jp__os_write(fd, line, len);
	for (uint32_t id = 1; totals != NULL && id < NSTACKS; id++) {
		uintptr_t pcs[JP_STACK_MAX];
		unsigned n;
		char hex[24];

		if (totals[id].alloc_n == 0)
			continue;
		n = jp__stack_depot_get(id, pcs, JP_STACK_MAX);
		if (n == 0)
			continue;
		len = 0;
		add_counts(line, &len, &totals[id]);
		for (unsigned k = 0; k < n; k++) {
			jp__str_add(line, sizeof line, &len, " ");
			jp__str_add(line, sizeof line, &len, jp__fmt_hex(hex, pcs[k]));
		}
		jp__str_add(line, sizeof line, &len, "\n");
		jp__os_write(fd, line, len);
	}
	jp__unlock(&jp__prof_lock);
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
