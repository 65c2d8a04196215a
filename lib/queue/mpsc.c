/*
 * mpsc.c - the bounded multi-producer single-consumer queue: Vyukov's ring
 * with per-slot sequence numbers; the one consumer owns head and moves it
 * with a plain store, no compare-exchange.  The code is lib/mpring.h.
 */
#define JP_MPRING(x) jp_mpsc##x
#define JP_MPRING_NAME "jp_mpsc"
#define JP_MPRING_MC 0
#include "mpring.h"
