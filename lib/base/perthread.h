/*
 * perthread.h - per-thread records of an object (a pool's thread caches, an
 * epoch's reader records), shared by pool_cache.c and epoch.c.
 *
 * An owner (a pool, an epoch) has a hub: a lock, the list of its records
 * (one per thread that used it), and a reference count.  A record is on two
 * lists: its thread's (touched only by that thread) and its hub's (under the
 * hub's lock).  Thread exit and owner destruction may race:
 *
 *   - the owner's destroy marks the hub dead under its lock and drops the
 *     owner's reference; it never touches another thread's list;
 *   - a thread exiting (its thread_exit.h hook) takes each record's hub
 *     lock: if the hub is alive it calls the owner's thread_exit callback
 *     (the owner cannot be destroyed meanwhile: destroy needs the lock) and
 *     unlinks the record; then it drops the record's reference.
 *
 * The hub is freed by whoever drops the last reference, so a record never
 * points at freed memory, and the owner's memory is never touched after its
 * destroy.  Records of dead hubs are also swept when their thread registers
 * a new record, so a long-lived thread does not accumulate them.
 *
 * Lookup is one compare with a thread-local "last used" entry (the owner's
 * unique 64-bit id, never reused, so a new owner at the address of a
 * destroyed one cannot match a stale record), then a walk of the thread's
 * list: no lock and no atomic instruction.
 */
#ifndef JP_PERTHREAD_H
#define JP_PERTHREAD_H

#include "jp_internal.h"
#include "lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct jp__pt_rec;
struct jp__pt_hub {
	struct jp__lock lock;
	struct jp__pt_rec *recs;	/* under lock, only while alive */
	bool dead;			/* under lock */
	_Atomic unsigned refs;		/* the owner's, and one per record */
	uint64_t id;
	void *owner;
	size_t rec_size;
	/* Called on a new (zeroed) record before anyone else can see it. */
	void (*rec_init)(struct jp__pt_rec *rec);
	/* Called with the hub locked when a thread with a record exits. */
	void (*thread_exit)(void *owner, struct jp__pt_rec *rec);
};

struct jp__pt_rec {
	struct jp__pt_rec *tnext;		/* the thread's list */
	struct jp__pt_rec *onext, *oprev;	/* the hub's list, under its lock */
	struct jp__pt_hub *hub;
	uint64_t id;				/* hub->id */
};

struct jp__pt_tls {
	uint64_t id;			/* of the last record used, 0: none */
	struct jp__pt_rec *rec;
	struct jp__pt_rec *list;	/* every record of this thread */
	bool armed;			/* its thread-exit hook is armed */
};
extern __thread struct jp__pt_tls jp__pt_tls __attribute__((tls_model("initial-exec")));

/* ---- perthread.c ------------------------------------------------------- */

/* A new hub; rec_size >= sizeof(struct jp__pt_rec); NULL when out of memory. */
struct jp__pt_hub *jp__pt_hub_new(void *owner, size_t rec_size,
				  void (*rec_init)(struct jp__pt_rec *),
				  void (*thread_exit)(void *, struct jp__pt_rec *));
/* The owner is being destroyed: no callback runs after this returns. */
void jp__pt_hub_kill(struct jp__pt_hub *h);
/* The calling thread's record for h, created (zeroed, 64-byte aligned) on
 * first use; NULL when out of memory. */
struct jp__pt_rec *jp__pt_get_slow(struct jp__pt_hub *h);

static inline struct jp__pt_rec *jp__pt_get(struct jp__pt_hub *h)
{
	if (jp_likely(jp__pt_tls.id == h->id))
		return jp__pt_tls.rec;
	return jp__pt_get_slow(h);
}

#endif /* JP_PERTHREAD_H */
