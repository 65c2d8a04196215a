/*
 * stats.h - the statistics: what alloc_stats.c owns (gathering
 * struct jp_alloc_stats from each layer's state and counts, the JPSYNC_STATS
 * report at exit and on a signal) and what stats_table.c owns (printing
 * the table).
 */
#ifndef JP_STATS_H
#define JP_STATS_H

#include "base/jp_internal.h"

#include <jpsync/alloc.h>

#include <stdbool.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

struct jp_heap;

/* ---- "alloc_stats.c" -------------------------------------------------- */

void jp__stats_collect(struct jp_alloc_stats *st, uint64_t *class_miss);
/* The same from the stats signal's handler (interrupted): false, and *st
 * partly filled, when the interrupted code holds a lock it needs. */
bool jp__stats_gather(struct jp_alloc_stats *st, uint64_t *class_miss, bool interrupted);
void jp__stats_init(void);	/* at start: keep a copy of stderr */

/* ---- "stats_table.c" -------------------------------------------------- */

/* The table into fd, as text or JSON (JP_STATS_TEXT, JP_STATS_JSON): 0 or
 * errno; interrupted, a one-line note when the figures cannot be had. */
int jp__stats_print(int fd, bool interrupted, int format);

#pragma GCC visibility pop

#endif /* JP_STATS_H */
