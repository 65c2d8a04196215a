/*
 * mpmc.c - the bounded multi-producer multi-consumer queue: Vyukov's ring
 * with per-slot sequence numbers, producers and consumers both claiming
 * positions with a compare-exchange.  The code is lib/mpring.h.
 */
#define JP_MPRING(x) jp_mpmc##x
#define JP_MPRING_NAME "jp_mpmc"
#define JP_MPRING_MC 1
#include "mpring.h"
