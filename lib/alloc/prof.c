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
 * E = -ln(u), u uniform in (0, 1], without libm: u = f * 2^-n with f in
 * [1, 2) (n from the count of leading zeros), ln u = ln f - n ln 2, and
 * ln f from a table of 64 and a cubic (error under 1e-9, far below the
 * sampling noise; no branch, no division: a sample's draw is a short
 * chain of multiplications).
 * The uniform comes from a per-thread xorshift64* generator.
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

/* ---- the sampler ---------------------------------------------------- */

static __thread uint64_t prof_rng __attribute__((tls_model("initial-exec")));
/* Bytes of huge blocks to allocate before the next sample (per thread);
 * 0: not drawn yet. */
static __thread uint64_t prof_huge_left __attribute__((tls_model("initial-exec")));

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	if (x == 0)	/* seeded on first use: the key and this thread */
		x = (jp__settings.key ^ (uintptr_t)s) * 0x9e3779b97f4a7c15ULL | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* 1 / c and ln c for c = 1 + (i + 1/2) / 64, the middle of the i-th 64th
 * of [1, 2) (to the double nearest, from 40-digit decimals). */
static const double exp1_inv[64] = {
	0.9922480620155039, 0.9770992366412213, 0.9624060150375939,
	0.9481481481481482, 0.9343065693430657, 0.920863309352518,
	0.9078014184397163, 0.8951048951048951, 0.8827586206896552,
	0.8707482993197279, 0.8590604026845637, 0.847682119205298,
	0.8366013071895425, 0.8258064516129032, 0.8152866242038217,
	0.8050314465408805, 0.7950310559006211, 0.7852760736196319,
	0.7757575757575758, 0.7664670658682635, 0.757396449704142,
	0.7485380116959064, 0.7398843930635838, 0.7314285714285714,
	0.7231638418079096, 0.7150837988826816, 0.7071823204419889,
	0.6994535519125683, 0.6918918918918919, 0.6844919786096256,
	0.6772486772486772, 0.6701570680628273, 0.6632124352331606,
	0.6564102564102564, 0.649746192893401, 0.6432160804020101,
	0.6368159203980099, 0.6305418719211823, 0.624390243902439,
	0.6183574879227053, 0.6124401913875598, 0.6066350710900474,
	0.6009389671361502, 0.5953488372093023, 0.5898617511520737,
	0.5844748858447488, 0.579185520361991, 0.5739910313901345,
	0.5688888888888889, 0.5638766519823789, 0.5589519650655022,
	0.5541125541125541, 0.5493562231759657, 0.5446808510638298,
	0.540084388185654, 0.5355648535564853, 0.5311203319502075,
	0.5267489711934157, 0.5224489795918368, 0.5182186234817814,
	0.5140562248995983, 0.5099601593625498, 0.5059288537549407,
	0.5019607843137255
};
static const double exp1_ln[64] = {
	0.007782140442054949, 0.02316705928153438, 0.0383188643021366,
	0.053244514518812285, 0.06795066190850775, 0.08244366921107459,
	0.09672962645855111, 0.11081436634029011, 0.12470347850095724,
	0.13840232285911913, 0.15191604202584197, 0.16524957289530717,
	0.1784076574728183, 0.19139485299962947, 0.2042155414286909,
	0.21687393830061436, 0.22937410106484582, 0.24171993688714516,
	0.25391520998096345, 0.26596354849713794, 0.2778684510034563,
	0.28963329258304266, 0.3012613305781618, 0.3127557100038969,
	0.324119468654212, 0.3353555419211378, 0.34646676734620857,
	0.3574558889218038, 0.3683255611587076, 0.37907835293496944,
	0.3897167511400252, 0.4002431641270127, 0.4106599249852684,
	0.42096929464412963, 0.4311734648183713, 0.4412745608048752,
	0.45127464413945856, 0.46117571512217015, 0.470979715218791,
	0.4806885293457519, 0.4903039880451938, 0.4998278695564493,
	0.5092619017898079, 0.5186077642080457, 0.5278670896208424,
	0.5370414658968836, 0.5461324375981357, 0.5551415075405016,
	0.564070138284803, 0.5729197535617855, 0.5816917396346225,
	0.5903874466021763, 0.5990081896460834, 0.6075552502245418,
	0.616029877215514, 0.6244332880118935, 0.6327666695710378,
	0.6410311794209312, 0.6492279466251099, 0.65735807270836,
	0.6654226325450905, 0.6734226752121667, 0.6813592248079031,
	0.689233281238809
};

double jp__prof_exp1(uint64_t r)
{
	/* u = r / 2^64 = f * 2^-(lz+1), f = the mantissa in [1, 2) */
	unsigned lz, i;
	uint64_t m, bits;
	double f, x, lnf;

	if (r == 0)
		r = 1;
	lz = (unsigned)__builtin_clzll(r);
	m = r << lz;			/* bit 63 set */
	/* f from m's 52 bits below its leading one, as a double's mantissa
	 * with exponent 0 (no conversion; what is cut off is under 2^-52). */
	bits = (uint64_t)1023 << 52 | (m << 1) >> 12;
	memcpy(&f, &bits, sizeof f);
	/* ln f = ln c + ln(f / c), c the middle of the 64th of [1, 2) f is
	 * in (its next 6 bits): x = f / c - 1 is within 1/129 of 0, and
	 * ln(1 + x) = x - x^2/2 + x^3/3 leaves out less than x^4/4, 1e-9. */
	i = (unsigned)(m >> 57) & 63;
	x = f * exp1_inv[i] - 1;
	lnf = exp1_ln[i] + x * (1 + x * (-0.5 + x * (1.0 / 3)));
	/* -ln u = (lz + 1) ln 2 - ln f */
	return ((double)lz + 1) * 0.69314718055994530942 - lnf;
}

uint64_t jp__prof_interval(uint64_t *state, uint64_t mean)
{
	double b = jp__prof_exp1(rng_next(state)) * (double)mean;

	/* E is below 45 (u >= 2^-64): at most 45 GiB * 45 */
	return (uint64_t)b + 1;
}

/* Blocks of class cls to hand out up to and including the next sample:
 * floor((interval - 1) / size) + 1 of an interval of
 * jp__prof_interval, floor(E * rate / size) + 1, without its integer
 * division (the rate over the size is worked out while E is). */
static uint64_t class_countdown(uint32_t cls)
{
	double per = (double)jp__settings.prof_rate / jp__classes[cls].bsize;
	double k = jp__prof_exp1(rng_next(&prof_rng)) * per;

	return k >= (double)((uint64_t)1 << 40) ? (uint64_t)1 << 40 : (uint64_t)(int64_t)k + 1;
}

void jp__prof_bin_arm(struct jp_bin *b, uint32_t cls)
{
	uint64_t cn = JP_CNT_LOAD(b->cn);
	uint64_t target = ((uint64_t)1 << 48) - class_countdown(cls);

	/* nalloc_hi + count stays the same (modulo 2^64). */
	JP_CNT_SET(b->nalloc_hi, JP_CNT_LOAD(b->nalloc_hi) - (target - JP_CN_NALLOC(cn)));
	JP_CNT_SET(b->cn, JP_CN_CREDIT(cn) | target << 16);
}

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
		left = jp__prof_interval(&prof_rng, jp__settings.prof_rate);
	if (left > usable) {
		prof_huge_left = left - usable;
		return false;
	}
	/* Crossed: p is sampled; the next interval starts after it. */
	prof_huge_left = jp__prof_interval(&prof_rng, jp__settings.prof_rate);
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
