/*
 * check.c - JPSYNC_CHECK: every block has a header and canaries, every free
 * and every reuse checks them, and a finding names the block, its requested
 * size, what was wrong and which bytes.
 *
 * In check mode every allocation comes here (alloc.c sends it, off its fast
 * paths: the thread caches are off, jp__settings.nocache), whatever its size,
 * alignment or kind (malloc, calloc, aligned, realloc), so that there is no
 * block check mode did not write, and nothing it reads it did not write.
 *
 * A small block (a block of a size class) of a request of n bytes at
 * alignment A (16 at least) is, from the block's start blk:
 *
 *   [0, 8)         n | off << 32     off = max(32, A): where the user's
 *   [8, 16)        LIVE ^ the above  bytes start (binds the size to the tag)
 *   [16, 24)       a | (a ^ SITE) << 32   a: the stack id (base/stack.h)
 *                                    of the allocation, with its check
 *   [24, off)      canary            8 bytes at least: an underflow of up
 *                                    to 8 bytes leaves the header whole,
 *                                    one of up to 16 its size and tag
 *   [off, off+n)   the user's bytes
 *   [off+n, end)   canary            8 bytes at least: the class is chosen
 *                                    for off + n + 8
 *
 * A free checks the tag, the canaries before and after, then turns the
 * block into a freed one: pointer word 0 a link while it is in a bin (0
 * in its span), pointer word 1 the double-free key (tcache.c), bytes 16-23
 * n | log2(off) << 24 | a << 32, bytes 24-31 f | c << 32 (f: the stack id
 * of the free, c a 32-bit check of both words, FREED among them), and
 * every byte from 32 on FILL.
 * (n < 2^24: JP_MAX_SMALL is 256 KiB.)  The allocation that
 * takes the block again checks all of that ("write after free"); a block
 * carved from a span for the first time has pointer word 1 zero
 * (central.c), and any other value there is a damaged freed block.  (The
 * 64-bit fields are 64 bits on every target; the pointer words are those
 * the rest of the allocator uses.)
 *
 * A huge block (huge.c) has its header page before it and its mapping after
 * it: the request is mapped with one byte more, the bytes from n to the end
 * of the mapping are canary and so are those of the header page up to the
 * block; a freed huge block stays mapped without access for a while (huge.c's
 * quarantine), so that a write after free faults and a second free is
 * recognised as such.  Its header (struct jp_huge) keeps its allocation's
 * stack id; its free's is not kept (the header is gone or inaccessible
 * once it is freed).
 *
 * Each allocation and each free captures up to CHECK_FRAMES return addresses
 * of its caller's stack (the library's own frames left out) into the stack
 * depot (base/stack.c), so that a block holds only the two ids.
 *
 * Reporting: jp__check_hook, when set (tests and fuzzers only), receives
 * each finding instead of the message and the abort, and the operation
 * then leaves the damaged block alone (it is leaked) and carries on, so that
 * a test can drive check mode in a loop.  Without it a finding prints one
 * line on stderr, "jpsync: <what> of <ptr> (<n> bytes): bytes <a> to <b>
 * changed", then the stacks of the block's allocation and (once freed) of
 * its free, and aborts.
 */
#include "alloc_init.h"
#include "check.h"
#include "tcache.h"
#include "segment.h"
#include "huge.h"
#include "quarantine.h"
#include "sizeclass.h"
#include "base/os.h"
#include "base/stack.h"

#include <errno.h>
#include <string.h>

#define CHECK_SITE_AT	16	/* the allocation's stack id and its check */
#define CHECK_HDR	24	/* the header: size and offset, tag, site */
#define CHECK_OFF	32	/* the user's bytes start here at least */
#define CHECK_TAIL	8	/* canary bytes after a small block at least */
#define CHECK_LIVE	0x6a7063686b6c6976ULL
#define CHECK_FILL	0xdf	/* freed blocks */
#define CHECK_CANARY	0xab	/* before and after the user's bytes */
#define CHECK_PRE_HUGE	4096	/* canary bytes before a huge block at most */
#define CHECK_SITE	0x73697465u	/* checks a stack id */
#define CHECK_FREED32	0xb6e46564u
#define CHECK_FRAMES	8	/* frames kept per allocation and per free */

void (*jp__check_hook)(const struct jp_check_report *r);

/* ---- reporting ---------------------------------------------------------- */

/*
 * A finding: what, about the block whose user pointer is ptr, of size
 * bytes requested (SIZE_MAX: unknown), the bytes first to last (offsets from
 * ptr) changed (first > last: no bytes to name).  Returns only when a hook
 * took it.
 */
static void report_at(const char *what, const void *ptr, size_t size,
		      long long first, long long last, uint32_t alloc_site,
		      uint32_t free_site)
{
	struct jp_check_report r = { what, ptr, size, first, last };

	if (jp__check_hook != NULL) {
		jp__check_hook(&r);
		return;
	}
	jp__die_block_at(what, ptr, size, first, last, NULL, alloc_site, free_site);
}

/* A finding with no site to name. */
static void report(const char *what, const void *ptr, size_t size,
		   long long first, long long last)
{
	report_at(what, ptr, size, first, last, 0, 0);
}

/* The stack id of this allocation or free: the caller of the library's
 * entry point and up (0: none, e.g. a capture inside a capture). */
static uint32_t site_here(void)
{
	uintptr_t pcs[CHECK_FRAMES];

	return jp__stack_depot_put(pcs, jp__stack_capture(pcs, CHECK_FRAMES, 0, true));
}

/* The first and last byte of [lo, hi) that is not v, as offsets from base;
 * false when all are v. */
static bool damaged(const unsigned char *lo, const unsigned char *hi, unsigned char v,
		    const unsigned char *base, long long *first, long long *last)
{
	const unsigned char *p = lo, *q = hi;
	uint64_t w = 0x0101010101010101ULL * v;

	/* Words at a time where the range is aligned: a 256 KiB block is
	 * checked at every free and reuse. */
	while (p < q && ((uintptr_t)p & 7) != 0 && *p == v)
		p++;
	while (q - p >= 8 && ((uintptr_t)p & 7) == 0 && *(const uint64_t *)(const void *)p == w)
		p += 8;
	while (p < q && *p == v)
		p++;
	if (p == q)
		return false;
	while (q > p && q[-1] == v)
		q--;
	*first = p - base;
	*last = q - 1 - base;
	return true;
}

/* ---- small blocks --------------------------------------------------------- */

static inline uint64_t hdr_word(size_t n, size_t off)
{
	return (uint64_t)n | (uint64_t)off << 32;
}

/* The 64-bit field i of a block (blocks are 16-byte aligned). */
static inline uint64_t *f64(const unsigned char *blk, unsigned i)
{
	return (uint64_t *)(void *)(uintptr_t)(blk + 8 * i);
}

/* The pointer word 1 of a block: the double-free key when it is free. */
static inline uintptr_t key_word(const unsigned char *blk)
{
	return ((const uintptr_t *)(const void *)blk)[1];
}

/* A live block's allocation site word, and reading it back (false:
 * damaged). */
static inline uint64_t site_word(uint32_t a)
{
	return (uint64_t)a | (uint64_t)(a ^ CHECK_SITE) << 32;
}

static bool live_site(const unsigned char *blk, uint32_t *a)
{
	uint64_t w = *f64(blk, 2);

	*a = (uint32_t)w;
	return (uint32_t)(w >> 32) == (*a ^ CHECK_SITE);
}

/* A freed block's header (bytes 16-31): the check of the two words. */
static inline uint32_t freed_check(uint64_t w2, uint32_t f)
{
	return (uint32_t)w2 ^ (uint32_t)(w2 >> 32) ^ f ^ CHECK_FREED32;
}

/* Read a freed block's header: its size, offset and sites; false when it
 * is damaged. */
static bool freed_hdr(const unsigned char *blk, size_t *n, size_t *off,
		      uint32_t *a, uint32_t *f)
{
	uint64_t w2 = *f64(blk, 2), w3 = *f64(blk, 3);
	unsigned lg = (unsigned)(w2 >> 24) & 0xff;

	*f = (uint32_t)w3;
	if ((uint32_t)(w3 >> 32) != freed_check(w2, *f) || lg >= 32)
		return false;
	*n = (size_t)(w2 & 0xffffff);
	*off = (size_t)1 << lg;
	*a = (uint32_t)(w2 >> 32);
	return true;
}

/* The block of span s that a lies in, or NULL. */
static unsigned char *block_of(const struct jp_span *s, uintptr_t a)
{
	uintptr_t start = jp__span_start(s), k;

	if (s->limit == 0 || s->bsize == 0 || a < start)
		return NULL;
	k = (a - start) / s->bsize;
	if (k >= s->nblocks)
		return NULL;
	return (unsigned char *)(start + k * s->bsize);
}

/* A live block's size and offset from word 0 (false: not a live block). */
static bool live_hdr(const unsigned char *blk, size_t bs, size_t *n, size_t *off)
{
	uint64_t w0 = *f64(blk, 0);

	if (*f64(blk, 1) != (CHECK_LIVE ^ w0))
		return false;
	*n = (size_t)(uint32_t)w0;
	*off = (size_t)(w0 >> 32);
	return *off >= CHECK_OFF && *off + *n + CHECK_TAIL <= bs;
}

/* For the leak report (leaks.c): the user's bytes and allocation site of
 * blk, a block of bs bytes, when it is live. */
bool jp__check_live(const unsigned char *blk, size_t bs, uintptr_t *user, size_t *n,
		    uint32_t *site)
{
	size_t off;

	if (!live_hdr(blk, bs, n, &off) || !live_site(blk, site))
		return false;
	*user = (uintptr_t)blk + off;
	return true;
}

/*
 * Check a block taken from its span for this allocation; false when it is
 * damaged (reported; the caller leaves it and takes another).
 */
static bool small_reuse_ok(unsigned char *blk, size_t bs)
{
	unsigned char *old;
	size_t n = SIZE_MAX, off = CHECK_OFF;
	uint32_t a = 0, f = 0;
	long long first, last;

	if (key_word(blk) == 0)
		return true;	/* carved for the first time (central.c) */
	if (key_word(blk) == jp__settings.key && freed_hdr(blk, &n, &off, &a, &f)) {
		if (off < CHECK_OFF || off >= bs)
			off = CHECK_OFF;
	} else {
		/* The key or the saved header of a freed block is damaged: a
		 * write before its start after it was freed. */
		report("write after free", blk + CHECK_OFF, SIZE_MAX,
		       (long long)sizeof(uintptr_t) - CHECK_OFF, -1);
		return false;
	}
	old = blk + off;
	if (damaged(blk + 32, blk + bs, CHECK_FILL, old, &first, &last)) {
		report_at("write after free", old, n, first, last, a, f);
		return false;
	}
	return true;
}

static void *small_alloc(struct jp_heap *h, size_t n, size_t align, bool zero)
{
	size_t off = align > CHECK_OFF ? align : CHECK_OFF;
	uint32_t cls = jp__aligned_class(off + n + CHECK_TAIL, align);
	size_t bs = jp__class_size(cls);
	unsigned char *blk;

	do {
		blk = jp__class_alloc(h, cls);
		if (blk == NULL)
			return NULL;
	} while (!small_reuse_ok(blk, bs));
	*f64(blk, 0) = hdr_word(n, off);
	*f64(blk, 1) = CHECK_LIVE ^ hdr_word(n, off);
	*f64(blk, 2) = site_word(site_here());
	memset(blk + CHECK_HDR, CHECK_CANARY, off - CHECK_HDR);
	if (zero)
		memset(blk + off, 0, n);
	memset(blk + off + n, CHECK_CANARY, bs - off - n);
	return blk + off;
}

/*
 * The live block whose user pointer is p in span s: its start, size and
 * offset, after checking its canaries.  NULL when p is not such a block or
 * the block is damaged (reported; what names a pointer that is no block).
 */
static unsigned char *small_find(struct jp_span *s, const void *p, size_t *np,
				 const char *what)
{
	unsigned char *blk = block_of(s, (uintptr_t)p), *u = (unsigned char *)p;
	size_t n, off, bs = s->bsize, fn, foff;
	uint32_t a, f;
	long long first, last;

	if (blk == NULL) {
		report(what, p, SIZE_MAX, 1, 0);
		return NULL;
	}
	if (!live_hdr(blk, bs, &n, &off)) {
		if (key_word(blk) == jp__settings.key && jp__block_is_free(jp__tls_heap, blk, s)) {
			if (freed_hdr(blk, &fn, &foff, &a, &f))
				report_at("double free", p, fn, 1, 0, a, f);
			else
				report("double free", p, SIZE_MAX, 1, 0);
			return NULL;
		}
		/*
		 * The header is damaged.  If p is where a block's bytes start
		 * (a power of two from 32 on) and every byte between the
		 * header and p changed, an underflow ran through the canary
		 * into the header; the size it held is lost.
		 */
		off = (size_t)(u - blk);
		if (off >= CHECK_OFF && (off & (off - 1)) == 0 &&
		    damaged(blk + CHECK_HDR, u, CHECK_CANARY, u, &first, &last) &&
		    first == CHECK_HDR - (long long)off && last == -1) {
			report("underflow before the start", p, SIZE_MAX,
			       -(long long)off, -1);
			return NULL;
		}
		report(what, p, SIZE_MAX, 1, 0);
		return NULL;
	}
	if (blk + off != u) {
		report(what, p, SIZE_MAX, 1, 0);
		return NULL;
	}
	/* An underflow of 9 to 16 bytes reaches the site word: its check
	 * fails, and the bytes it names start there. */
	if (damaged(blk + CHECK_HDR, u, CHECK_CANARY, u, &first, &last)) {
		if (!live_site(blk, &a)) {
			first = CHECK_SITE_AT - (long long)off;
			a = 0;
		}
		report_at("underflow before the start", p, n, first, last, a, 0);
		return NULL;
	}
	if (!live_site(blk, &a)) {
		report("underflow before the start", p, n, CHECK_SITE_AT - (long long)off,
		       CHECK_HDR - 1 - (long long)off);
		return NULL;
	}
	if (damaged(u + n, blk + bs, CHECK_CANARY, u, &first, &last)) {
		report_at("overflow past the end", p, n, first, last, a, 0);
		return NULL;
	}
	*np = n;
	return blk;
}

/* blk: a live block small_find checked (its site word among it). */
static void small_free(unsigned char *blk, struct jp_span *s)
{
	uint64_t w0 = *f64(blk, 0), w2;
	uint32_t a = (uint32_t)*f64(blk, 2), f = jp__settings.free_sites ? site_here() : 0;

	w2 = (w0 & 0xffffff) | (uint64_t)__builtin_ctzll(w0 >> 32) << 24 | (uint64_t)a << 32;
	*f64(blk, 2) = w2;
	*f64(blk, 3) = (uint64_t)f | (uint64_t)freed_check(w2, f) << 32;
	memset(blk + 32, CHECK_FILL, s->bsize - 32);
	jp__free_block(jp__heap_get(), blk, s);
}

/* ---- huge blocks ---------------------------------------------------------- */

/* The canary before huge block hg: [*lo, user). */
static unsigned char *huge_pre(const struct jp_huge *hg)
{
	unsigned char *u = jp__huge_user(hg);
	unsigned char *lo = u - CHECK_PRE_HUGE;
	unsigned char *h = (unsigned char *)hg;

	if (h < u && h + sizeof *hg > lo)
		lo = h + sizeof *hg;
	return lo;
}

static void *huge_alloc(size_t n, size_t align, bool zero)
{
	unsigned char *u;
	struct jp_huge *hg;

	if (n > SIZE_MAX - 1) {
		errno = ENOMEM;
		return NULL;
	}
	/* One byte more: the canary starts at the exact end. */
	u = jp__huge_alloc(n + 1, align, zero);
	if (u == NULL)
		return NULL;
	hg = jp__huge_of(u);
	hg->req = n;
	hg->alloc_site = site_here();
	memset(huge_pre(hg), CHECK_CANARY, (size_t)(u - huge_pre(hg)));
	memset(u + n, CHECK_CANARY, hg->usable - n);
	return u;
}

/* The live huge block p, canaries checked; NULL when it is not one
 * (reported). */
static struct jp_huge *huge_find(const void *p, const char *what)
{
	struct jp_huge *hg = jp__huge_of(p);
	unsigned char *u = (unsigned char *)p;
	long long first, last;

	if (hg == NULL) {
		struct jp_huge_freed f;

		if (jp__huge_freed(p, &f))
			report_at("double free", p, f.req, 1, 0, f.alloc_site, f.free_site);
		else
			report(what, p, SIZE_MAX, 1, 0);
		return NULL;
	}
	if (damaged(huge_pre(hg), u, CHECK_CANARY, u, &first, &last)) {
		report_at("underflow before the start", p, hg->req, first, last,
			  hg->alloc_site, 0);
		return NULL;
	}
	if (damaged(u + hg->req, u + hg->usable, CHECK_CANARY, u, &first, &last)) {
		report_at("overflow past the end", p, hg->req, first, last, hg->alloc_site, 0);
		return NULL;
	}
	return hg;
}

/* Free live huge block hg, its free's site kept in the quarantine. */
static void huge_free(struct jp_huge *hg)
{
	jp__check_fault_install();
	hg->free_site = jp__settings.free_sites ? site_here() : 0;
	jp__huge_free(hg);
}

/* ---- the entry points (alloc.c) ------------------------------------------- */

void *jp__check_alloc(size_t n, size_t align, bool zero)
{
	struct jp_heap *h;

	if (align < 16)
		align = 16;
	if (align <= JP_SLICE_SIZE &&
	    n <= JP_MAX_SMALL - (align > CHECK_OFF ? align : CHECK_OFF) - CHECK_TAIL) {
		h = jp__heap_get();
		if (h == NULL) {
			errno = ENOMEM;
			return NULL;
		}
		return small_alloc(h, n, align, zero);
	}
	return huge_alloc(n, align, zero);
}

/* Where p is a live checked block: its span (small), or NULL with *hg set
 * (huge); both NULL when p is not one (reported). */
static unsigned char *find(const void *p, const char *what, struct jp_span **sp,
			   struct jp_huge **hg, size_t *n)
{
	uintptr_t a = (uintptr_t)p;

	*sp = NULL;
	*hg = NULL;
	if ((a >> JP_SEG_SHIFT) >= JP_REG_N) {
		report(what, p, SIZE_MAX, 1, 0);
		return NULL;
	}
	if (jp__reg_get(a) == JP_REG_SMALL) {
		*sp = jp__span_of(a);
		return small_find(*sp, p, n, what);
	}
	*hg = huge_find(p, what);
	if (*hg != NULL)
		*n = (*hg)->req;
	return NULL;
}

void jp__check_free(void *p)
{
	struct jp_span *s;
	struct jp_huge *hg;
	unsigned char *blk;
	size_t n;

	blk = find(p, "invalid free", &s, &hg, &n);
	if (blk != NULL)
		small_free(blk, s);
	else if (hg != NULL)
		huge_free(hg);
}

/*
 * free_sized (and free_aligned_sized, a sized delete): C23 asks for the
 * size the block was allocated with, and check mode knows it exactly, so
 * any other, smaller as well as larger, is reported with the allocation's
 * site: "invalid free_sized of <p> (<n> bytes) (size passed: <size>)".
 */
void jp__check_free_sized(void *p, size_t size)
{
	struct jp_span *s;
	struct jp_huge *hg;
	unsigned char *blk;
	size_t n = 0, len = 0;
	uint32_t a = 0;
	char note[48], num[24];

	blk = find(p, "invalid free", &s, &hg, &n);
	if (blk == NULL && hg == NULL)
		return;		/* reported (a hook took it) */
	if (size != n) {
		if (blk != NULL)
			(void)live_site(blk, &a);	/* find checked it */
		else
			a = hg->alloc_site;
		note[0] = '\0';
		jp__str_add(note, sizeof note, &len, "size passed: ");
		jp__str_add(note, sizeof note, &len, jp__fmt_u64(num, size));
		if (jp__check_hook != NULL) {
			report("invalid free_sized", p, n, 1, 0);
			return;		/* the block is left alone (leaked) */
		}
		jp__die_block_at("invalid free_sized", p, n, 1, 0, note, a, 0);
	}
	if (blk != NULL)
		small_free(blk, s);
	else
		huge_free(hg);
}

size_t jp__check_usable(const void *p, const char *what)
{
	struct jp_span *s;
	struct jp_huge *hg;
	size_t n = 0;

	if (find(p, what, &s, &hg, &n) == NULL && hg == NULL)
		return 0;	/* reported (a hook took it) */
	return n;
}

void *jp__check_realloc(void *p, size_t m)
{
	struct jp_span *s;
	struct jp_huge *hg;
	unsigned char *blk, *u = p, *q;
	size_t n = 0;

	blk = find(p, "invalid realloc", &s, &hg, &n);
	if (blk == NULL && hg == NULL)
		return NULL;	/* reported (a hook took it) */
	if (blk != NULL) {
		size_t off = (size_t)(u - blk), bs = s->bsize;

		/* In place while it fits the block and the block is not more
		 * than twice too big, as without check mode.  m is compared
		 * with the room the block has (live_hdr made sure that
		 * off + CHECK_TAIL <= bs), never added to: within 40 bytes of
		 * SIZE_MAX the sum wrapped and realloc returned p (1.1). */
		if (m <= bs - off - CHECK_TAIL && (bs <= 64 || off + m + CHECK_TAIL > bs / 2)) {
			*f64(blk, 0) = hdr_word(m, off);
			*f64(blk, 1) = CHECK_LIVE ^ hdr_word(m, off);
			memset(u + m, CHECK_CANARY, bs - off - m);
			return p;
		}
	} else if (m < hg->usable && m >= hg->usable / 2) {
		hg->req = m;
		memset(u + m, CHECK_CANARY, hg->usable - m);
		return p;
	}
	q = jp__check_alloc(m, 16, false);
	if (q == NULL)
		return NULL;
	memcpy(q, p, n < m ? n : m);
	if (blk != NULL)
		small_free(blk, s);
	else
		huge_free(hg);
	return q;
}
