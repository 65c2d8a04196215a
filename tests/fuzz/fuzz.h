/*
 * fuzz.h - what the fuzz targets share: reading the input as a stream of
 * numbers, the sizes worth trying, a pattern to fill blocks with, and the
 * one way a target reports a violation.
 *
 * Every target is a libFuzzer entry point, LLVMFuzzerTestOneInput(), built
 * twice (see tests/fuzz/README):
 *   - with clang -fsanitize=fuzzer,address,undefined (make fuzz, CI), where
 *     libFuzzer's own main() mutates inputs;
 *   - with the configured compiler and no libFuzzer as replay-<target>,
 *     whose main() (replay.c) runs every file of the target's corpus once;
 *     make check runs those.
 * A target never reads anything but its input (no clock-dependent choices,
 * no randomness of its own), so that an input replays the same way.
 *
 * The input is a stream of bytes read front to back; reading past its end
 * gives zeros, so every input, however short, is a valid program.
 */
#ifndef JP_FUZZ_H
#define JP_FUZZ_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The entry points, defined by each target. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ---- the input -------------------------------------------------------- */
struct fz {
	const uint8_t *p, *end;
};

static inline void fz_init(struct fz *f, const uint8_t *data, size_t size)
{
	f->p = data;
	f->end = data + size;
}

static inline bool fz_done(const struct fz *f)
{
	return f->p >= f->end;
}

static inline uint8_t fz_u8(struct fz *f)
{
	return f->p < f->end ? *f->p++ : 0;
}

/* n bytes (at most 8), little-endian. */
static inline uint64_t fz_bytes(struct fz *f, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)fz_u8(f) << (8 * i);
	return v;
}

/* A count, mostly small: one byte selects small (< 64), byte or u16. */
size_t fz_count(struct fz *f, size_t max);

/*
 * A size to pass to an allocation or creation call: one selector byte picks
 * a small size, a size near a power of two, a value from the table of edge
 * values (class boundaries, 2^46, PTRDIFF_MAX, SIZE_MAX, ...) or a raw
 * 64-bit value, so that the fuzzer reaches absurd sizes as easily as common
 * ones.
 */
size_t fz_size(struct fz *f);
/* An alignment: mostly powers of two, sometimes any value (0, 3, 48, ...). */
size_t fz_align(struct fz *f);
/*
 * The same, weighted to the edges of size_t (the allocator targets): a
 * selector byte below 0xa0 draws as fz_size and fz_align do; the others
 * reach every size from SIZE_MAX - 65536 to SIZE_MAX, the neighbourhoods
 * of PTRDIFF_MAX, of the powers of two up to 2^(bits-1), of -2^k and of
 * the table's entries; and alignments from 1 to 2^(bits-1) at every power,
 * non-powers of two next to them (2^k +- 1, odd multiples), 0 to 63,
 * SIZE_MAX and PTRDIFF_MAX's neighbours.
 */
size_t fz_size_edge(struct fz *f);
size_t fz_align_edge(struct fz *f);

/* ---- filling and checking memory -------------------------------------- */
/*
 * The byte at offset i of a block filled with seed s.  It depends on the
 * offset, so a copy to the wrong place or a lost prefix shows.
 */
static inline uint8_t fz_pattern(uint32_t s, size_t i)
{
	return (uint8_t)(s + i * 0x9dU + (i >> 8) * 0x3bU);
}

/* Only this much of each end of a large block is filled and checked: the
 * fuzzer must not spend its time (or the machine's memory) on the middle of
 * a block of a gigabyte. */
#define FZ_FILL_EDGE ((size_t)8 << 10)

/* Fill [from, to) of the block p of size n (only its two edges if large). */
void fz_fill(unsigned char *p, size_t n, size_t from, size_t to, uint32_t seed);
/* The offset of the first byte of [0, n) (edges only if large) that does not
 * hold the pattern, or SIZE_MAX. */
size_t fz_check(const unsigned char *p, size_t n, uint32_t seed);
/* The same over the part of [0, keep) that fz_fill(p, n, 0, n) filled: what
 * a realloc to keep bytes must have kept. */
size_t fz_check_prefix(const unsigned char *p, size_t n, size_t keep,
		       uint32_t seed);
/* The first nonzero byte of [0, n) (edges only if large), or SIZE_MAX. */
size_t fz_check_zero(const unsigned char *p, size_t n);

/* The first k with [p, p + len) and [objs[k], objs[k] + lens[k]) (or
 * objs[k] + len when lens is NULL) sharing a byte, or SIZE_MAX.  Empty
 * ranges overlap nothing. */
size_t fz_overlap(const void *p, size_t len, void *const *objs,
		  const size_t *lens, size_t n);

/*
 * Under valgrind or qemu-user a request of more than FZ_HUGE_MAX bytes
 * that might succeed is not made.  The valgrind tools shadow (memcheck) or
 * annotate (helgrind, drd) every byte of a block or ring, gigabytes of them
 * for a huge one, and a replay would take minutes and gigabytes; qemu-user
 * keeps state for every guest page of a mapping, and its replay of a
 * 1 TiB reservation was OOM-killed.  The sanitizer and plain replays and
 * the fuzzers make them.  True when the target should skip a request of n
 * bytes.
 */
#define FZ_HUGE_MAX ((size_t)64 << 20)
bool fz_huge_skip(size_t n);
/* For LLVMFuzzerInitialize of a target that runs one thread: 77 (skip,
 * with the reason printed) under helgrind and drd, which look for races
 * only, else 0.  The replay of the whole corpus under each tool is minutes
 * on the project's machine; memcheck still replays it. */
int fz_single_thread(void);

/* ---- a second thread ------------------------------------------------------
 *
 * A worker runs run(job) for each job posted to it, one at a time.  Posting
 * and waiting go through a mutex, so what the poster wrote before
 * fz_worker_post() is seen by the job, and what the job wrote by the caller
 * of fz_worker_wait(): a hand-off keeps the input's order, and the model's
 * state needs no lock of its own.
 */
struct fz_worker {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	bool running;
	int job;		/* 0: idle, -1: exit */
	void (*run)(int job);
};
#define FZ_WORKER_INIT(fn) \
	{ .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .run = (fn) }
void fz_worker_start(struct fz_worker *w);
/* Hand it job (> 0) and return at once. */
void fz_worker_post(struct fz_worker *w, int job);
/* Wait until the posted job is done. */
void fz_worker_wait(struct fz_worker *w);
/* Let the thread exit (it runs its thread-exit code) and join it. */
void fz_worker_stop(struct fz_worker *w);

/* ---- reporting ---------------------------------------------------------- */
/*
 * A violation of the model: print "fuzz: <target>: <message>" and abort,
 * which libFuzzer reports as a crash with the input, and the replay as a
 * failed test.  fz_target is set by each target.
 */
extern const char *fz_target;
_Noreturn void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define FZ_CHECK(cond, ...) \
	do { if (!(cond)) fz_fail(__VA_ARGS__); } while (0)

/*
 * Known failures: a comparison that a fix pending in another issue will
 * make hold is skipped, unless FUZZ_KNOWN=1 is in the environment (which
 * make fuzz-known sets, to show that the inputs of
 * tests/fuzz/known-failures/ still fail).  Returns true when the check is
 * to be made.
 */
bool fz_strict(void);

/* With FUZZ_TRACE=1 in the environment, print one line per operation on
 * stderr (to read what an input does; slow). */
bool fz_tracing(void);
void fz_trace_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define FZ_TRACE(...) do { if (fz_tracing()) fz_trace_line(__VA_ARGS__); } while (0)

#ifdef __cplusplus
}
#endif

#endif /* JP_FUZZ_H */
