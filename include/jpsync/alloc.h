/*
 * jpsync/alloc.h - jp_alloc, a fast, lean, thread-caching memory allocator.
 *
 * The functions follow the C and POSIX allocation functions of the same
 * shape (jp_alloc is malloc, jp_calloc is calloc, ...): a function that
 * returns a pointer returns NULL and sets errno (ENOMEM, EINVAL) on failure;
 * jp_posix_memalign returns the error number instead.  Every block is aligned
 * to 16 bytes at least.  Memory from these functions is released with
 * jp_free (or jp_free_sized), never with free(3), unless the program runs
 * under jpsync-run, where malloc is jp_alloc.
 *
 * Vocabulary: a "size class" is one of the block sizes the allocator hands
 * out (four per power of two, from 16 bytes to 256 KiB); a
 * request above the largest class gets a "huge" block, mapped on its own and
 * unmapped when freed.  Each thread keeps a bounded "cache" of free blocks
 * per class; jp_thread_flush gives it back.
 *
 * A pointer the allocator never handed out, or one freed twice, is reported
 * on stderr ("jpsync: invalid free of 0x...", "jpsync: double free of
 * 0x...") and the process aborts.  See jp_alloc(3).
 */
#ifndef JPSYNC_ALLOC_H
#define JPSYNC_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of struct jp_alloc_stats this header describes. */
/* 2 (1.2.0): decommits and decommit_bytes, taken from reserved[].
 * 3 (1.2.0): in_transit, span_free and orphaned, taken from reserved[]. */
#define JP_ALLOC_STATS_VERSION 3u
/* Entries of the per-class arrays of struct jp_alloc_stats. */
#define JP_ALLOC_STATS_CLASSES 64

/*
 * Statistics, filled by jp_alloc_stats().  The caller passes the size of its
 * copy of the struct; the library fills min(st_size, sizeof) bytes and sets
 * `size` to that count, so a program built against this header keeps working
 * with a later library that appends fields (they go before `reserved`, which
 * shrinks).  All byte counts are in bytes; counts of calls are since the
 * start of the process.
 */
struct jp_alloc_stats {
	size_t size;		/* bytes of this struct the library filled */
	uint32_t version;	/* JP_ALLOC_STATS_VERSION of the library */
	uint32_t nclasses;	/* size classes: valid entries of class_* */
	uint64_t in_use;	/* bytes of blocks handed out and not freed */
	uint64_t peak_in_use;	/* highest in_use seen (sampled, see page) */
	uint64_t mapped;	/* bytes of address space mapped from the OS */
	uint64_t peak_mapped;	/* highest mapped */
	uint64_t cached;	/* bytes of free blocks held in thread caches */
	uint64_t trimmed;	/* bytes given back to the OS (madvise, trim) */
	uint64_t huge_count;	/* live blocks above the largest class */
	uint64_t huge_bytes;	/* bytes mapped for them */
	uint64_t allocs;	/* blocks handed out */
	uint64_t frees;		/* blocks freed */
	uint64_t cache_hits;	/* allocations served by the thread cache */
	uint64_t cache_misses;	/* allocations that refilled the cache */
	uint64_t threads;	/* threads with a live cache */
	uint64_t class_size[JP_ALLOC_STATS_CLASSES];   /* block size of class */
	uint64_t class_allocs[JP_ALLOC_STATS_CLASSES]; /* blocks handed out */
	uint64_t class_frees[JP_ALLOC_STATS_CLASSES];  /* blocks freed */
	/* Version 2 on (zero from a version 1 library): */
	uint64_t decommits;	/* madvise calls that gave pages back (count) */
	uint64_t decommit_bytes; /* the bytes of those calls */
	/* Version 3 on: free memory between its owners (see page). */
	uint64_t in_transit;	/* free blocks on the shared transfer chains */
	uint64_t span_free;	/* free blocks in spans, outside the caches */
	uint64_t orphaned;	/* of those two, in shards no live thread uses */
	uint64_t reserved[11];	/* zero; room for later fields */
};

/* malloc: NULL and ENOMEM when out of memory.  jp_alloc(0) is unique. */
void *jp_alloc(size_t size);
/* calloc: zeroed; NULL and ENOMEM also when nmemb * size overflows. */
void *jp_calloc(size_t nmemb, size_t size);
/* realloc: ptr NULL is jp_alloc(size); size 0 frees ptr and returns NULL,
 * errno untouched (as glibc); on failure ptr is left intact. */
void *jp_realloc(void *ptr, size_t size);
/* reallocarray: jp_realloc(ptr, nmemb * size), ENOMEM on overflow. */
void *jp_reallocarray(void *ptr, size_t nmemb, size_t size);
/* free: ptr NULL does nothing. */
void jp_free(void *ptr);
/* free with the size given at allocation (or any size up to usable size). */
void jp_free_sized(void *ptr, size_t size);
/* aligned_alloc: alignment a power of two, else NULL and EINVAL. */
void *jp_alloc_aligned(size_t alignment, size_t size);
/* posix_memalign: 0, EINVAL (alignment not a power of two multiple of
 * sizeof(void *)), ENOMEM. */
int jp_posix_memalign(void **memptr, size_t alignment, size_t size);
/* malloc_usable_size: bytes usable in the block; 0 for NULL. */
size_t jp_usable_size(const void *ptr);
/* The usable size jp_alloc(size) would give (0 when size is too large). */
size_t jp_good_size(size_t size);
/* Give every free page back to the OS now; returns the bytes given back. */
size_t jp_alloc_trim(void);
/* Fill *st (st_size bytes of it); 0, or EINVAL for NULL or st_size too small. */
int jp_alloc_stats(struct jp_alloc_stats *st, size_t st_size);
/* Write a readable table of the statistics to fd; 0 or an errno value. */
int jp_alloc_stats_print(int fd);
/* Return the calling thread's cached free blocks to the shared lists. */
void jp_thread_flush(void);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_ALLOC_H */
