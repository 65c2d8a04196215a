/*
 * fuzz-diff.c - jp_alloc against glibc's malloc, call by call.
 *
 * The same sequence of malloc, calloc, realloc, reallocarray, free,
 * aligned_alloc, posix_memalign, memalign, valloc, pvalloc,
 * malloc_usable_size and malloc_trim calls runs on two tables of slots:
 * one through glibc's allocator (__libc_malloc and its family where glibc
 * exports them, the plain names for the rest: this target is built without
 * AddressSanitizer, so they are glibc's), one through the preload module's
 * functions (preload-renamed.h), which is what a program under jpsync-run
 * calls.  For every call whose outcome the arguments decide, the two must
 * agree on the
 * class of the result (NULL or not; posix_memalign's return value) and,
 * when both fail, on errno, as the README promises ("It behaves as glibc's
 * malloc where the two could differ").  Where the outcome depends on
 * memory (a request above 64 MiB, or an alignment above 64 MiB, up to
 * PTRDIFF_MAX) either may fail, but only with ENOMEM.  Both sides' blocks
 * are filled and checked as in alloc-model.h.
 *
 * One choice differs from glibc 2.36 on purpose (jp_alloc(3), README):
 * aligned_alloc with an alignment that is not a power of two fails with
 * EINVAL, as C17 and glibc 2.38 do, where glibc 2.36 rounds it up; the
 * target checks the module's EINVAL there instead of comparing.
 */
#include "config.h"

#include "fuzz.h"
#include "preload-renamed.h"
#include "testutil.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's own entry points (exported by glibc 2.36, undeclared). */
void *__libc_malloc(size_t size);
void __libc_free(void *ptr);
void *__libc_calloc(size_t nmemb, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);

/* Called through a pointer: <stdlib.h> declares aligned_alloc with
 * alloc_align, so that clang's UBSan would take aligned_alloc(0, n), which
 * the target makes on purpose, for undefined behaviour of its own. */
static void *(*const volatile glibc_aligned_alloc)(size_t, size_t) = aligned_alloc;

#define MAX_OPS 4096
#define SLOTS 32
#define DETERMINED_MAX ((size_t)64 << 20)
#define KEEP_MAX ((size_t)1 << 30)
#define ERRNO_MARK EDOM

struct side {
	unsigned char *p;
	size_t size;
	uint32_t seed;
};

static struct side gs[SLOTS], js[SLOTS];	/* glibc, jpsync */
static uint32_t gen;

/* Call glibc's, then jpsync's, each from errno = 0; g, ge, j, je are the
 * results and errno after each. */
#define BOTH(gcall, jcall) do {						\
	errno = 0; g = (gcall); ge = errno;				\
	errno = 0; j = (jcall); je = errno;				\
} while (0)

enum dk { D_OK, D_FAIL, D_EITHER };

/* Whether the arguments decide the outcome: success, failure, or up to the
 * memory there is. */
static enum dk decided(size_t size, size_t align)
{
	if (size > (size_t)PTRDIFF_MAX)
		return D_FAIL;
	if (size <= DETERMINED_MAX && align <= DETERMINED_MAX)
		return D_OK;
	return D_EITHER;
}

static bool is_pow2(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static void check_side(const struct side *s, const char *who, unsigned i)
{
	size_t bad;

	if (s->p == NULL)
		return;
	bad = fz_check(s->p, s->size, s->seed);
	FZ_CHECK(bad == SIZE_MAX, "%s slot %u: block %p of %zu bytes: byte %zu changed",
		 who, i, (void *)s->p, s->size, bad);
}

static void gfree(struct side *s)
{
	__libc_free(s->p);
	s->p = NULL;
}

static void jfree(struct side *s)
{
	jpshim_free(s->p);
	s->p = NULL;
}

static void release(unsigned i)
{
	check_side(&gs[i], "glibc", i);
	check_side(&js[i], "jpsync", i);
	gfree(&gs[i]);
	jfree(&js[i]);
}

/* Put a new block (or none) into a side's slot; fill it. */
static void put(struct side *s, void *p, size_t size, uint32_t seed)
{
	s->p = p;
	s->size = size;
	s->seed = seed;
	if (p != NULL)
		fz_fill(p, size, 0, size, seed);
}

/*
 * Compare the outcome of one call on both sides: g and j the results,
 * ge and je errno after them.  d says what the arguments decide.  A block
 * too large to keep, and a pair where only one side succeeded, are freed
 * so that the tables stay alike.
 */
static void compare(unsigned i, const char *what, size_t size, size_t align,
		    void *g, int ge, void *j, int je, enum dk d, bool errno_too)
{
	uint32_t seed = ++gen * 2654435761u + i;

	FZ_TRACE("%s(%zu, align %zu): glibc %p errno %d, jpsync %p errno %d", what,
		 size, align, g, ge, j, je);
	if (d == D_OK)
		FZ_CHECK(g != NULL && j != NULL,
			 "%s(%zu, align %zu): glibc gave %p (errno %d), jpsync %p (errno %d)",
			 what, size, align, g, ge, j, je);
	if (d == D_FAIL)
		FZ_CHECK(g == NULL && j == NULL,
			 "%s(%zu, align %zu): glibc gave %p (errno %d), jpsync %p (errno %d)",
			 what, size, align, g, ge, j, je);
	if (j == NULL)
		FZ_CHECK(je == ENOMEM || (g == NULL && je == ge),
			 "%s(%zu, align %zu): jpsync failed with errno %d (glibc: %p, errno %d)",
			 what, size, align, je, g, ge);
	if (g == NULL && j == NULL && errno_too)
		FZ_CHECK(ge == je, "%s(%zu, align %zu): both fail, errno %d (glibc) and %d (jpsync)",
			 what, size, align, ge, je);
	if (j != NULL) {
		FZ_CHECK((uintptr_t)j % (align > 16 ? align : 16) == 0,
			 "%s(%zu, align %zu): jpsync's %p is not aligned", what, size, align, j);
		FZ_CHECK(jpshim_malloc_usable_size(j) >= size,
			 "%s(%zu): jpsync's usable size %zu", what, size,
			 jpshim_malloc_usable_size(j));
	}
	if (g != NULL)
		FZ_CHECK(malloc_usable_size(g) >= size, "%s(%zu): glibc's usable size %zu",
			 what, size, malloc_usable_size(g));
	put(&gs[i], g, size, seed);
	put(&js[i], j, size, seed);
	if ((g == NULL) != (j == NULL) || size > KEEP_MAX)
		release(i);
}

/* calloc and reallocarray's factors (as alloc-model.c). */
static void factors(struct fz *f, size_t *a, size_t *b)
{
	uint8_t sel = fz_u8(f);

	if (sel < 128) {
		*a = fz_count(f, SIZE_MAX);
		*b = fz_size(f);
	} else if (sel < 192) {
		*a = fz_size(f);
		*b = fz_size(f);
	} else {
		*a = (size_t)1 << (fz_u8(f) % (8 * sizeof(size_t)));
		*b = (SIZE_MAX / *a) + (size_t)(int8_t)fz_u8(f);
	}
}

static void op_realloc(unsigned i, struct fz *f, bool array)
{
	size_t nm = 1, sz, n;
	bool over;
	void *g, *j;
	int ge, je;
	const char *what = array ? "reallocarray" : "realloc";

	if (array)
		factors(f, &nm, &sz);
	else
		sz = fz_size(f);
	over = __builtin_mul_overflow(nm, sz, &n);
	check_side(&gs[i], "glibc", i);
	check_side(&js[i], "jpsync", i);
	errno = ERRNO_MARK;
	g = array ? reallocarray(gs[i].p, nm, sz) : __libc_realloc(gs[i].p, sz);
	ge = errno;
	errno = ERRNO_MARK;
	j = array ? jpshim_reallocarray(js[i].p, nm, sz) : jpshim_realloc(js[i].p, sz);
	je = errno;
	FZ_TRACE("%s(%p/%p, %zu x %zu): glibc %p errno %d, jpsync %p errno %d", what,
		 (void *)gs[i].p, (void *)js[i].p, nm, sz, g, ge, j, je);
	if (over) {
		FZ_CHECK(g == NULL && j == NULL && ge == je,
			 "%s(%zu x %zu) overflows: glibc %p errno %d, jpsync %p errno %d",
			 what, nm, sz, g, ge, j, je);
		return;
	}
	if (gs[i].p != NULL && n == 0) {
		/* frees, returns NULL, errno untouched: on both */
		FZ_CHECK(g == NULL && j == NULL && ge == je,
			 "%s(p, 0): glibc %p errno %d, jpsync %p errno %d", what, g, ge, j, je);
		gs[i].p = js[i].p = NULL;
		return;
	}
	if (g == NULL && gs[i].p != NULL) {
		/* the old blocks stay: compare, then keep them */
		enum dk d = decided(n, 0);

		FZ_CHECK(d != D_OK && (j == NULL || d == D_EITHER),
			 "%s(%zu): glibc failed (errno %d), jpsync gave %p", what, n, ge, j);
		if (j == NULL) {
			FZ_CHECK(ge == je, "%s(%zu): errno %d (glibc), %d (jpsync)", what, n, ge, je);
			check_side(&gs[i], "glibc", i);
			check_side(&js[i], "jpsync", i);
			return;
		}
		js[i].p = j;	/* jpsync moved it: drop both */
		release(i);
		return;
	}
	if (j == NULL && js[i].p != NULL) {
		FZ_CHECK(decided(n, 0) == D_EITHER && je == ENOMEM,
			 "%s(%zu): jpsync failed (errno %d), glibc gave %p", what, n, je, g);
		gs[i].p = g;
		release(i);
		return;
	}
	/* Both moved or kept the blocks (or both came from NULL): the common
	 * prefix was kept on each side. */
	if (gs[i].p != NULL) {
		size_t keep = gs[i].size < n ? gs[i].size : n;

		FZ_CHECK(fz_check_prefix(g, gs[i].size, keep, gs[i].seed) == SIZE_MAX,
			 "glibc %s lost the prefix", what);
		FZ_CHECK(fz_check_prefix(j, js[i].size, keep, js[i].seed) == SIZE_MAX,
			 "jpsync %s(%zu -> %zu) lost the prefix", what, js[i].size, n);
		gs[i].p = js[i].p = NULL;
	}
	compare(i, what, n, 0, g, ge, j, je, decided(n, 0), true);
}

static void op_aligned(unsigned i, struct fz *f, unsigned which)
{
	size_t align = fz_align(f), size = fz_size(f), eff = align;
	void *g = NULL, *j = NULL;
	int ge, je, gr, jr;
	enum dk d;

	release(i);
	switch (which) {
	case 0:		/* aligned_alloc */
		BOTH(glibc_aligned_alloc(align, size),
		     jpshim_aligned_alloc(align, size));
		if (!is_pow2(align)) {
			/* jp_alloc(3): EINVAL, where glibc 2.36 rounds up */
			FZ_CHECK(j == NULL && je == EINVAL,
				 "aligned_alloc(%zu, %zu): jpsync %p errno %d, not EINVAL",
				 align, size, j, je);
			__libc_free(g);
			return;
		}
		if (align > SIZE_MAX / 2 + 1)
			d = D_FAIL;
		else
			d = decided(size, align);
		compare(i, "aligned_alloc", size, is_pow2(align) ? align : 16, g, ge, j, je,
			d, true);
		return;
	case 1: {	/* posix_memalign */
		void *const mark = (void *)(uintptr_t)0x5a5a5a50;
		bool bad = !is_pow2(align) || align < sizeof(void *);

		g = j = mark;
		errno = ERRNO_MARK;
		gr = posix_memalign(&g, align, size);
		ge = errno;
		errno = ERRNO_MARK;
		jr = jpshim_posix_memalign(&j, align, size);
		je = errno;
		FZ_TRACE("posix_memalign(%zu, %zu): glibc %d %p errno %d, jpsync %d %p errno %d",
			 align, size, gr, g, ge, jr, j, je);
		FZ_CHECK((gr == 0) == (g != mark) && (jr == 0) == (j != mark),
			 "posix_memalign changed memptr on failure, or not on success");
		d = bad ? D_FAIL : decided(size, align);
		if (d != D_EITHER)
			FZ_CHECK(gr == jr, "posix_memalign(%zu, %zu): %d (glibc), %d (jpsync)",
				 align, size, gr, jr);
		FZ_CHECK(jr == 0 || jr == ENOMEM || (jr == EINVAL && bad),
			 "posix_memalign(%zu, %zu): jpsync returned %d", align, size, jr);
		if (gr != 0 && jr != 0)
			FZ_CHECK(ge == je, "posix_memalign(%zu, %zu) fails (%d): errno %d (glibc), "
				 "%d (jpsync)", align, size, gr, ge, je);
		compare(i, "posix_memalign", size, bad ? 16 : align, gr ? NULL : g, ENOMEM,
			jr ? NULL : j, ENOMEM, d, false);
		return;
	}
	default:	/* memalign */
		BOTH(__libc_memalign(align, size),
		     jpshim_memalign(align, size));
		if (align > SIZE_MAX / 2 + 1) {
			d = D_FAIL;
			eff = 16;
		} else {
			if (!is_pow2(align) && align > 16)
				eff = (size_t)1 << (64 - __builtin_clzll((unsigned long long)align));
			d = decided(size, eff);
		}
		compare(i, "memalign", size, eff, g, ge, j, je, d, true);
		return;
	}
}

static void op_valloc(unsigned i, struct fz *f)
{
	bool pv = fz_u8(f) & 1;
	size_t size = fz_size(f), pg = (size_t)getpagesize(), want = size;
	void *g, *j;
	int ge, je;

	release(i);
	BOTH(pv ? __libc_pvalloc(size) : __libc_valloc(size),
	     pv ? jpshim_pvalloc(size) : jpshim_valloc(size));
	if (pv) {
		if (size > SIZE_MAX - (pg - 1)) {
			FZ_CHECK(g == NULL && j == NULL && ge == je,
				 "pvalloc(%zu): glibc %p errno %d, jpsync %p errno %d",
				 size, g, ge, j, je);
			return;
		}
		want = (size + pg - 1) & ~(pg - 1);
		if (want == 0)
			want = pg;
	}
	/* glibc 2.36's pvalloc does not round up to a page (it masks with
	 * -(pagesize - 1): pvalloc(0) is 1 byte, pvalloc(4096) 4097): hold
	 * it to the size asked only, the module to the whole pages. */
	if (j != NULL)
		FZ_CHECK(jpshim_malloc_usable_size(j) >= want,
			 "%s(%zu): jpsync's usable size %zu, below %zu", pv ? "pvalloc" : "valloc",
			 size, jpshim_malloc_usable_size(j), want);
	compare(i, pv ? "pvalloc" : "valloc", size, pg, g, ge, j, je,
		size > (size_t)PTRDIFF_MAX ? D_FAIL : decided(want, pg), true);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_target = "diff";
	if (jp_test_sanitized() || jp_test_on_valgrind()) {
		/* Their malloc stands in for glibc's: nothing to compare with. */
		printf("replay: diff: skipped: %s replaces glibc's malloc\n",
		       jp_test_sanitized() ? "the sanitizer" : "valgrind");
		return 77;
	}
	unsetenv("JPSYNC_CHECK");
	/* A fixed mmap threshold: glibc's dynamic one would serve the large
	 * requests from the heap after the first free of one, and calloc
	 * would clear megabytes on every call (a tenth of the fuzzer's
	 * speed).  What the two allocators answer is the same either way. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f;

	fz_init(&f, data, size);
	for (unsigned n = 0; !fz_done(&f) && n < MAX_OPS; n++) {
		uint8_t op = fz_u8(&f);
		unsigned i = fz_u8(&f) % SLOTS;
		size_t a, b, bytes;
		void *g, *j;
		int ge, je;

		switch (op % 12) {
		case 0:
			a = fz_size(&f);
			release(i);
			BOTH(__libc_malloc(a),
			     jpshim_malloc(a));
			compare(i, "malloc", a, 0, g, ge, j, je, decided(a, 0), true);
			break;
		case 1:
			factors(&f, &a, &b);
			release(i);
			BOTH(__libc_calloc(a, b),
			     jpshim_calloc(a, b));
			if (__builtin_mul_overflow(a, b, &bytes)) {
				FZ_CHECK(g == NULL && j == NULL && ge == je,
					 "calloc(%zu, %zu) overflows: glibc %p errno %d, jpsync %p errno %d",
					 a, b, g, ge, j, je);
				break;
			}
			if (j != NULL)
				FZ_CHECK(fz_check_zero(j, bytes) == SIZE_MAX,
					 "jpsync calloc(%zu, %zu) not zero", a, b);
			compare(i, "calloc", bytes, 0, g, ge, j, je, decided(bytes, 0), true);
			break;
		case 2:
			op_realloc(i, &f, false);
			break;
		case 3:
			op_realloc(i, &f, true);
			break;
		case 4: case 5:
			release(i);
			break;
		case 6: case 7: case 8:
			op_aligned(i, &f, op % 12 - 6);
			break;
		case 9:
			op_valloc(i, &f);
			break;
		case 10:
			if (gs[i].p != NULL)
				FZ_CHECK(malloc_usable_size(gs[i].p) >= gs[i].size &&
					 jpshim_malloc_usable_size(js[i].p) >= js[i].size,
					 "malloc_usable_size below the size asked");
			FZ_CHECK(malloc_usable_size(NULL) == 0 &&
				 jpshim_malloc_usable_size(NULL) == 0,
				 "malloc_usable_size(NULL) is not 0");
			break;
		default: {
			size_t pad = fz_u8(&f);
			int gr = malloc_trim(pad), jr = jpshim_malloc_trim(pad);

			/* what each gives back is its own business */
			FZ_CHECK((gr == 0 || gr == 1) && (jr == 0 || jr == 1),
				 "malloc_trim: %d (glibc), %d (jpsync)", gr, jr);
			break;
		}
		}
	}
	for (unsigned i = 0; i < SLOTS; i++)
		release(i);
	return 0;
}
