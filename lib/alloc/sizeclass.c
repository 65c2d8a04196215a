/*
 * sizeclass.c - the size classes: what each class is (block size, span
 * length, blocks per span) and the table that maps a request of up to
 * JP_LOOKUP_MAX bytes to its bin (the role of jemalloc's sc.c and sz.c).
 * The formulas themselves are inline in sizeclass.h.
 */
#include "segment.h"
#include "sizeclass.h"

struct jp_class jp__classes[JP_NCLASSES];

/* Bin offsets by request size, for sizes up to JP_LOOKUP_MAX: indexed by
 * the size itself, so that jp_alloc needs no rounding before the load.
 * Built by the compiler: jp_alloc reads it before any initialisation. */
#define L(i) ((uint16_t)(JP_SIZE_CLASS_C((i) * 16ull) * JP_BIN_BYTES))
#define X16(i) L(i), L(i), L(i), L(i), L(i), L(i), L(i), L(i), \
	L(i), L(i), L(i), L(i), L(i), L(i), L(i), L(i)
const uint16_t jp__class_lookup[JP_LOOKUP_MAX + 1] = {
	L(0), X16(1), X16(2), X16(3), X16(4), X16(5), X16(6), X16(7),
	X16(8), X16(9), X16(10), X16(11), X16(12), X16(13), X16(14),
	X16(15), X16(16), X16(17), X16(18), X16(19), X16(20), X16(21),
	X16(22), X16(23), X16(24), X16(25), X16(26), X16(27), X16(28),
	X16(29), X16(30), X16(31), X16(32), X16(33), X16(34), X16(35),
	X16(36), X16(37), X16(38), X16(39), X16(40), X16(41), X16(42),
	X16(43), X16(44), X16(45), X16(46), X16(47), X16(48), X16(49),
	X16(50), X16(51), X16(52), X16(53), X16(54), X16(55), X16(56),
	X16(57), X16(58), X16(59), X16(60), X16(61), X16(62), X16(63),
	X16(64)
};
#undef X16
#undef L

void jp__sizeclass_init(void)
{
	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		struct jp_class *k = &jp__classes[c];
		size_t bs = jp__class_size(c);

		k->bsize = (uint32_t)bs;
		/* Spans of blocks up to 8 KiB are one slice; bigger blocks get
		 * spans of about 8 blocks, at most JP_SPAN_MAX_SLICES. */
		if (bs <= 8192)
			k->nslices = 1;
		else {
			k->nslices = (uint32_t)((bs * 8 + JP_SLICE_SIZE - 1) / JP_SLICE_SIZE);
			if (k->nslices > JP_SPAN_MAX_SLICES)
				k->nslices = JP_SPAN_MAX_SLICES;
		}
		k->nblocks = (uint32_t)((size_t)k->nslices * JP_SLICE_SIZE / bs);
	}
}
