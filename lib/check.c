/*
 * check.c - JPSYNC_CHECK: every small block gets a header and a canary,
 * and every free checks them.
 *
 * A checked block is [requested size][CHECK_MAGIC][user data][canary ...]
 * in a block of a class big enough for the request plus CHECK_EXTRA bytes.
 * A free checks that the header is intact and that the canary bytes past
 * the requested size are untouched ("overflow past the end"), then fills
 * the block with CHECK_FILL; the next allocation of the block checks that
 * the fill is intact ("write after free").  The thread caches are off in
 * check mode (jp__ag.nocache), so every block goes back to its span at
 * once and double frees are found by the span's free list.
 */
#include "alloc_internal.h"

#include <string.h>

#define CHECK_HDR	16
#define CHECK_EXTRA	(JP_MAX_SMALL - JP_CHECK_MAX)	/* header + 8 canary bytes */
#define CHECK_MAGIC	((uintptr_t)0x6a7063686b6c6976ULL)
#define CHECK_FILL	0xdf	/* freed blocks */
#define CHECK_CANARY	0xab	/* past the requested size */

_Static_assert(CHECK_EXTRA >= CHECK_HDR + 8, "room for header and canary");

void *jp__check_alloc(struct jp_heap *h, size_t n)
{
	uint32_t cls = jp__size_class(n + CHECK_EXTRA);
	size_t bs = jp__class_size(cls);
	unsigned char *blk = jp__class_alloc(h, cls);

	if (blk == NULL)
		return NULL;
	if (((uintptr_t *)blk)[1] == jp__ag.key) {
		/* It was freed with JPSYNC_CHECK: still all fill? */
		for (size_t i = CHECK_HDR; i < bs; i++)
			if (blk[i] != CHECK_FILL)
				jp__die_ptr("write after free", blk + CHECK_HDR);
	}
	((uintptr_t *)blk)[0] = n;
	((uintptr_t *)blk)[1] = CHECK_MAGIC;
	memset(blk + CHECK_HDR + n, CHECK_CANARY, bs - CHECK_HDR - n);
	return blk + CHECK_HDR;
}

unsigned char *jp__check_block(struct jp_span *s, uintptr_t a)
{
	if (!jp__ag.check || a - CHECK_HDR < jp__span_start(s) ||
	    !jp__is_block(s, a - CHECK_HDR))
		return NULL;
	return (unsigned char *)(a - CHECK_HDR);
}

size_t jp__check_size(const unsigned char *blk)
{
	if (((const uintptr_t *)blk)[1] != CHECK_MAGIC)
		return SIZE_MAX;
	return ((const uintptr_t *)blk)[0];
}

bool jp__check_is_header(const void *p)
{
	return jp__ag.check && ((const uintptr_t *)p)[1] == CHECK_MAGIC;
}

void jp__check_free(unsigned char *blk, struct jp_span *s)
{
	unsigned char *p = blk + CHECK_HDR;
	uintptr_t w1 = ((uintptr_t *)blk)[1];
	size_t n = ((uintptr_t *)blk)[0], bs = s->bsize;

	if (w1 == jp__ag.key && jp__block_is_free(jp__tls_heap, blk, s))
		jp__die_ptr("double free", p);
	if (w1 != CHECK_MAGIC || n > bs - CHECK_EXTRA)
		jp__die_ptr("invalid free", p);
	for (size_t i = CHECK_HDR + n; i < bs; i++)
		if (blk[i] != CHECK_CANARY)
			jp__die_ptr("overflow past the end", p);
	memset(blk + CHECK_HDR, CHECK_FILL, bs - CHECK_HDR);
	jp__free_block(jp__heap_get(), blk, s);
}
