/*
 * counter.h - how the statistics read a count that one thread (or the
 * holder of one lock) writes: JP_CNT_LOAD, JP_CNT_SET, JP_CNT_ADD.  Used on
 * the bins' counts (tcache.c, prof.c), the transfer chains' (central.c) and
 * by their reader (alloc_stats.c).  Macros only: nothing defines them.
 *
 * Relaxed atomics under ThreadSanitizer, plain accesses otherwise (an
 * aligned 64-bit load or store does not tear on the targets we build for,
 * and a slightly stale count is fine in a statistic).
 */
#ifndef JP_COUNTER_H
#define JP_COUNTER_H

#include "base/jp_internal.h"	/* JP_TSAN */

#ifdef JP_TSAN
# define JP_CNT_LOAD(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
# define JP_CNT_SET(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#else
# define JP_CNT_LOAD(x)		(x)
# define JP_CNT_SET(x, v)	((x) = (v))
#endif
#define JP_CNT_ADD(x, v)	JP_CNT_SET(x, JP_CNT_LOAD(x) + (v))

#endif /* JP_COUNTER_H */
