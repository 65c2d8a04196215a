/*
 * preload.c - the LD_PRELOAD module: every malloc-family name of the C
 * library, forwarded to jp_alloc.
 *
 * Installed as $(pkglibdir)/libjpsync-preload.so and put in front of the C
 * library by jpsync-run(1).  The dynamic loader binds every reference to
 * malloc, free, ... in the program and in its libraries (the C library's own
 * internal calls included: since glibc 2.26 they go through the interposable
 * names) to the definitions here, and ld.so itself switches to them once
 * libc is relocated.
 *
 * The names exported are exactly those of shim/preload.sym; everything else
 * is hidden.  The bodies are deliberately thin: the allocator already
 * survives re-entry during its own initialisation (dlsym, the loader and
 * pthread_key_create may call calloc before it is ready), so the module keeps
 * no state of its own.
 *
 * Where glibc and the C standard differ from the jp_* contract the module
 * follows glibc, since the promise is that a program behaves exactly as it
 * did before (jp_realloc already does as glibc's realloc: realloc(p, 0)
 * with p != NULL frees p and returns NULL):
 *   - memalign() and valloc() round a non-power-of-two alignment up, as
 *     glibc's memalign does, while aligned_alloc() refuses it (NULL, EINVAL;
 *     0 included), as C17 and glibc 2.38 do.  glibc 2.36 (Debian 12) rounds
 *     it up instead; the choice is fixed here, whatever C library the
 *     program runs with, and documented in jp_alloc(3) and the README;
 *   - posix_memalign() that fails for lack of memory returns ENOMEM and
 *     leaves errno ENOMEM, as glibc's does (it fails in its malloc); an
 *     alignment it refuses returns EINVAL and leaves errno alone;
 *   - mallinfo(), mallinfo2(), malloc_stats() and malloc_info() describe
 *     jp_alloc's heap (jp_alloc_stats), in glibc's shapes: programs that
 *     watch their heap see it, not an empty glibc arena;
 *   - every page-rounding path (valloc, pvalloc) and every size + alignment
 *     sum is checked for overflow first and fails with ENOMEM.
 *
 * glibc 2.36 exports __libc_malloc, __libc_calloc, __libc_realloc,
 * __libc_free, __libc_memalign, __libc_valloc, __libc_pvalloc and the compat
 * symbol cfree@GLIBC_2.2.5 (no default version: only old binaries bind it).
 * __posix_memalign is exported by no current glibc, but programs written for
 * old ones (and jemalloc's override list) still name it; defining it costs
 * nothing.  free_sized and free_aligned_sized (C23) arrive in glibc 2.39.
 */
#include "config.h"

#include <jpsync/alloc.h>

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define SHIM_EXPORT __attribute__((visibility("default")))
/* The same body under a second name (cfree, __libc_*). */
#define SHIM_ALIAS(target) \
	__attribute__((alias(#target), visibility("default")))

/* Prototypes: the module is compiled with -Wmissing-prototypes, and the C
 * library's headers do not declare the old and internal names. */
SHIM_EXPORT void *malloc(size_t size);
SHIM_EXPORT void free(void *ptr);
SHIM_EXPORT void *calloc(size_t nmemb, size_t size);
SHIM_EXPORT void *realloc(void *ptr, size_t size);
SHIM_EXPORT void *reallocarray(void *ptr, size_t nmemb, size_t size);
SHIM_EXPORT int posix_memalign(void **memptr, size_t alignment, size_t size);
SHIM_EXPORT void *aligned_alloc(size_t alignment, size_t size);
SHIM_EXPORT void *memalign(size_t alignment, size_t size);
SHIM_EXPORT void *valloc(size_t size);
SHIM_EXPORT void *pvalloc(size_t size);
SHIM_EXPORT size_t malloc_usable_size(void *ptr);
SHIM_EXPORT int malloc_trim(size_t pad);
SHIM_EXPORT void free_sized(void *ptr, size_t size);
SHIM_EXPORT void free_aligned_sized(void *ptr, size_t alignment, size_t size);
SHIM_EXPORT void cfree(void *ptr);
SHIM_EXPORT void *__libc_malloc(size_t size);
SHIM_EXPORT void __libc_free(void *ptr);
SHIM_EXPORT void *__libc_calloc(size_t nmemb, size_t size);
SHIM_EXPORT void *__libc_realloc(void *ptr, size_t size);
SHIM_EXPORT void *__libc_memalign(size_t alignment, size_t size);
SHIM_EXPORT void *__libc_valloc(size_t size);
SHIM_EXPORT void *__libc_pvalloc(size_t size);
SHIM_EXPORT int __posix_memalign(void **memptr, size_t alignment, size_t size);

/* glibc's <malloc.h> structs, by layout (the header is not included: it
 * declares the functions above with attributes of its own, and mallinfo2
 * only since glibc 2.33). */
struct shim_mallinfo {
	int arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks;
	int uordblks, fordblks, keepcost;
};
struct shim_mallinfo2 {
	size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks;
	size_t uordblks, fordblks, keepcost;
};
SHIM_EXPORT struct shim_mallinfo mallinfo(void);
SHIM_EXPORT struct shim_mallinfo2 mallinfo2(void);
SHIM_EXPORT void malloc_stats(void);
SHIM_EXPORT int malloc_info(int options, FILE *fp);

/* The allocator's own alignment: smaller requests need nothing special. */
#define SHIM_MIN_ALIGN 16

static inline int is_pow2(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/* getpagesize() reads the value the loader got from the kernel's auxiliary
 * vector: no system call and no allocation, safe at any point. */
static inline size_t page_size(void)
{
	return (size_t)getpagesize();
}

static void *nomem(void)
{
	errno = ENOMEM;
	return NULL;
}

void *malloc(size_t size)
{
	return jp_alloc(size);
}

void free(void *ptr)
{
	jp_free(ptr);
}

void *calloc(size_t nmemb, size_t size)
{
	return jp_calloc(nmemb, size);
}

void *realloc(void *ptr, size_t size)
{
	/* realloc(p, 0) frees p and returns NULL in jp_realloc, as in glibc
	 * (REALLOC_ZERO_BYTES_FREES). */
	return jp_realloc(ptr, size);
}

void *reallocarray(void *ptr, size_t nmemb, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(nmemb, size, &bytes))
		return nomem();
	return realloc(ptr, bytes);
}

/* The one path every over-aligned request takes: alignment is a power of
 * two; the sum that an aligned allocator may reserve is checked here so that
 * a size near SIZE_MAX fails with ENOMEM whatever the allocator does. */
static void *aligned(size_t alignment, size_t size)
{
	if (alignment <= SHIM_MIN_ALIGN)
		return jp_alloc(size);
	if (size > SIZE_MAX - alignment)
		return nomem();
	return jp_alloc_aligned(alignment, size);
}

int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	void *p;

	/* POSIX: a power of two multiple of sizeof(void *), else EINVAL;
	 * *memptr is left alone on failure, as in glibc. */
	if (!is_pow2(alignment) || alignment % sizeof(void *) != 0)
		return EINVAL;
	p = aligned(alignment, size);
	if (p == NULL) {
		/* glibc's fails in its malloc, which sets errno: ENOMEM too. */
		errno = ENOMEM;
		return ENOMEM;
	}
	*memptr = p;
	return 0;
}

int __posix_memalign(void **memptr, size_t alignment, size_t size)
	SHIM_ALIAS(posix_memalign);

void *aligned_alloc(size_t alignment, size_t size)
{
	if (!is_pow2(alignment)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned(alignment, size);
}

void *memalign(size_t alignment, size_t size)
{
	/* glibc's memalign: an alignment above half the address space is
	 * EINVAL, any other non-power of two is rounded up. */
	if (alignment > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	if (!is_pow2(alignment) && alignment > SHIM_MIN_ALIGN)
		alignment = (size_t)1 << (sizeof(size_t) * 8 -
					  (size_t)__builtin_clzl(alignment));
	return aligned(alignment, size);
}

void *valloc(size_t size)
{
	return aligned(page_size(), size);
}

void *pvalloc(size_t size)
{
	size_t page = page_size();

	/* Round size up to a whole page; the sum must not wrap (tcmalloc 2.10
	 * returned a pointer for pvalloc(SIZE_MAX)). */
	if (size > SIZE_MAX - (page - 1))
		return nomem();
	size = (size + page - 1) & ~(page - 1);
	if (size == 0)
		size = page;	/* glibc hands out one page for pvalloc(0) */
	return aligned(page, size);
}

size_t malloc_usable_size(void *ptr)
{
	return ptr == NULL ? 0 : jp_usable_size(ptr);
}

int malloc_trim(size_t pad)
{
	struct jp_alloc_stats before, after;
	int have;

	/* glibc keeps pad bytes at the top of the heap; the allocator has no
	 * single top, and what it keeps cached is its own policy. */
	(void)pad;
	/* 1 if memory went back to the system.  jp_alloc_trim's count covers
	 * the pages it purges; the statistics also show the segments that
	 * emptied and were unmapped on the way (mapped went down), so ask
	 * both rather than answer "nothing trimmed" after giving memory back
	 * (mimalloc's malloc_trim did exactly that). */
	have = jp_alloc_stats(&before, sizeof before) == 0;
	if (jp_alloc_trim() > 0)
		return 1;
	return have && jp_alloc_stats(&after, sizeof after) == 0 &&
	       (after.mapped < before.mapped || after.trimmed > before.trimmed);
}

void free_sized(void *ptr, size_t size)
{
	jp_free_sized(ptr, size);
}

void free_aligned_sized(void *ptr, size_t alignment, size_t size)
{
	/* An over-aligned block may sit in a larger class than size alone
	 * names, so the size is no class hint; jp_free_sized only compares
	 * it with the block (at least that big), and in check mode with the
	 * size asked for, as for free_sized. */
	(void)alignment;
	jp_free_sized(ptr, size);
}

/* ---- the heap's figures, in glibc's shapes ------------------------------
 *
 * glibc's fields, for jp_alloc: arena, the bytes mapped for blocks of the
 * size classes (segments); hblks and hblkhd, the blocks above the largest
 * class (own mappings) and their bytes; uordblks, the bytes of the size
 * classes' blocks in use; fordblks, arena less those (free, in caches or
 * never handed out); usmblks, the peak of all mapped bytes; keepcost, the
 * bytes jp_alloc_trim could give back at once is not known without doing
 * it: 0, as for glibc's mmap'ed heaps; ordblks, smblks and fsmblks (counts
 * of free chunks of glibc's bins) have no equivalent: 0.
 */
static struct shim_mallinfo2 heap_info(void)
{
	struct jp_alloc_stats st;
	struct shim_mallinfo2 m = { 0 };

	if (jp_alloc_stats(&st, sizeof st) != 0)
		return m;
	m.hblks = st.huge_count;
	m.hblkhd = st.huge_bytes;
	m.arena = st.mapped > st.huge_bytes ? st.mapped - st.huge_bytes : 0;
	m.uordblks = st.in_use > st.huge_bytes ? st.in_use - st.huge_bytes : 0;
	m.fordblks = m.arena > m.uordblks ? m.arena - m.uordblks : 0;
	m.usmblks = st.peak_mapped;
	return m;
}

/* mallinfo's int fields: saturated at INT_MAX (glibc truncates, which
 * makes 2 GiB and more look small or negative). */
static int clamp_int(size_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

struct shim_mallinfo2 mallinfo2(void)
{
	return heap_info();
}

struct shim_mallinfo mallinfo(void)
{
	struct shim_mallinfo2 m = heap_info();
	struct shim_mallinfo r = {
		clamp_int(m.arena), clamp_int(m.ordblks), clamp_int(m.smblks),
		clamp_int(m.hblks), clamp_int(m.hblkhd), clamp_int(m.usmblks),
		clamp_int(m.fsmblks), clamp_int(m.uordblks), clamp_int(m.fordblks),
		clamp_int(m.keepcost),
	};

	return r;
}

/* glibc's lines, on stderr, then jp_alloc's own table. */
void malloc_stats(void)
{
	struct jp_alloc_stats st;
	char buf[512];
	int n;

	if (jp_alloc_stats(&st, sizeof st) != 0)
		return;
	n = snprintf(buf, sizeof buf,
		     "Arena 0:\nsystem bytes     = %10llu\nin use bytes     = %10llu\n"
		     "Total (incl. mmap):\nsystem bytes     = %10llu\n"
		     "in use bytes     = %10llu\nmax mmap regions = %10llu\n"
		     "max mmap bytes   = %10llu\n",
		     (unsigned long long)(st.mapped - st.huge_bytes),
		     (unsigned long long)(st.in_use - st.huge_bytes),
		     (unsigned long long)st.mapped, (unsigned long long)st.in_use,
		     (unsigned long long)st.huge_count, (unsigned long long)st.huge_bytes);
	if (n > 0 && write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0)
		return;
	jp_alloc_stats_print(2);
}

/* glibc's XML, with one heap: the size classes in use, then the totals. */
int malloc_info(int options, FILE *fp)
{
	struct jp_alloc_stats st;
	unsigned long long rest_n = 0, rest_b = 0;

	if (options != 0)
		return EINVAL;
	if (jp_alloc_stats(&st, sizeof st) != 0)
		return EINVAL;
	fputs("<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n", fp);
	for (uint32_t c = 0; c < st.nclasses && c < JP_ALLOC_STATS_CLASSES; c++) {
		unsigned long long used = st.class_allocs[c] >= st.class_frees[c] ?
			st.class_allocs[c] - st.class_frees[c] : 0;

		if (used == 0)
			continue;
		fprintf(fp, "  <size from=\"%llu\" to=\"%llu\" total=\"%llu\" count=\"%llu\"/>\n",
			c == 0 ? 1ULL : (unsigned long long)st.class_size[c - 1] + 1,
			(unsigned long long)st.class_size[c],
			used * st.class_size[c], used);
		rest_n += used;
		rest_b += used * st.class_size[c];
	}
	fprintf(fp, "</sizes>\n<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		"<total type=\"rest\" count=\"%llu\" size=\"%llu\"/>\n"
		"<system type=\"current\" size=\"%llu\"/>\n"
		"<system type=\"max\" size=\"%llu\"/>\n"
		"<aspace type=\"total\" size=\"%llu\"/>\n"
		"<aspace type=\"mprotect\" size=\"%llu\"/>\n</heap>\n",
		rest_n, rest_b, (unsigned long long)(st.mapped - st.huge_bytes),
		(unsigned long long)st.peak_mapped,
		(unsigned long long)(st.mapped - st.huge_bytes),
		(unsigned long long)(st.mapped - st.huge_bytes));
	fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		"<total type=\"rest\" count=\"%llu\" size=\"%llu\"/>\n"
		"<total type=\"mmap\" count=\"%llu\" size=\"%llu\"/>\n"
		"<system type=\"current\" size=\"%llu\"/>\n"
		"<system type=\"max\" size=\"%llu\"/>\n"
		"<aspace type=\"total\" size=\"%llu\"/>\n"
		"<aspace type=\"mprotect\" size=\"%llu\"/>\n</malloc>\n",
		rest_n, rest_b, (unsigned long long)st.huge_count,
		(unsigned long long)st.huge_bytes, (unsigned long long)st.mapped,
		(unsigned long long)st.peak_mapped, (unsigned long long)st.mapped,
		(unsigned long long)st.mapped);
	return 0;
}

void cfree(void *ptr) SHIM_ALIAS(free);
void *__libc_malloc(size_t size) SHIM_ALIAS(malloc);
void __libc_free(void *ptr) SHIM_ALIAS(free);
void *__libc_calloc(size_t nmemb, size_t size) SHIM_ALIAS(calloc);
void *__libc_realloc(void *ptr, size_t size) SHIM_ALIAS(realloc);
void *__libc_memalign(size_t alignment, size_t size) SHIM_ALIAS(memalign);
void *__libc_valloc(size_t size) SHIM_ALIAS(valloc);
void *__libc_pvalloc(size_t size) SHIM_ALIAS(pvalloc);

/* fork() racing getline or fflush(NULL) in other threads: the allocator's
 * own fork handlers take glibc's stdio list lock before its locks (see
 * lib/alloc/tcache.c), so the module needs no handler of its own. */
