/*
 * alloc-edges.c - every allocation entry point at the edge of size_t, free
 * and errno, and check mode at the process's map-count limit.
 *
 * Built twice from this one file, so that the library and the preload
 * module answer the same questions:
 *   tests/alloc/alloc-edges   EDGES_JP: the jp_* functions, linked to
 *                             libjpsync; run by test-alloc-env in environments
 *                             of its own (default, JPSYNC_CHECK=1, the cache
 *                             and magazine variables at their limits)
 *   tests/shim/preload-edges  the C names (malloc ... pvalloc), not linked
 *                             to libjpsync; run under the module by
 *                             tests/shim/test-preload-edges.sh
 *
 *   MODE walk        every size n from SIZE_MAX - 65536 to SIZE_MAX, stride
 *                    1 (each failing call is a few compares, or a canary
 *                    check of the old block in check mode, so 65537 per
 *                    entry point take well under a second), through every
 *                    entry point: malloc, calloc (n,1) (1,n) (n,2) (2,n)
 *                    (n,n), realloc and reallocarray of an old block of
 *                    every size class and of a huge one, the aligned ones
 *                    at alignments from 8 to 1 GiB, posix_memalign (ENOMEM,
 *                    and EINVAL first for a bad alignment), and in the
 *                    preload build memalign, valloc, pvalloc, aligned_alloc.
 *                    Each must return NULL with errno ENOMEM (EINVAL
 *                    where the alignment is bad), and leave the old blocks'
 *                    bytes as they were; then every old block is checked
 *                    whole and freed.
 *   MODE free-errno  free of a block of every class, of huge ones (cached,
 *                    unmapped, check mode's quarantine and its eviction)
 *                    keeps errno.
 *   MODE map-limit   the process is driven to its map-count limit (single
 *                    pages mapped, alternately PROT_READ and PROT_NONE so
 *                    that they do not merge, until mmap fails); there,
 *                    free of huge blocks keeps errno (check mode's
 *                    quarantine cannot map PROT_NONE over them), every
 *                    allocation either works or fails with ENOMEM and
 *                    leaves the old block intact; then a few pages are
 *                    given back and everything must work again, and in
 *                    check mode no freed huge block's address is handed
 *                    out again while it is quarantined.
 * Exit status 0: all passed; 1: a failure (each printed, "FAIL: ...");
 * 77: the map-count limit is too high to reach here (printed).
 */
#include "config.h"
/* The sizes near SIZE_MAX are the point: GCC warns of each. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef EDGES_JP
#include <jpsync/alloc.h>
#define MALLOC(n)		jp_alloc(n)
#define CALLOC(a, b)		jp_calloc(a, b)
#define REALLOC(p, n)		jp_realloc(p, n)
#define REALLOCARRAY(p, a, b)	jp_reallocarray(p, a, b)
#define ALIGNED(a, n)		jp_alloc_aligned(a, n)
#define POSIX_MEMALIGN(m, a, n)	jp_posix_memalign(m, a, n)
#define FREE(p)			jp_free(p)
#define API			"jp_"
static size_t good_size(size_t n)
{
	return jp_good_size(n);
}
#else
#include <dlfcn.h>
#include <malloc.h>
#define MALLOC(n)		malloc(n)
#define CALLOC(a, b)		calloc(a, b)
#define REALLOC(p, n)		realloc(p, n)
#define REALLOCARRAY(p, a, b)	reallocarray(p, a, b)
#define ALIGNED(a, n)		aligned_alloc(a, n)
#define POSIX_MEMALIGN(m, a, n)	posix_memalign(m, a, n)
#define FREE(p)			free(p)
#define API			""
/* The class sizes are the library's: found with dlsym, as the module has
 * loaded libjpsync.so.1 (this program is not linked to it). */
static size_t good_size(size_t n)
{
	static size_t (*fn)(size_t);

	if (fn == NULL)
		*(void **)&fn = dlsym(RTLD_DEFAULT, "jp_good_size");
	if (fn == NULL) {
		printf("FAIL: jp_good_size not found: not run under the module?\n");
		exit(1);
	}
	return fn(n);
}
#endif

#define EDGE_SPAN	((size_t)65536)
#define SENTINEL	4242	/* an errno value no call sets */

static int fails;
static bool check_mode;

static void fail(const char *what, size_t n, const void *r, int err)
{
	if (fails++ < 30)
		printf("FAIL: %s%s, size %#zx: returned %p, errno %d (%s)\n",
		       API, what, n, r, err, strerror(err));
}

/* The call must fail with ENOMEM; a block it returns anyway is lost. */
#define NOMEM(what, n, call) do {					\
	void *r_;							\
	errno = 0;							\
	r_ = (call);							\
	if (r_ != NULL || errno != ENOMEM)				\
		fail(what, n, r_, errno);				\
} while (0)

/* ---- old blocks ----------------------------------------------------------- */

struct old {
	unsigned char *p;
	size_t n;
	unsigned char v;
};
static struct old olds[128];
static unsigned nolds;

static void old_add(size_t n)
{
	struct old *o = &olds[nolds];

	o->p = MALLOC(n);
	if (o->p == NULL) {
		printf("FAIL: %smalloc(%zu) for an old block: %s\n", API, n, strerror(errno));
		exit(1);
	}
	o->n = n;
	o->v = (unsigned char)(nolds * 37 + 1);
	if (o->v == 0)
		o->v = 0x77;
	memset(o->p, o->v, n);
	nolds++;
}

/*
 * A block of every size class and a huge one.  The class sizes are walked
 * with jp_good_size; in check mode a block of class c holds c - 40 bytes
 * (a 32-byte header and canary before, 8 bytes of canary after, check.c),
 * so that the request lands in class c itself.
 */
static void olds_make(void)
{
	for (size_t s = 1; s <= ((size_t)256 << 10); s = good_size(s) + 1) {
		size_t c = good_size(s);

		if (check_mode && c <= 48)
			continue;
		old_add(check_mode ? c - 40 : c);
	}
	if (check_mode)
		old_add(8);
	old_add(((size_t)1 << 20) + 100);	/* huge */
}

/* The ends only: cheap enough for every call. */
static bool old_ends_ok(const struct old *o)
{
	return o->p[0] == o->v && o->p[o->n - 1] == o->v;
}

static bool old_whole_ok(const struct old *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->p[i] != o->v)
			return false;
	return true;
}

static void olds_check_and_free(void)
{
	for (unsigned i = 0; i < nolds; i++) {
		if (!old_whole_ok(&olds[i])) {
			printf("FAIL: the old block of %zu bytes changed\n", olds[i].n);
			fails++;
		}
		errno = SENTINEL;
		FREE(olds[i].p);
		if (errno != SENTINEL)
			fail("free (errno changed) of an old block", olds[i].n, NULL, errno);
	}
	nolds = 0;
}

/* ---- walk ----------------------------------------------------------------- */

static const size_t aligns[] = {
	8, 16, 32, 64, 256, 4096, 65536, (size_t)1 << 21, (size_t)1 << 30,
};

static void walk_one(size_t n)
{
	void *q;
	int rc;

	NOMEM("malloc", n, MALLOC(n));
	NOMEM("calloc(1, n)", n, CALLOC(1, n));
	NOMEM("calloc(n, 1)", n, CALLOC(n, 1));
	NOMEM("calloc(n, 2)", n, CALLOC(n, 2));
	NOMEM("calloc(2, n)", n, CALLOC(2, n));
	NOMEM("calloc(n, n)", n, CALLOC(n, n));
	for (unsigned a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
		NOMEM("aligned", n, ALIGNED(aligns[a], n));
		q = &q;
		rc = POSIX_MEMALIGN(&q, aligns[a], n);
		if (rc != ENOMEM || q != &q)
			fail("posix_memalign (not ENOMEM, or *memptr set)", n, q, rc);
#ifndef EDGES_JP
		NOMEM("memalign", n, memalign(aligns[a], n));
#endif
	}
	/* A bad alignment is EINVAL, whatever the size. */
	for (size_t bad = 0; bad < 25; bad += 3) {
		if (bad != 0 && (bad & (bad - 1)) == 0 && bad >= sizeof(void *))
			continue;
		q = &q;
		rc = POSIX_MEMALIGN(&q, bad, n);
		if (rc != EINVAL || q != &q)
			fail("posix_memalign with a bad alignment (not EINVAL)", n, q, rc);
	}
	errno = 0;
	q = ALIGNED(3, n);
	if (q != NULL || errno != EINVAL)
		fail("aligned with alignment 3 (not EINVAL)", n, q, errno);
#ifndef EDGES_JP
	NOMEM("valloc", n, valloc(n));
	NOMEM("pvalloc", n, pvalloc(n));
#endif
	for (unsigned i = 0; i < nolds; i++) {
		struct old *o = &olds[i];

		NOMEM("realloc", n, REALLOC(o->p, n));
		NOMEM("reallocarray(p, 1, n)", n, REALLOCARRAY(o->p, 1, n));
		NOMEM("reallocarray(p, n, 1)", n, REALLOCARRAY(o->p, n, 1));
		NOMEM("reallocarray(p, n, 2)", n, REALLOCARRAY(o->p, n, 2));
		NOMEM("reallocarray(p, 2, n)", n, REALLOCARRAY(o->p, 2, n));
		if (!old_ends_ok(o)) {
			fail("realloc failed but changed the old block", n, o->p, 0);
			o->v = o->p[0];		/* one report per block */
			memset(o->p, o->v, o->n);
		}
	}
}

static int walk(void)
{
	unsigned n;

	olds_make();
	n = nolds;
	for (size_t k = 0; k <= EDGE_SPAN; k++)
		walk_one(SIZE_MAX - EDGE_SPAN + k);
	olds_check_and_free();
	printf("walk: %zu sizes through every entry point, %u old blocks: %d failures\n",
	       EDGE_SPAN + 1, n, fails);
	return fails != 0;
}

/* ---- free and errno ----------------------------------------------------- */

static void free_keeps_errno(void *p, const char *what, size_t n)
{
	errno = SENTINEL;
	FREE(p);
	if (errno != SENTINEL)
		fail(what, n, p, errno);
}

static int free_errno(void)
{
	static void *many[4096];

	free_keeps_errno(NULL, "free(NULL) changed errno", 0);
	for (size_t s = 1; s <= ((size_t)256 << 10); s = good_size(s) + 1)
		free_keeps_errno(MALLOC(s), "free changed errno", s);
	/* Enough of one class to overflow the thread's cache into the shared
	 * lists and give spans back. */
	for (unsigned i = 0; i < 4096; i++)
		many[i] = MALLOC(100);
	for (unsigned i = 0; i < 4096; i++)
		free_keeps_errno(many[i], "free changed errno (many)", 100);
	/* Huge: cached, over the cache's limit (unmapped), aligned above 4 MiB
	 * (never cached), and in check mode more than its quarantine holds
	 * (64), so that the oldest are unmapped. */
	free_keeps_errno(MALLOC((size_t)1 << 20), "free changed errno (huge)", 1 << 20);
	free_keeps_errno(MALLOC((size_t)100 << 20), "free changed errno (huge)", 100 << 20);
	free_keeps_errno(ALIGNED((size_t)8 << 20, 1 << 20), "free changed errno (aligned huge)",
			 1 << 20);
	for (unsigned i = 0; i < 80; i++)
		free_keeps_errno(MALLOC(((size_t)300 << 10) + i * 4096),
				 "free changed errno (huge, many)", 300 << 10);
	printf("free-errno: %d failures\n", fails);
	return fails != 0;
}

/* ---- the map-count limit -------------------------------------------------- */

static void **fill;
static size_t nfill;

/* Map single pages until mmap fails: then the process is past its limit
 * (mmap refuses once the count exceeds vm.max_map_count), and so is any
 * mapping or split the allocator tries. */
static bool fill_to_limit(size_t max)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	fill = mmap(NULL, (max + 16) * sizeof *fill, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fill == MAP_FAILED)
		return false;
	for (nfill = 0; nfill < max + 16; nfill++) {
		/* Alternate protections: neighbours that differ do not merge. */
		void *p = mmap(NULL, page, nfill & 1 ? PROT_READ : PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			return errno == ENOMEM;
		fill[nfill] = p;
	}
	return false;
}

static void fill_release(size_t k)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	while (k-- > 0 && nfill > 0)
		munmap(fill[--nfill], page);
}

/* A block that works or NULL with ENOMEM; freed again. */
static void works_or_nomem(const char *what, void *p, size_t n, int err)
{
	if (p == NULL) {
		if (err != ENOMEM)
			fail(what, n, p, err);
		return;
	}
	memset(p, 0x3c, n);
	free_keeps_errno(p, "free changed errno (at the limit)", n);
}

static int map_limit(void)
{
	enum { NH = 6 };
	unsigned char *h[NH];
	size_t hn = ((size_t)1 << 20) + 100, max = 0;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");

	/* tests/target-exec.sh names the emulator to the emulated program. */
	const char *emu = getenv("JP_TEST_EMULATOR");

	if (emu != NULL && emu[0] != '\0') {
		/* qemu-user: the host's map-count limit is not the guest's. */
		printf("map-limit: under an emulator (%s): not run\n", emu);
		if (f != NULL)
			fclose(f);
		return 77;
	}
	if (f == NULL || fscanf(f, "%zu", &max) != 1 || max > 1000000) {
		printf("map-limit: vm.max_map_count unreadable or above 1000000 (%zu): not run\n",
		       max);
		return 77;
	}
	fclose(f);
	olds_make();
	for (unsigned i = 0; i < NH; i++) {
		h[i] = MALLOC(hn);
		if (h[i] == NULL) {
			printf("FAIL: malloc(%zu) before the limit\n", hn);
			return 1;
		}
		memset(h[i], 0x5a, hn);
	}
	if (!fill_to_limit(max)) {
		printf("map-limit: could not reach the map-count limit (%zu pages mapped): not run\n",
		       nfill);
		return 77;
	}
	/* At the limit: check mode's quarantine of h[0] and h[1] cannot map
	 * over them. */
	free_keeps_errno(h[0], "free changed errno (huge, at the limit)", hn);
	free_keeps_errno(h[1], "free changed errno (huge, at the limit)", hn);
	/* Everything else works or fails cleanly, leaving the old blocks. */
	for (unsigned i = 0; i < nolds; i++) {
		struct old *o = &olds[i];
		void *q;

		errno = 0;
		q = REALLOC(o->p, o->n * 2 + 4096);
		if (q == NULL) {
			if (errno != ENOMEM)
				fail("realloc at the limit (not ENOMEM)", o->n, q, errno);
		} else {
			o->p = q;
		}
		if (!old_ends_ok(o))
			fail("realloc at the limit lost the old bytes", o->n, o->p, 0);
	}
	for (size_t n = 16; n <= ((size_t)8 << 20); n *= 4) {
		void *p;
		int err;

		errno = 0;
		p = MALLOC(n);
		err = errno;
		works_or_nomem("malloc at the limit", p, n, err);
		errno = 0;
		p = CALLOC(1, n);
		err = errno;
		works_or_nomem("calloc at the limit", p, n, err);
		errno = 0;
		p = ALIGNED(8192, n);
		err = errno;
		works_or_nomem("aligned at the limit", p, n, err);
	}
	/* A few mappings back: everything works again. */
	fill_release(64);
	free_keeps_errno(h[2], "free changed errno (huge, after the limit)", hn);
	for (unsigned i = 0; i < 4; i++) {
		unsigned char *p = MALLOC(hn);

		if (p == NULL) {
			fail("malloc after the limit", hn, p, errno);
			continue;
		}
		/* Check mode: a quarantined block's addresses are not reused. */
		if (check_mode && (p == h[0] || p == h[1] || p == h[2]))
			fail("malloc handed out a quarantined block", hn, p, 0);
		memset(p, 1, hn);
		free_keeps_errno(p, "free changed errno (huge, after the limit)", hn);
	}
	for (unsigned i = 3; i < NH; i++)
		free_keeps_errno(h[i], "free changed errno (huge)", hn);
	olds_check_and_free();
	fill_release(nfill);
	printf("map-limit: %zu pages mapped to reach the limit: %d failures\n",
	       max, fails);
	return fails != 0;
}

int main(int argc, char **argv)
{
	const char *c = getenv("JPSYNC_CHECK");

	/* jpsync-run --check and the tests set it to 1. */
	check_mode = c != NULL && strcmp(c, "1") == 0;
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 2 && strcmp(argv[1], "walk") == 0)
		return walk();
	if (argc == 2 && strcmp(argv[1], "free-errno") == 0)
		return free_errno();
	if (argc == 2 && strcmp(argv[1], "map-limit") == 0)
		return map_limit();
	fprintf(stderr, "usage: %s walk|free-errno|map-limit\n", argv[0]);
	return 2;
}
