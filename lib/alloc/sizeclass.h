/*
 * sizeclass.h - the size classes: how many there are, the size of each,
 * the class of a request (inline, from one formula) and the per-class
 * table that sizeclass.c fills at start (jp__classes) and the lookup table
 * it defines, built by the compiler (jp__class_lookup).
 *
 * A class is one of JP_NCLASSES block sizes, four per power of two, 16
 * bytes apart at least, all multiples of 16 (16 ... 256 KiB).
 */
#ifndef JP_SIZECLASS_H
#define JP_SIZECLASS_H

#include "base/jp_internal.h"

#include <stdbool.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

#define JP_NCLASSES	52
#define JP_MAX_SMALL	((size_t)256 << 10)	/* the largest class */
#define JP_LOOKUP_MAX	1024	/* classes of sizes up to this by table */
#define JP_BIN_BLOCK_MAX ((size_t)32 << 10)	/* bigger blocks are not cached */
/* The size of a thread cache's bin (struct jp_bin, tcache.h, which
 * asserts it): bin offsets, which the fast path reads from the lookup
 * table and from a span, are class * JP_BIN_BYTES: a pointer and four
 * 64-bit words' worth of counts. */
#define JP_BIN_BYTES	((uint32_t)sizeof(void *) + 32)

struct jp_class {		/* what a class is (set at start) */
	uint32_t bsize;
	uint32_t nslices;	/* per span */
	uint32_t nblocks;	/* per span */
};

extern struct jp_class jp__classes[JP_NCLASSES];
extern const uint16_t jp__class_lookup[JP_LOOKUP_MAX + 1];	/* bin offsets */
void jp__sizeclass_init(void);

/*
 * The size class of n as a constant expression, so that the lookup table
 * (which the fast path of jp_alloc reads before any initialisation, so it
 * must not be written at run time) is built by the compiler from the same
 * formula as jp__size_class.  (n - 1) | 1: the same top bit, and never 0.
 */
#define JP_MSB_C(x)	(63 - __builtin_clzll((unsigned long long)(x)))
#define JP_SIZE_CLASS_C(n) \
	((n) <= 64 ? ((n) == 0 ? 0u : (unsigned)(((n) - 1) >> 4)) : \
	 (unsigned)(4 * (JP_MSB_C(((n) - 1) | 1) - 6) + \
		    (((n) - 1) >> (JP_MSB_C(((n) - 1) | 1) - 2))))

/* The class of a request of n bytes: 16 bytes apart up to 64, then four
 * per power of two (2^b < n <= 2^(b+1)). */
static inline uint32_t jp__size_class(size_t n)
{
	return JP_SIZE_CLASS_C(n);
}

static inline size_t jp__class_size(uint32_t cls)
{
	if (cls < 4)
		return 16 * (size_t)(cls + 1);
	return (size_t)(cls % 4 + 5) << (cls / 4 + 3);
}

/* Smallest class that holds size bytes aligned to align (<= 64 KiB), or
 * JP_NCLASSES.  Spans start at 64 KiB boundaries, so block k of a class
 * sits at k * bsize from one: aligned to the power of two that divides
 * bsize. */
static inline uint32_t jp__aligned_class(size_t size, size_t align)
{
	uint32_t cls = jp__size_class(size < align ? align : size);

	while (cls < JP_NCLASSES && (jp__class_size(cls) & (align - 1)) != 0)
		cls++;
	return cls;
}

#pragma GCC visibility pop

#endif /* JP_SIZECLASS_H */
