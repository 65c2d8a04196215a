/*
 * alloc-model.h - the allocator fuzz targets' model: a table of slots, each
 * empty or holding a live block, and one function that decodes an operation
 * from the input, runs it and checks the result.
 *
 * What the model checks, after every operation, against the contract of
 * jp_alloc(3) and of the preload module (README, "Running a program on
 * it"):
 *   - a live block keeps its contents: each is filled with a pattern from
 *     its slot's seed and checked when it is touched (fully for blocks up to
 *     64 KiB, the edges of larger ones);
 *   - it is at least the size asked (usable size too) and aligned as asked
 *     (16 bytes at least), and never overlaps another live block;
 *   - calloc's memory is zero; realloc keeps the common prefix, and a failed
 *     realloc keeps the block;
 *   - the errors are the documented ones: NULL with ENOMEM for sizes above
 *     PTRDIFF_MAX and for calloc/reallocarray overflow, EINVAL for
 *     alignments that are not powers of two (posix_memalign: also below
 *     sizeof(void *)), realloc(p, 0) frees p and returns NULL with errno
 *     untouched; a request of up to 64 MiB never fails;
 *   - a failed realloc leaves the block as it was: contents and usable
 *     size;
 *   - free, free_sized and free_aligned_sized leave errno as it was.
 * These rules are the same in the default mode and in check mode: the
 * answers at the edges of size_t must not depend on the mode (only the
 * usable size does: check mode's is the size asked).
 * Each call goes either through the jp_* API or through the preload
 * module's functions (preload-renamed.h), as the input chooses.
 */
#ifndef JP_FUZZ_ALLOC_MODEL_H
#define JP_FUZZ_ALLOC_MODEL_H

#include "fuzz.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FA_SLOTS 64

struct fa_slot {
	unsigned char *p;	/* NULL: empty */
	size_t size;		/* bytes the model may use and fills */
	size_t usable;		/* what the allocator said */
	size_t align;		/* alignment asked (16 at least) */
	uint32_t seed;
};

struct fa_table {
	struct fa_slot s[FA_SLOTS];
	bool check_mode;	/* JPSYNC_CHECK=1: usable size is the size asked */
	bool edges;		/* sizes and alignments from fz_size_edge and
				 * fz_align_edge, not fz_size and fz_align */
};

/*
 * Decode one operation from f and run it on the slots [lo, lo + n) of t.
 * The overlap check looks at slots [olo, olo + on) (the whole table when the
 * other thread is idle, the caller's part while both threads run).
 */
void fa_op(struct fa_table *t, struct fz *f, unsigned lo, unsigned n,
	   unsigned olo, unsigned on);
/* Check the contents of slots [lo, lo + n), and that no two of their
 * blocks overlap. */
void fa_verify(struct fa_table *t, unsigned lo, unsigned n);
/* Check and free slot i (jp_free), if it holds a block. */
void fa_release(struct fa_table *t, unsigned i);

#endif
