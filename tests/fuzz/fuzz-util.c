/* fuzz-util.c - the helpers of fuzz.h. */
#include "config.h"

#include "fuzz.h"
#include "testutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fz_target = "?";

size_t fz_count(struct fz *f, size_t max)
{
	uint8_t sel = fz_u8(f);
	size_t v;

	switch (sel >> 6) {
	case 0: case 1:
		v = sel & 63;
		break;
	case 2:
		v = fz_u8(f);
		break;
	default:
		v = (size_t)fz_bytes(f, 2);
		break;
	}
	return max == SIZE_MAX ? v : v % (max + 1);
}

/* Sizes where something changes: class and page boundaries, the largest
 * class, the huge limit, the signed and unsigned limits. */
static const size_t edge_sizes[] = {
	0, 1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 127, 128, 129,
	255, 256, 257, 1000, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096,
	4097, 8192, 16384, 32768, 65535, 65536, 65537, 131072,
	(256 << 10) - 24, (256 << 10) - 16, (256 << 10) - 1, 256 << 10,
	(256 << 10) + 1, (1 << 20), (4 << 20) - 4096, 4 << 20, (4 << 20) + 1,
	/* (64-bit values: truncated where size_t is narrower) */
	(size_t)(UINT64_C(1) << 31), (size_t)(UINT64_C(1) << 32),
	(size_t)(UINT64_C(1) << 40), (size_t)((UINT64_C(1) << 46) - 1),
	(size_t)(UINT64_C(1) << 46), (size_t)((UINT64_C(1) << 46) + 1),
	(size_t)(UINT64_C(1) << 47),
	(size_t)PTRDIFF_MAX - 4096, (size_t)PTRDIFF_MAX, (size_t)PTRDIFF_MAX + 1,
	SIZE_MAX - 65536, SIZE_MAX - 4096, SIZE_MAX - 64, SIZE_MAX - 16,
	SIZE_MAX - 1, SIZE_MAX,
};

/* fz_size's draw after its selector byte sel. */
static size_t size_from(uint8_t sel, struct fz *f)
{
	switch (sel & 7) {
	case 0: case 1: case 2:
		return fz_u8(f);
	case 3:
		return (size_t)fz_bytes(f, 2);
	case 4: {
		/* near a power of two up to 2^24 (16 MiB) */
		unsigned sh = fz_u8(f) % 25;
		int delta = (int8_t)fz_u8(f);
		size_t base = (size_t)1 << sh;

		return delta < 0 && (size_t)-delta > base ? 0 : base + (size_t)(ptrdiff_t)delta;
	}
	case 5:
		return edge_sizes[fz_u8(f) % (sizeof edge_sizes / sizeof edge_sizes[0])];
	case 6:
		return (size_t)fz_bytes(f, 3);	/* up to 16 MiB */
	default:
		return (size_t)fz_bytes(f, 8);
	}
}

size_t fz_size(struct fz *f)
{
	return size_from(fz_u8(f), f);
}

#define SIZE_BITS (8 * sizeof(size_t))

size_t fz_size_edge(struct fz *f)
{
	uint8_t sel = fz_u8(f);
	size_t k;

	if (sel < 0xa0)
		return size_from(sel, f);
	switch (sel & 7) {
	case 0: case 1:
		/* every size from SIZE_MAX - 65536 to SIZE_MAX */
		return SIZE_MAX - (size_t)(fz_bytes(f, 3) % 65537);
	case 2:
		/* PTRDIFF_MAX - 32768 .. PTRDIFF_MAX + 32767 */
		return (size_t)PTRDIFF_MAX + (size_t)(ptrdiff_t)(int16_t)fz_bytes(f, 2);
	case 3: {
		/* near a power of two from 2^24 to 2^(bits-1) */
		unsigned sh = 24 + fz_u8(f) % (SIZE_BITS - 24);

		return ((size_t)1 << sh) + (size_t)(ptrdiff_t)(int8_t)fz_u8(f);
	}
	case 4:
		/* near -2^k: what rounding up to 2^k (a page, an alignment,
		 * a class) wraps at */
		k = (size_t)1 << (fz_u8(f) % SIZE_BITS);
		return (SIZE_MAX - k + 1) + (size_t)(ptrdiff_t)(int8_t)fz_u8(f);
	case 5:
		/* near an entry of the table: a class or page boundary, a
		 * limit */
		k = edge_sizes[fz_u8(f) % (sizeof edge_sizes / sizeof edge_sizes[0])];
		return k + (size_t)(ptrdiff_t)(int8_t)fz_u8(f);
	default:
		/* the last 256: where a header and a tail added to the size
		 * wrap */
		return SIZE_MAX - fz_u8(f);
	}
}

/* fz_align's draw after its selector byte sel. */
static size_t align_from(uint8_t sel, struct fz *f)
{
	if (sel < 192)
		return (size_t)1 << (sel % 24);		/* 1 .. 8 MiB */
	if (sel < 224)
		return (size_t)1 << (sel % (8 * sizeof(size_t)));	/* up to 2^63 */
	return (size_t)fz_bytes(f, (sel & 7) + 1);	/* anything */
}

size_t fz_align(struct fz *f)
{
	return align_from(fz_u8(f), f);
}

size_t fz_align_edge(struct fz *f)
{
	uint8_t sel = fz_u8(f);
	unsigned sh;

	if (sel < 0xa0)
		return align_from(sel, f);
	switch (sel & 7) {
	case 0:
		return (size_t)1 << (SIZE_BITS - 1);	/* the largest power of two */
	case 1:
		return (size_t)1 << (SIZE_BITS - 1 - fz_u8(f) % 16);
	case 2:
		/* 2^k + 1 or 2^k - 1 (3, 7, 2^63 - 1, 2^63 + 1): not powers
		 * of two */
		sh = 1 + fz_u8(f) % (SIZE_BITS - 1);
		return ((size_t)1 << sh) + (fz_u8(f) & 1 ? 1 : (size_t)-1);
	case 3:
		/* an odd multiple of a power of two (48, 12288, 3 << 62) */
		sh = fz_u8(f) % (SIZE_BITS - 1);
		return (size_t)(2 * (fz_u8(f) % 4) + 3) << sh;
	case 4:
		return fz_u8(f) % 64;		/* 0 .. 63, most not powers of two */
	case 5:
		return SIZE_MAX - fz_u8(f) % 4;	/* SIZE_MAX .. SIZE_MAX - 3 */
	case 6:
		return (size_t)PTRDIFF_MAX + (size_t)(ptrdiff_t)(int8_t)fz_u8(f);
	default:
		/* every power of two from 8 MiB to 2^(bits-1) */
		return (size_t)1 << (23 + fz_u8(f) % (SIZE_BITS - 23));
	}
}

/* ---- filling and checking --------------------------------------------- */

/* The parts of [from, to) that lie in the filled edges of a block of n
 * bytes (all of it for a block up to 2 * FZ_FILL_EDGE): how many, at most
 * two, in lo[] and hi[]. */
static unsigned edges(size_t n, size_t from, size_t to, size_t lo[2], size_t hi[2])
{
	unsigned k = 0;

	if (to > n)
		to = n;
	if (n <= 2 * FZ_FILL_EDGE) {
		lo[k] = from;
		hi[k] = to;
		return from < to;
	}
	if (from < FZ_FILL_EDGE) {
		lo[k] = from;
		hi[k] = to < FZ_FILL_EDGE ? to : FZ_FILL_EDGE;
		k += lo[k] < hi[k];
	}
	lo[k] = from > n - FZ_FILL_EDGE ? from : n - FZ_FILL_EDGE;
	hi[k] = to;
	k += lo[k] < hi[k];
	return k;
}

/* The pattern of [from, from + n) for seed, into out (n <= CHUNK). */
#define CHUNK 1024
static void pattern_chunk(unsigned char *out, size_t from, size_t n, uint32_t seed,
			  bool zero)
{
	if (zero) {
		memset(out, 0, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = fz_pattern(seed, from + i);
}

void fz_fill(unsigned char *p, size_t n, size_t from, size_t to, uint32_t seed)
{
	size_t lo[2], hi[2];
	unsigned k = edges(n, from, to, lo, hi);
	unsigned char chunk[CHUNK];

	for (unsigned e = 0; e < k; e++)
		for (size_t i = lo[e]; i < hi[e]; i += CHUNK) {
			size_t len = hi[e] - i < CHUNK ? hi[e] - i : CHUNK;

			pattern_chunk(chunk, i, len, seed, false);
			memcpy(p + i, chunk, len);
		}
}

/* Compared a chunk at a time (memcmp), then byte by byte in the chunk
 * that differs, for the offset. */
static size_t check_ranges(const unsigned char *p, size_t n, size_t keep,
			   uint32_t seed, bool zero)
{
	size_t lo[2], hi[2];
	unsigned k = edges(n, 0, keep, lo, hi);
	unsigned char chunk[CHUNK];

	for (unsigned e = 0; e < k; e++)
		for (size_t i = lo[e]; i < hi[e]; i += CHUNK) {
			size_t len = hi[e] - i < CHUNK ? hi[e] - i : CHUNK;

			pattern_chunk(chunk, i, len, seed, zero);
			if (memcmp(p + i, chunk, len) == 0)
				continue;
			for (size_t j = 0; j < len; j++)
				if (p[i + j] != chunk[j])
					return i + j;
		}
	return SIZE_MAX;
}

size_t fz_check_prefix(const unsigned char *p, size_t n, size_t keep,
		       uint32_t seed)
{
	return check_ranges(p, n, keep, seed, false);
}

size_t fz_check(const unsigned char *p, size_t n, uint32_t seed)
{
	return check_ranges(p, n, n, seed, false);
}

size_t fz_check_zero(const unsigned char *p, size_t n)
{
	return check_ranges(p, n, n, 0, true);
}

size_t fz_overlap(const void *p, size_t len, void *const *objs,
		  const size_t *lens, size_t n)
{
	uintptr_t a = (uintptr_t)p;

	if (len == 0)
		return SIZE_MAX;
	for (size_t k = 0; k < n; k++) {
		uintptr_t b = (uintptr_t)objs[k];
		size_t bl = lens != NULL ? lens[k] : len;

		if (bl != 0 && a < b + bl && b < a + len)
			return k;
	}
	return SIZE_MAX;
}

bool fz_huge_skip(size_t n)
{
	static int on = -1;

	if (on < 0)
		on = jp_test_on_valgrind() || jp_test_emulated();
	return on && n > FZ_HUGE_MAX && n <= (size_t)PTRDIFF_MAX;
}

int fz_single_thread(void)
{
	if (jp_test_on_valgrind() && !jp_test_on_memcheck()) {
		printf("replay: %s: skipped: one thread, nothing for helgrind or drd "
		       "to check (memcheck replays it)\n", fz_target);
		return 77;
	}
	return 0;
}

/* ---- a second thread ---------------------------------------------------- */

static void *worker_main(void *arg)
{
	struct fz_worker *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		int j;

		while (w->job == 0)
			pthread_cond_wait(&w->cv, &w->mu);
		j = w->job;
		pthread_mutex_unlock(&w->mu);
		if (j < 0)
			return NULL;
		w->run(j);
		pthread_mutex_lock(&w->mu);
		w->job = 0;
		pthread_cond_broadcast(&w->cv);
	}
}

static void worker_set(struct fz_worker *w, int job)
{
	pthread_mutex_lock(&w->mu);
	w->job = job;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

void fz_worker_start(struct fz_worker *w)
{
	int rc = pthread_create(&w->th, NULL, worker_main, w);

	FZ_CHECK(rc == 0, "pthread_create: error %d", rc);
	w->running = true;
}

void fz_worker_post(struct fz_worker *w, int job)
{
	worker_set(w, job);
}

void fz_worker_wait(struct fz_worker *w)
{
	pthread_mutex_lock(&w->mu);
	while (w->job != 0)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

void fz_worker_stop(struct fz_worker *w)
{
	worker_set(w, -1);
	pthread_join(w->th, NULL);
	w->job = 0;
	w->running = false;
}

/* ---- reporting ---------------------------------------------------------- */

void fz_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz: %s: ", fz_target);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}

bool fz_strict(void)
{
	static int strict = -1;

	if (strict < 0) {
		const char *s = getenv("FUZZ_KNOWN");
		strict = s != NULL && strcmp(s, "1") == 0;
	}
	return strict;
}

bool fz_tracing(void)
{
	static int on = -1;

	if (on < 0) {
		const char *s = getenv("FUZZ_TRACE");
		on = s != NULL && strcmp(s, "1") == 0;
	}
	return on;
}

void fz_trace_line(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "trace: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
