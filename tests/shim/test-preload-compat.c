/*
 * test-preload-compat.c - what users of other preload allocators hit, each
 * as a case run under the preload module by tests/shim/test-preload-compat.sh:
 *
 *   test-preload-compat CASE [ARG]
 *
 * names       every malloc-family name (glibc's internal and old ones too)
 *             resolves to the module, by direct reference, by a versioned
 *             reference (cfree@GLIBC_2.2.5) and by dlsym, and works
 * errors      overflow and bad alignments: NULL with ENOMEM / EINVAL, never
 *             a pointer (pvalloc(SIZE_MAX), valloc, memalign, ...);
 *             malloc_usable_size(NULL) is 0; glibc's realloc(p, 0)
 *             (frees p, returns NULL, errno untouched; reallocarray too);
 *             posix_memalign below sizeof(void *) is EINVAL; one that
 *             fails for memory leaves errno ENOMEM, as glibc's
 * libc        memory the C library allocates for us (strdup, getline,
 *             asprintf, fopen) comes from jp_alloc
 * trim        malloc_trim(0) after freeing a lot gives the memory back
 * mallinfo    mallinfo, mallinfo2, malloc_stats and malloc_info describe
 *             jp_alloc's heap (they reported an empty glibc arena)
 * fork-signal fork() from a signal handler that interrupted malloc or free
 *             in the same thread
 * fork-stdio  fork() racing getline and fflush(NULL) in other threads
 * threads     one short-lived thread per "request", thousands: RSS flat
 * hook        run with a malloc-wrapping library preloaded first (see
 *             preload-hook.c): no deadlock, no recursion
 * hook-after  the same library preloaded after the module: its constructor
 *             (a failing dlsym and dlerror, which malloc and calloc) then
 *             runs before the module's, while the allocator starts up
 * dlopen PATH (run WITHOUT the module) dlopen a library linked against
 *             libjpsync: no "cannot allocate memory in static TLS block"
 *
 * The program is not linked to libjpsync; it reaches jp_* with dlsym.  Each
 * case arms a watchdog (alarm) so that a deadlock kills it with SIGALRM and
 * fails the test instead of hanging.  Prints "ok: ..." lines; exit 0 when
 * every check passed.
 */
#define _GNU_SOURCE
#include "test-preload-compat.h"

#include <jpsync/alloc.h>	/* struct jp_alloc_stats only: jp_* by dlsym */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* glibc's internal names: exported by libc.so.6 at GLIBC_2.2.5 but declared
 * by no header.  The program binds them like any old program does. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* cfree has only a compat version in glibc >= 2.26: bind it as a binary
 * built against an old glibc did. */
#if defined(__x86_64__)
# define HAVE_CFREE_COMPAT 1
extern void cfree_compat(void *);
__asm__(".symver cfree_compat,cfree@GLIBC_2.2.5");
#endif

int failures;
int checks;


const char module_name[] = "libjpsync-preload.so";

double scale(void)
{
	const char *s = getenv("JPSYNC_TEST_SCALE");
	double v = s != NULL ? strtod(s, NULL) : 1.0;

	return v > 0 && v <= 1000 ? v : 1.0;
}

size_t scaled(size_t n, size_t min_n)
{
	double v = (double)n * scale();
	return v < (double)min_n ? min_n : (size_t)v;
}

/* Resident set size from /proc/self/statm, read without stdio. */
size_t rss_bytes(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	unsigned long size, res;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu", &size, &res) != 2)
		return 0;
	return (size_t)res * (size_t)getpagesize();
}

const char *object_of(const void *addr)
{
	Dl_info info;

	if (addr == NULL || dladdr(addr, &info) == 0 || info.dli_fname == NULL)
		return "(none)";
	return info.dli_fname;
}

bool in_module(const void *addr)
{
	return strstr(object_of(addr), module_name) != NULL;
}

usable_fn jp_usable(void)
{
	return (usable_fn)dlsym(RTLD_DEFAULT, "jp_usable_size");
}

bool aligned_to(const void *p, size_t a)
{
	return ((uintptr_t)p & (a - 1)) == 0;
}

/* ------------------------------------------------------------------------ */

static const char *const all_names[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
	"malloc_trim", "free_sized", "free_aligned_sized", "cfree",
	"__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_free",
	"__libc_memalign", "__libc_valloc", "__libc_pvalloc", "__posix_memalign",
	"mallinfo", "mallinfo2", "malloc_stats", "malloc_info",
};

static void case_names(void)
{
	size_t page = (size_t)getpagesize();
	usable_fn us = jp_usable();

	CHECK(us != NULL, "jp_usable_size not found: is the module preloaded?");
	if (us == NULL)
		return;
	for (size_t i = 0; i < sizeof all_names / sizeof *all_names; i++) {
		void *sym = dlsym(RTLD_DEFAULT, all_names[i]);
		CHECK(in_module(sym), "dlsym(RTLD_DEFAULT, \"%s\") is in %s",
		      all_names[i], object_of(sym));
	}
	/* The program's own references, bound at load time. */
	const void *direct[] = {
		(void *)malloc, (void *)free, (void *)calloc, (void *)realloc,
		(void *)reallocarray, (void *)posix_memalign, (void *)aligned_alloc,
		(void *)memalign, (void *)valloc, (void *)pvalloc,
		(void *)malloc_usable_size, (void *)malloc_trim,
		(void *)__libc_malloc, (void *)__libc_calloc, (void *)__libc_realloc,
		(void *)__libc_free, (void *)__libc_memalign, (void *)__libc_valloc,
		(void *)__libc_pvalloc,
	};
	for (size_t i = 0; i < sizeof direct / sizeof *direct; i++)
		CHECK(in_module(direct[i]), "direct reference %zu is in %s", i,
		      object_of(direct[i]));
#ifdef HAVE_CFREE_COMPAT
	CHECK(in_module((void *)cfree_compat), "cfree@GLIBC_2.2.5 is in %s",
	      object_of((void *)cfree_compat));
#endif

	/* Each one works, and its memory is jp_alloc's. */
	void *p;
	p = __libc_malloc(100);
	CHECK(p != NULL && us(p) >= 100, "__libc_malloc");
	memset(p, 1, 100);
	p = __libc_realloc(p, 5000);
	CHECK(p != NULL && us(p) >= 5000 && ((unsigned char *)p)[99] == 1, "__libc_realloc");
	__libc_free(p);
	p = __libc_calloc(10, 10);
	CHECK(p != NULL && ((unsigned char *)p)[99] == 0, "__libc_calloc");
	__libc_free(p);
	p = __libc_memalign(256, 1000);
	CHECK(p != NULL && aligned_to(p, 256) && us(p) >= 1000, "__libc_memalign");
	free(p);
	p = __libc_valloc(10);
	CHECK(p != NULL && aligned_to(p, page), "__libc_valloc");
	free(p);
	p = __libc_pvalloc(10);
	CHECK(p != NULL && aligned_to(p, page) && malloc_usable_size(p) >= page,
	      "__libc_pvalloc");
	free(p);
	p = memalign(4096, 10);
	CHECK(p != NULL && aligned_to(p, 4096), "memalign");
	free(p);
	p = memalign(24, 100);	/* glibc rounds a non-power of two up */
	CHECK(p != NULL && aligned_to(p, 32), "memalign(24) -> 32");
	free(p);
	p = valloc(page + 1);
	CHECK(p != NULL && aligned_to(p, page) && us(p) >= page + 1, "valloc");
	free(p);
	p = pvalloc(page + 1);
	CHECK(p != NULL && aligned_to(p, page) && malloc_usable_size(p) >= 2 * page,
	      "pvalloc rounds up to whole pages");
	free(p);
	p = pvalloc(0);
	CHECK(p != NULL && aligned_to(p, page), "pvalloc(0)");
	free(p);
	p = aligned_alloc(64, 64);
	CHECK(p != NULL && aligned_to(p, 64), "aligned_alloc");
	free(p);
	p = NULL;
	CHECK(posix_memalign(&p, 2u << 20, 100) == 0 && aligned_to(p, 2u << 20),
	      "posix_memalign 2 MiB");
	free(p);
	p = reallocarray(NULL, 10, 20);
	CHECK(p != NULL && us(p) >= 200, "reallocarray");
	free(p);

	void (*cfree_p)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "cfree");
	void (*free_sized_p)(void *, size_t) =
		(void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
	void (*free_al_p)(void *, size_t, size_t) =
		(void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
	int (*pm_p)(void **, size_t, size_t) =
		(int (*)(void **, size_t, size_t))dlsym(RTLD_DEFAULT, "__posix_memalign");
	if (cfree_p != NULL && free_sized_p != NULL && free_al_p != NULL && pm_p != NULL) {
		cfree_p(malloc(10));
		free_sized_p(malloc(77), 77);
		free_al_p(aligned_alloc(128, 300), 128, 300);
		p = NULL;
		CHECK(pm_p(&p, 512, 10) == 0 && aligned_to(p, 512), "__posix_memalign");
		free(p);
	}
#ifdef HAVE_CFREE_COMPAT
	cfree_compat(malloc(33));
#endif
	/* Many objects across the sizes, freed through every free name. */
	for (int i = 0; i < 3000; i++) {
		size_t n = 1 + (size_t)(i * 131) % 70000;
		void *q = (i & 1) ? malloc(n) : __libc_malloc(n);
		CHECK(q != NULL && us(q) >= n, "malloc(%zu)", n);
		memset(q, i, n);
		if (i % 3 == 0)
			__libc_free(q);
		else if (i % 3 == 1 && cfree_p != NULL)
			cfree_p(q);
		else
			free(q);
	}
}

/* ------------------------------------------------------------------------ */

#define EXPECT_NOMEM(expr) do {						\
	errno = 0;							\
	void *r_ = (expr);						\
	int e_ = errno;							\
	CHECK(r_ == NULL && e_ == ENOMEM, "%s gave %p, errno %d (%s)",	\
	      #expr, r_, e_, strerror(e_));				\
	free(r_);							\
} while (0)

#define EXPECT_EINVAL(expr) do {					\
	errno = 0;							\
	void *r_ = (expr);						\
	int e_ = errno;							\
	CHECK(r_ == NULL && e_ == EINVAL, "%s gave %p, errno %d (%s)",	\
	      #expr, r_, e_, strerror(e_));				\
	free(r_);							\
} while (0)

/* Hide a constant from the compiler: no -Walloc-size-larger-than warning,
 * and no chance of a call with an impossible size being folded away. */
static size_t opaque(size_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x;
}

/* realloc(p, 0) and its relatives free p: the allocator counts a free. */
static void realloc_zero_frees(void)
{
	int (*st)(struct jp_alloc_stats *, size_t) =
		(int (*)(struct jp_alloc_stats *, size_t))
		dlsym(RTLD_DEFAULT, "jp_alloc_stats");
	struct jp_alloc_stats s0, s1;
	const size_t sizes[] = { 24, 5000, (size_t)3 << 20 };

	CHECK(st != NULL, "jp_alloc_stats not found: is the module preloaded?");
	if (st == NULL)
		return;
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		for (int how = 0; how < 4; how++) {
			void *p = malloc(sizes[i]), *q;

			CHECK(p != NULL, "malloc(%zu)", sizes[i]);
			if (p == NULL)
				continue;
			memset(p, 0x6b, sizes[i]);
			st(&s0, sizeof s0);
			errno = EDOM;
			q = how == 0 ? realloc(p, 0) : how == 1 ? __libc_realloc(p, 0)
			  : how == 2 ? reallocarray(p, 0, 8) : reallocarray(p, 8, 0);
			int e = errno;
			st(&s1, sizeof s1);
			CHECK(q == NULL && e == EDOM && s1.frees == s0.frees + 1,
			      "size %zu, way %d: gave %p, errno %d, frees +%llu",
			      sizes[i], how, q, e,
			      (unsigned long long)(s1.frees - s0.frees));
		}
	}
	/* realloc(NULL, 0) is malloc(0): a unique pointer. */
	void *a = realloc(NULL, 0), *b = reallocarray(NULL, 0, 8);
	CHECK(a != NULL && b != NULL && a != b, "realloc(NULL, 0) is malloc(0)");
	free(a);
	free(b);
}

static void case_errors(void)
{
	size_t page = (size_t)getpagesize();
	const size_t big[] = { SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - page + 2,
			       SIZE_MAX - page, SIZE_MAX - 4 * page, SIZE_MAX / 2 + 1 };
	void *p, *q;

	for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
		size_t n = opaque(big[i]);
		EXPECT_NOMEM(pvalloc(n));
		EXPECT_NOMEM(__libc_pvalloc(n));
		EXPECT_NOMEM(valloc(n));
		EXPECT_NOMEM(__libc_valloc(n));
		EXPECT_NOMEM(memalign(page, n));
		EXPECT_NOMEM(memalign(64, n));
		EXPECT_NOMEM(memalign(1u << 20, n));
		EXPECT_NOMEM(__libc_memalign(page, n));
		EXPECT_NOMEM(aligned_alloc(page, n));
		EXPECT_NOMEM(aligned_alloc(1u << 21, n));
		EXPECT_NOMEM(malloc(n));
		EXPECT_NOMEM(__libc_malloc(n));
		p = (void *)&p;
		errno = 0;
		int rc = posix_memalign(&p, page, n);
		/* glibc's fails in its malloc, which sets errno. */
		CHECK(rc == ENOMEM && p == (void *)&p && errno == ENOMEM,
		      "posix_memalign(page, %zu) = %d, memptr %s, errno %d", n, rc,
		      p == (void *)&p ? "untouched" : "changed", errno);
	}
	EXPECT_NOMEM(calloc(opaque(SIZE_MAX / 2), 3));
	EXPECT_NOMEM(__libc_calloc(opaque(SIZE_MAX / 4 + 1), 8));
	EXPECT_NOMEM(reallocarray(NULL, opaque(SIZE_MAX / 2), 3));

	/* Alignments: aligned_alloc refuses a non-power of two (C17),
	 * posix_memalign also one that is not a multiple of sizeof(void *). */
	/* (opaque: clang 14 crashes optimising aligned_alloc of a constant 0) */
	EXPECT_EINVAL(aligned_alloc(opaque(3), 16));
	EXPECT_EINVAL(aligned_alloc(opaque(0), 16));
	EXPECT_EINVAL(aligned_alloc(opaque(page + 1), 16));
	EXPECT_EINVAL(memalign(opaque(SIZE_MAX), 16));
	p = NULL;
	CHECK(posix_memalign(&p, 3, 16) == EINVAL && p == NULL, "posix_memalign align 3");
	CHECK(posix_memalign(&p, sizeof(void *) / 2, 16) == EINVAL && p == NULL,
	      "posix_memalign align sizeof(void *) / 2");
	CHECK(posix_memalign(&p, 0, 16) == EINVAL && p == NULL, "posix_memalign align 0");
	CHECK(posix_memalign(&p, 24, 16) == EINVAL && p == NULL, "posix_memalign align 24");
	/* Every power of two below sizeof(void *) (glibc: EINVAL too), while
	 * aligned_alloc and memalign take them. */
	for (size_t a = 1; a < sizeof(void *); a *= 2) {
		errno = EDOM;
		CHECK(posix_memalign(&p, a, 16) == EINVAL && p == NULL && errno == EDOM,
		      "posix_memalign align %zu", a);
		q = aligned_alloc(opaque(a), 16);
		CHECK(q != NULL, "aligned_alloc align %zu", a);
		free(q);
		q = memalign(a, 16);
		CHECK(q != NULL, "memalign align %zu", a);
		free(q);
	}
	CHECK(posix_memalign(&p, sizeof(void *), 16) == 0 && p != NULL,
	      "posix_memalign align sizeof(void *)");
	free(p);
	p = NULL;

	CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL)");

	/* realloc keeps the old block when it fails. */
	p = malloc(64);
	memset(p, 7, 64);
	errno = 0;
	q = realloc(p, opaque(SIZE_MAX - 8));
	CHECK(q == NULL && errno == ENOMEM, "realloc to SIZE_MAX - 8");
	CHECK(((unsigned char *)p)[63] == 7 && malloc_usable_size(p) >= 64,
	      "the block survives a failed realloc");
	errno = 0;
	q = reallocarray(p, opaque(SIZE_MAX / 4), 8);
	CHECK(q == NULL && errno == ENOMEM, "reallocarray overflow keeps the block");
	/* glibc: realloc(p, 0) frees p and returns NULL, errno untouched. */
	errno = EDOM;
	q = realloc(p, 0);
	CHECK(q == NULL && errno == EDOM, "realloc(p, 0) returns NULL as in glibc");
	realloc_zero_frees();
	/* malloc(0) is unique and freeable. */
	p = malloc(0);
	q = malloc(0);
	CHECK(p != NULL && q != NULL && p != q, "malloc(0) unique");
	free(p);
	free(q);
	free(NULL);
}

/* ------------------------------------------------------------------------ */

static void case_libc(void)
{
	usable_fn us = jp_usable();
	char *s, *line = NULL;
	size_t cap = 0;

	CHECK(us != NULL, "jp_usable_size not found");
	if (us == NULL)
		return;
	s = strdup("a string the C library allocates");
	CHECK(s != NULL && us(s) == malloc_usable_size(s) && us(s) > strlen(s),
	      "strdup's block is jp_alloc's");
	free(s);
	CHECK(asprintf(&s, "%d %s", 42, "asprintf") > 0 && us(s) >= 12,
	      "asprintf's block is jp_alloc's");
	free(s);
	FILE *f = fmemopen((void *)"one line\nanother line\n", 22, "r");
	CHECK(f != NULL, "fmemopen");
	if (f != NULL) {
		CHECK(getline(&line, &cap, f) == 9 && us(line) >= 10, "getline's buffer");
		fclose(f);
	}
	free(line);
	char *cwd = getcwd(NULL, 0);
	CHECK(cwd != NULL && us(cwd) > strlen(cwd), "getcwd(NULL, 0)'s buffer");
	free(cwd);
}

/* ------------------------------------------------------------------------ */

static void case_trim(void)
{
	const size_t total = scaled((size_t)256 << 20, (size_t)32 << 20);
	const size_t sizes[] = { 32, 48, 64, 100, 200 };
	size_t n = 0, bytes = 0, cap = total / 32;
	void **blocks = malloc(cap * sizeof *blocks);

	CHECK(blocks != NULL, "pointer array");
	if (blocks == NULL)
		return;
	size_t base = rss_bytes();
	while (bytes < total && n < cap) {
		size_t sz = sizes[n % 5];
		char *p = malloc(sz);
		if (p == NULL)
			break;
		memset(p, 0x5a, sz);
		blocks[n++] = p;
		bytes += sz;
	}
	size_t peak = rss_bytes();
	/* Free in an order unlike the allocation order. */
	for (size_t stride = 0; stride < 7; stride++)
		for (size_t i = stride; i < n; i += 7)
			free(blocks[i]);
	free(blocks);
	size_t before = rss_bytes();
	int r = malloc_trim(0);
	size_t after = rss_bytes();

	printf("trim: %zu blocks, %zu MiB: RSS base %zu KiB, peak %zu KiB, "
	       "after free %zu KiB, after malloc_trim(0) %zu KiB (returned %d)\n",
	       n, bytes >> 20, base >> 10, peak >> 10, before >> 10, after >> 10, r);
	CHECK(peak > base + bytes / 2, "the blocks were resident");
	/* What stays after trim: at most a tenth of what the blocks took. */
	CHECK(after < base + (peak - base) / 10,
	      "RSS after malloc_trim(0) is %zu MiB, peak %zu MiB", after >> 20, peak >> 20);
	/* malloc_trim reports whether it released anything. */
	if (before > after + ((size_t)1 << 20))
		CHECK(r == 1, "malloc_trim(0) released %zu MiB but returned %d",
		      (before - after) >> 20, r);
	/* A second trim with nothing to give: still a valid answer. */
	r = malloc_trim(0);
	CHECK(r == 0 || r == 1, "malloc_trim returns 0 or 1");
}


/* mallinfo and company describe jp_alloc's heap: 20 MiB in small blocks
 * and one 24 MiB block are there, and gone once freed. */
struct old_mallinfo {
	int arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks;
	int uordblks, fordblks, keepcost;
};

static void case_mallinfo(void)
{
	struct mallinfo2 a, b, c;
	struct old_mallinfo (*mi)(void) =
		(struct old_mallinfo (*)(void))dlsym(RTLD_DEFAULT, "mallinfo");
	enum { N = 20 * 1024 };
	static void *blk[N];
	void *big;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(mi != NULL && in_module((void *)mi), "mallinfo is the module's");
	a = mallinfo2();
	for (int i = 0; i < N; i++)
		blk[i] = malloc(1024);
	big = malloc(24u << 20);
	b = mallinfo2();
	CHECK(b.uordblks >= a.uordblks + (size_t)N * 1024, "uordblks grew by 20 MiB: %zu -> %zu",
	      a.uordblks, b.uordblks);
	CHECK(b.arena >= b.uordblks && b.fordblks == b.arena - b.uordblks,
	      "arena %zu >= uordblks %zu, fordblks the rest", b.arena, b.uordblks);
	CHECK(b.hblks >= 1 && b.hblkhd >= (24u << 20), "hblks %zu, hblkhd %zu",
	      b.hblks, b.hblkhd);
	if (mi != NULL) {
		struct old_mallinfo o = mi();

		CHECK(o.uordblks >= N * 1024 && o.hblkhd >= (24 << 20),
		      "mallinfo: uordblks %d hblkhd %d", o.uordblks, o.hblkhd);
	}
	f = open_memstream(&buf, &len);
	CHECK(f != NULL && malloc_info(0, f) == 0, "malloc_info(0)");
	if (f != NULL) {
		fclose(f);
		CHECK(strncmp(buf, "<malloc version=\"1\">", 20) == 0 &&
		      strstr(buf, "<total type=\"mmap\" count=\"") != NULL &&
		      strstr(buf, "</malloc>\n") != NULL, "malloc_info XML");
		free(buf);
	}
	CHECK(malloc_info(1, stdout) == EINVAL, "malloc_info(1) is EINVAL");
	for (int i = 0; i < N; i++)
		free(blk[i]);
	free(big);
	c = mallinfo2();
	CHECK(c.uordblks + (size_t)N * 1024 <= b.uordblks && c.hblkhd + (24u << 20) <= b.hblkhd,
	      "freed: uordblks %zu, hblkhd %zu", c.uordblks, c.hblkhd);
	/* malloc_stats: glibc's lines on stderr. */
	{
		int fds[2], saved = dup(2);
		char out[8192];
		ssize_t n;

		CHECK(pipe(fds) == 0 && saved >= 0, "pipe");
		dup2(fds[1], 2);
		malloc_stats();
		dup2(saved, 2);
		close(saved);
		close(fds[1]);
		n = read(fds[0], out, sizeof out - 1);
		close(fds[0]);
		out[n > 0 ? n : 0] = '\0';
		CHECK(strstr(out, "system bytes     = ") != NULL &&
		      strstr(out, "in use bytes     = ") != NULL &&
		      strstr(out, "max mmap regions = ") != NULL, "malloc_stats printed:\n%s", out);
	}
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The watchdog: a deadlock ends as SIGALRM, not as a hung test. */
	alarm(60);
	if (strcmp(c, "names") == 0)
		case_names();
	else if (strcmp(c, "errors") == 0)
		case_errors();
	else if (strcmp(c, "libc") == 0)
		case_libc();
	else if (strcmp(c, "trim") == 0)
		case_trim();
	else if (strcmp(c, "mallinfo") == 0)
		case_mallinfo();
	else if (strcmp(c, "fork-signal") == 0)
		case_fork_signal();
	else if (strcmp(c, "fork-stdio") == 0)
		case_fork_stdio();
	else if (strcmp(c, "threads") == 0)
		case_threads();
	else if (strcmp(c, "hook") == 0)
		check_hook(true);
	else if (strcmp(c, "hook-after") == 0)
		check_hook(false);
	else if (strcmp(c, "dlopen") == 0 && argc > 2)
		case_dlopen(argv[2]);
	else {
		fprintf(stderr, "usage: %s names|errors|libc|trim|mallinfo|fork-signal|fork-stdio|"
			"threads|hook|hook-after|dlopen PATH\n", argv[0]);
		return 2;
	}
	if (failures == 0)
		printf("ok: %s (%d checks)\n", c, checks);
	else
		printf("FAIL: %s: %d of %d checks failed\n", c, failures, checks);
	return failures == 0 ? 0 : 1;
}
