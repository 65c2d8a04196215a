/* alloc-model.c - the allocator fuzz targets' model (see alloc-model.h). */
#include "alloc-model.h"
#include "preload-renamed.h"

#include <jpsync/alloc.h>

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* A request up to this size (and alignment up to FA_MUST_ALIGN) must
 * succeed; above PTRDIFF_MAX it must fail (as glibc's malloc); in between,
 * out of memory (ENOMEM) is allowed. */
#define FA_MUST_OK	((size_t)64 << 20)
#define FA_MUST_ALIGN	((size_t)16 << 20)
/* A block above this is checked and freed at once rather than kept: the
 * table must not hold terabytes of address space. */
#define FA_KEEP_MAX	((size_t)1 << 30)
/* errno before a call whose errno must not change. */
#define FA_ERRNO_MARK	EDOM

enum fa_kind {
	K_MALLOC, K_CALLOC, K_REALLOC, K_REALLOCARRAY, K_FREE, K_FREE_SIZED,
	K_ALIGNED_ALLOC, K_POSIX_MEMALIGN, K_MEMALIGN, K_USABLE, K_TRIM,
	K_VALLOC, K_FLUSH, K_VERIFY, K_FREE_ALIGNED_SIZED, K_MALLOC_SMALL,
	K_COUNT
};

static const char *const kind_name[K_COUNT] = {
	"malloc", "calloc", "realloc", "reallocarray", "free", "free_sized",
	"aligned_alloc", "posix_memalign", "memalign", "malloc_usable_size",
	"trim", "valloc/pvalloc", "flush", "verify", "free_aligned_sized",
	"malloc",
};

/* The operations, by weight (op % 64): allocation and free most, the
 * checks of the whole table and the trims (which give every free page back,
 * so are slow) seldom. */
static const uint8_t kinds[64] = {
	K_MALLOC, K_MALLOC, K_MALLOC, K_MALLOC, K_MALLOC, K_MALLOC,
	K_MALLOC_SMALL, K_MALLOC_SMALL, K_MALLOC_SMALL, K_MALLOC_SMALL,
	K_MALLOC_SMALL, K_MALLOC_SMALL, K_MALLOC_SMALL, K_MALLOC_SMALL,
	K_CALLOC, K_CALLOC, K_CALLOC, K_CALLOC,
	K_REALLOC, K_REALLOC, K_REALLOC, K_REALLOC, K_REALLOC, K_REALLOC,
	K_REALLOCARRAY, K_REALLOCARRAY,
	K_FREE, K_FREE, K_FREE, K_FREE, K_FREE, K_FREE, K_FREE, K_FREE, K_FREE, K_FREE,
	K_FREE_SIZED, K_FREE_SIZED, K_FREE_SIZED, K_FREE_ALIGNED_SIZED,
	K_ALIGNED_ALLOC, K_ALIGNED_ALLOC, K_ALIGNED_ALLOC, K_ALIGNED_ALLOC,
	K_POSIX_MEMALIGN, K_POSIX_MEMALIGN, K_MEMALIGN, K_MEMALIGN,
	K_VALLOC, K_VALLOC, K_USABLE, K_USABLE, K_USABLE, K_USABLE,
	K_FLUSH, K_FLUSH, K_FLUSH, K_FREE, K_FREE, K_MALLOC_SMALL, K_MALLOC_SMALL,
	K_TRIM, K_VERIFY, K_VERIFY,
};

static size_t page(void)
{
	return (size_t)getpagesize();
}

static bool is_pow2(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/* A size or an alignment, as the table draws them. */
static size_t draw_size(const struct fa_table *t, struct fz *f)
{
	return t->edges ? fz_size_edge(f) : fz_size(f);
}

static size_t draw_align(const struct fa_table *t, struct fz *f)
{
	return t->edges ? fz_align_edge(f) : fz_align(f);
}

static size_t usable_of(const struct fa_table *t, void *p, bool shim)
{
	(void)t;
	return shim ? jpshim_malloc_usable_size(p) : jp_usable_size(p);
}

static void check_slot(const struct fa_table *t, unsigned i)
{
	const struct fa_slot *s = &t->s[i];
	size_t bad;

	if (s->p == NULL)
		return;
	bad = fz_check(s->p, s->size, s->seed);
	FZ_CHECK(bad == SIZE_MAX,
		 "slot %u: block %p of %zu bytes: byte %zu changed (0x%02x, not 0x%02x)",
		 i, (void *)s->p, s->size, bad, s->p[bad], fz_pattern(s->seed, bad));
}

/* The extent [p, p + max(usable, 1)) of slot i. */
static uintptr_t slot_end(const struct fa_slot *s)
{
	return (uintptr_t)s->p + (s->usable ? s->usable : 1);
}

static void check_no_overlap(const struct fa_table *t, unsigned self,
			     unsigned lo, unsigned n)
{
	const struct fa_slot *a = &t->s[self];

	for (unsigned j = lo; j < lo + n; j++) {
		const struct fa_slot *b = &t->s[j];

		if (j == self || b->p == NULL)
			continue;
		FZ_CHECK(slot_end(a) <= (uintptr_t)b->p || slot_end(b) <= (uintptr_t)a->p,
			 "slot %u: block %p (%zu usable) overlaps slot %u: %p (%zu usable)",
			 self, (void *)a->p, a->usable, j, (void *)b->p, b->usable);
	}
}

/* free keeps errno (POSIX.1-2024), in every mode. */
static void check_errno_kept(const char *what, const void *p, size_t size)
{
	FZ_CHECK(errno == FA_ERRNO_MARK, "%s(%p) of %zu bytes changed errno to %d",
		 what, p, size, errno);
}

void fa_release(struct fa_table *t, unsigned i)
{
	struct fa_slot *s = &t->s[i];

	if (s->p == NULL)
		return;
	check_slot(t, i);
	errno = FA_ERRNO_MARK;
	jp_free(s->p);
	check_errno_kept("free", s->p, s->size);
	s->p = NULL;
}

static int cmp_slot(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)(*(struct fa_slot *const *)a)->p;
	uintptr_t y = (uintptr_t)(*(struct fa_slot *const *)b)->p;

	return x < y ? -1 : x > y;
}

void fa_verify(struct fa_table *t, unsigned lo, unsigned n)
{
	struct fa_slot *live[FA_SLOTS];
	unsigned m = 0;

	for (unsigned i = lo; i < lo + n; i++) {
		check_slot(t, i);
		if (t->s[i].p != NULL)
			live[m++] = &t->s[i];
	}
	qsort(live, m, sizeof live[0], cmp_slot);
	for (unsigned i = 1; i < m; i++)
		FZ_CHECK(slot_end(live[i - 1]) <= (uintptr_t)live[i]->p,
			 "block %p (%zu usable) overlaps block %p",
			 (void *)live[i - 1]->p, live[i - 1]->usable, (void *)live[i]->p);
}

/*
 * The outcome of an allocation of size bytes aligned to align: p, with errno
 * err after the call.  Checks the failure rules; on success checks the block
 * and puts it into slot i (or frees it when it is too large to keep).
 * zero: the block must read as zeros (calloc).
 */
static void take(struct fa_table *t, unsigned i, const char *what, void *p,
		 int err, size_t size, size_t align, bool zero, bool shim,
		 unsigned olo, unsigned on)
{
	struct fa_slot *s = &t->s[i];
	size_t bad;

	FZ_TRACE("  %s(size %zu, align %zu) -> %p errno %d", what, size, align, p, err);
	if (p == NULL) {
		FZ_CHECK(err == ENOMEM, "%s(%zu, align %zu) failed with errno %d, not ENOMEM",
			 what, size, align, err);
		FZ_CHECK(size > FA_MUST_OK || align > FA_MUST_ALIGN,
			 "%s(%zu, align %zu) failed (ENOMEM): a request this small must succeed",
			 what, size, align);
		return;
	}
	FZ_CHECK(size <= (size_t)PTRDIFF_MAX,
		 "%s(%zu) succeeded: a size above PTRDIFF_MAX must fail", what, size);
	if (align < 16)
		align = 16;
	FZ_CHECK((uintptr_t)p % align == 0, "%s(%zu): %p is not aligned to %zu",
		 what, size, p, align);
	s->p = p;
	s->size = size;
	s->align = align;
	s->usable = usable_of(t, p, shim);
	/* the slot's own sequence: the two threads never share a counter */
	s->seed = s->seed * 2654435761u + i + 1;
	FZ_CHECK(s->usable >= size, "%s(%zu): usable size %zu is smaller", what,
		 size, s->usable);
	check_no_overlap(t, i, olo, on);
	if (zero) {
		bad = fz_check_zero(p, size);
		FZ_CHECK(bad == SIZE_MAX, "%s(%zu): byte %zu is 0x%02x, not zero", what,
			 size, bad, ((unsigned char *)p)[bad]);
	}
	fz_fill(p, size, 0, size, s->seed);
	if (size > FA_KEEP_MAX)
		fa_release(t, i);
}

/* A size for calloc and reallocarray's factors: small more often, and the
 * pairs that overflow as easily as the ones that do not. */
static void factors(const struct fa_table *t, struct fz *f, size_t *a, size_t *b)
{
	uint8_t sel = fz_u8(f);

	if (sel < 128) {
		*a = fz_count(f, SIZE_MAX);
		*b = draw_size(t, f);
	} else if (sel < 192) {
		*a = draw_size(t, f);
		*b = draw_size(t, f);
	} else {
		/* just above or below the overflow line */
		*a = (size_t)1 << (fz_u8(f) % 64);
		*b = (SIZE_MAX / *a) + (size_t)(int8_t)fz_u8(f);
	}
}

static void do_realloc(struct fa_table *t, unsigned i, struct fz *f, bool array,
		       bool shim, unsigned olo, unsigned on)
{
	struct fa_slot *s = &t->s[i];
	size_t nm = 1, sz, n, keep;
	const char *what = array ? "reallocarray" : "realloc";
	bool overflow;
	void *q;
	int err;

	if (array)
		factors(t, f, &nm, &sz);
	else
		sz = draw_size(t, f);
	overflow = __builtin_mul_overflow(nm, sz, &n);
	if (!overflow && fz_huge_skip(n))
		return;
	check_slot(t, i);
	errno = FA_ERRNO_MARK;
	if (array)
		q = shim ? jpshim_reallocarray(s->p, nm, sz) : jp_reallocarray(s->p, nm, sz);
	else
		q = shim ? jpshim_realloc(s->p, sz) : jp_realloc(s->p, sz);
	err = errno;
	FZ_TRACE("  %s(%p, %zu x %zu) -> %p errno %d", what, (void *)s->p, nm, sz, q, err);
	if (overflow) {
		FZ_CHECK(q == NULL && err == ENOMEM,
			 "%s(%p, %zu, %zu): overflow gave %p, errno %d, not NULL and ENOMEM",
			 what, (void *)s->p, nm, sz, q, err);
		check_slot(t, i);
		FZ_CHECK(s->p == NULL || usable_of(t, s->p, shim) == s->usable,
			 "%s(%p, %zu, %zu) failed but the usable size changed",
			 what, (void *)s->p, nm, sz);
		return;
	}
	if (s->p == NULL) {	/* realloc(NULL, n) is malloc(n), also for 0 */
		take(t, i, what, q, err, n, 16, false, shim, olo, on);
		return;
	}
	if (n == 0) {		/* frees, returns NULL, errno untouched */
		FZ_CHECK(q == NULL, "%s(%p, 0) returned %p, not NULL", what, (void *)s->p, q);
		FZ_CHECK(err == FA_ERRNO_MARK, "%s(%p, 0) changed errno to %d", what,
			 (void *)s->p, err);
		s->p = NULL;
		return;
	}
	if (q == NULL) {
		FZ_CHECK(err == ENOMEM, "%s(%p, %zu) failed with errno %d, not ENOMEM",
			 what, (void *)s->p, n, err);
		FZ_CHECK(n > FA_MUST_OK, "%s(%p, %zu) failed: a request this small must succeed",
			 what, (void *)s->p, n);
		check_slot(t, i);	/* the block is left intact */
		FZ_CHECK(usable_of(t, s->p, shim) == s->usable,
			 "%s(%p, %zu) failed but the usable size went from %zu to %zu",
			 what, (void *)s->p, n, s->usable, usable_of(t, s->p, shim));
		return;
	}
	FZ_CHECK(n <= (size_t)PTRDIFF_MAX, "%s(%zu) succeeded above PTRDIFF_MAX", what, n);
	FZ_CHECK((uintptr_t)q % 16 == 0, "%s(%zu): %p is not aligned to 16", what, n, q);
	keep = s->size < n ? s->size : n;
	{
		size_t bad = fz_check_prefix(q, s->size, keep, s->seed);

		FZ_CHECK(bad == SIZE_MAX,
			 "%s(%p of %zu, %zu) -> %p: byte %zu of the kept prefix changed",
			 what, (void *)s->p, s->size, n, q, bad);
	}
	s->p = q;
	s->size = n;
	s->align = 16;
	s->usable = usable_of(t, q, shim);
	FZ_CHECK(s->usable >= n, "%s(%zu): usable size %zu is smaller", what, n, s->usable);
	check_no_overlap(t, i, olo, on);
	fz_fill(q, n, 0, n, s->seed);
	if (n > FA_KEEP_MAX)
		fa_release(t, i);
}

static void do_aligned(struct fa_table *t, unsigned i, enum fa_kind k, struct fz *f,
		       bool shim, unsigned olo, unsigned on)
{
	size_t align = draw_align(t, f), size = draw_size(t, f), eff = align, sum;
	void *p = NULL;
	int err, rc;

	if (fz_huge_skip(size) || fz_huge_skip(align) ||
	    (!__builtin_add_overflow(size, align, &sum) && fz_huge_skip(sum)))
		return;
	fa_release(t, i);
	errno = 0;
	switch (k) {
	case K_ALIGNED_ALLOC:
		p = shim ? jpshim_aligned_alloc(align, size) : jp_alloc_aligned(align, size);
		err = errno;
		if (!is_pow2(align)) {
			FZ_CHECK(p == NULL && err == EINVAL,
				 "aligned_alloc(%zu, %zu): %p, errno %d, not NULL and EINVAL",
				 align, size, p, err);
			return;
		}
		take(t, i, "aligned_alloc", p, err, size, align, false, shim, olo, on);
		return;
	case K_POSIX_MEMALIGN: {
		void *const mark = (void *)(uintptr_t)0x5a5a5a50;

		p = mark;
		rc = shim ? jpshim_posix_memalign(&p, align, size)
			  : jp_posix_memalign(&p, align, size);
		if (!is_pow2(align) || align < sizeof(void *)) {
			FZ_CHECK(rc == EINVAL && p == mark,
				 "posix_memalign(%zu, %zu): %d, not EINVAL (memptr %p)",
				 align, size, rc, p);
			return;
		}
		if (rc != 0) {
			FZ_CHECK(p == mark, "posix_memalign(%zu, %zu) failed (%d) but set memptr",
				 align, size, rc);
			take(t, i, "posix_memalign", NULL, rc, size, align, false, shim, olo, on);
			return;
		}
		take(t, i, "posix_memalign", p, 0, size, align, false, shim, olo, on);
		return;
	}
	default:	/* K_MEMALIGN: the module's only */
		p = jpshim_memalign(align, size);
		err = errno;
		if (align > SIZE_MAX / 2 + 1) {
			FZ_CHECK(p == NULL && err == EINVAL,
				 "memalign(%zu, %zu): %p, errno %d, not NULL and EINVAL",
				 align, size, p, err);
			return;
		}
		/* glibc's memalign rounds any other alignment up */
		if (!is_pow2(align) && align > 16)
			eff = (size_t)1 << (64 - __builtin_clzll((unsigned long long)align));
		take(t, i, "memalign", p, err, size, eff, false, true, olo, on);
		return;
	}
}

static void do_valloc(struct fa_table *t, unsigned i, struct fz *f, unsigned olo,
		      unsigned on)
{
	bool pv = fz_u8(f) & 1;
	size_t size = draw_size(t, f), want = size, pg = page();
	void *p;
	int err;

	if (fz_huge_skip(size))
		return;
	fa_release(t, i);
	errno = 0;
	p = pv ? jpshim_pvalloc(size) : jpshim_valloc(size);
	err = errno;
	if (pv) {
		if (size > SIZE_MAX - (pg - 1)) {
			FZ_CHECK(p == NULL && err == ENOMEM,
				 "pvalloc(%zu): %p, errno %d, not NULL and ENOMEM", size, p, err);
			return;
		}
		want = (size + pg - 1) & ~(pg - 1);
		if (want == 0)
			want = pg;
	}
	take(t, i, pv ? "pvalloc" : "valloc", p, err, want, pg, false, true, olo, on);
}

static void do_free(struct fa_table *t, unsigned i, enum fa_kind k, struct fz *f,
		    bool shim)
{
	struct fa_slot *s = &t->s[i];
	uint8_t how = fz_u8(f);
	size_t sz;

	if (s->p == NULL) {
		/* free(NULL) and free_sized(NULL, n) do nothing */
		errno = FA_ERRNO_MARK;
		if (shim)
			jpshim_free(NULL);
		else
			jp_free_sized(NULL, how);
		check_errno_kept(kind_name[k], NULL, 0);
		return;
	}
	check_slot(t, i);
	errno = FA_ERRNO_MARK;
	switch (k) {
	case K_FREE_SIZED:
		/* the size asked, or any size up to the usable size (not in
		 * check mode, which holds a program to the size asked) */
		sz = how < 128 || t->check_mode ? s->size :
		     s->usable == 0 ? 0 : how % (s->usable + 1);
		if (shim)
			jpshim_free_sized(s->p, sz);
		else
			jp_free_sized(s->p, sz);
		break;
	case K_FREE_ALIGNED_SIZED:
		jpshim_free_aligned_sized(s->p, s->align, s->size);
		break;
	default:
		if (shim)
			jpshim_free(s->p);
		else
			jp_free(s->p);
		break;
	}
	check_errno_kept(kind_name[k], s->p, s->size);
	s->p = NULL;
}

void fa_op(struct fa_table *t, struct fz *f, unsigned lo, unsigned n,
	   unsigned olo, unsigned on)
{
	uint8_t op = fz_u8(f);
	enum fa_kind k = kinds[op % sizeof kinds];
	bool shim = op & 0x80;
	unsigned i = lo + fz_u8(f) % n;
	struct fa_slot *s = &t->s[i];
	size_t a, b, n_bytes;
	void *p;
	int err;

	FZ_TRACE("%s %s slot %u (%p, %zu bytes)", shim ? "shim" : "jp", kind_name[k], i,
		 (void *)s->p, s->p ? s->size : 0);
	switch (k) {
	case K_MALLOC:
	case K_MALLOC_SMALL:
		a = k == K_MALLOC ? draw_size(t, f) : fz_u8(f) * (size_t)(fz_u8(f) % 8 + 1);
		if (fz_huge_skip(a))
			break;
		fa_release(t, i);
		errno = 0;
		p = shim ? jpshim_malloc(a) : jp_alloc(a);
		err = errno;
		if (p != NULL && !t->check_mode)
			FZ_CHECK(jp_usable_size(p) == jp_good_size(a),
				 "malloc(%zu): usable size %zu, but jp_good_size says %zu",
				 a, jp_usable_size(p), jp_good_size(a));
		take(t, i, "malloc", p, err, a, 16, false, shim, olo, on);
		break;
	case K_CALLOC:
		factors(t, f, &a, &b);
		if (!__builtin_mul_overflow(a, b, &n_bytes) && fz_huge_skip(n_bytes))
			break;
		fa_release(t, i);
		errno = 0;
		p = shim ? jpshim_calloc(a, b) : jp_calloc(a, b);
		err = errno;
		if (__builtin_mul_overflow(a, b, &n_bytes)) {
			FZ_CHECK(p == NULL && err == ENOMEM,
				 "calloc(%zu, %zu) overflows: %p, errno %d, not NULL and ENOMEM",
				 a, b, p, err);
			break;
		}
		take(t, i, "calloc", p, err, n_bytes, 16, true, shim, olo, on);
		break;
	case K_REALLOC:
	case K_REALLOCARRAY:
		do_realloc(t, i, f, k == K_REALLOCARRAY, shim, olo, on);
		break;
	case K_FREE:
	case K_FREE_SIZED:
	case K_FREE_ALIGNED_SIZED:
		do_free(t, i, k, f, shim);
		break;
	case K_ALIGNED_ALLOC:
	case K_POSIX_MEMALIGN:
	case K_MEMALIGN:
		do_aligned(t, i, k, f, shim, olo, on);
		break;
	case K_USABLE:
		if (s->p == NULL) {
			FZ_CHECK(usable_of(t, NULL, true) == 0 && jp_usable_size(NULL) == 0,
				 "malloc_usable_size(NULL) is not 0");
			break;
		}
		a = usable_of(t, s->p, shim);
		FZ_CHECK(a == s->usable, "slot %u: usable size of %p went from %zu to %zu",
			 i, (void *)s->p, s->usable, a);
		/* A program may use every byte the allocator says it has (not
		 * in check mode, where that is the overflow it catches). */
		if (!t->check_mode && (fz_u8(f) & 1) && a <= FA_KEEP_MAX) {
			check_slot(t, i);
			s->size = a;
			fz_fill(s->p, a, 0, a, s->seed);
		}
		break;
	case K_TRIM:
		if (shim) {
			int r = jpshim_malloc_trim(fz_u8(f));

			FZ_CHECK(r == 0 || r == 1, "malloc_trim returned %d", r);
		} else {
			(void)jp_alloc_trim();
		}
		fa_verify(t, lo, n);
		break;
	case K_VALLOC:
		do_valloc(t, i, f, olo, on);
		break;
	case K_FLUSH:
		jp_thread_flush();
		break;
	default:	/* K_VERIFY */
		fa_verify(t, lo, n);
		break;
	}
}
