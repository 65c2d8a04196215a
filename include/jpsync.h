/*
 * jpsync.h - libjpsync: allocator and concurrency primitives for Linux.
 *
 * Include this header for everything, or one of the component headers under
 * <jpsync/> for a part.  Link with -ljpsync (pkg-config --libs jpsync).
 */
#ifndef JPSYNC_H
#define JPSYNC_H

#include <jpsync/version.h>
#include <jpsync/hammer.h>
#include <jpsync/deadline.h>

/* allocator */
#include <jpsync/alloc.h>

/* synchronisation */
#include <jpsync/mutex.h>
#include <jpsync/wait.h>
#include <jpsync/rwlock.h>
#include <jpsync/sem.h>
#include <jpsync/barrier.h>

/* data flow */
#include <jpsync/queue.h>
#include <jpsync/pool.h>
#include <jpsync/epoch.h>


#endif /* JPSYNC_H */
