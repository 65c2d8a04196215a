/*
 * perthread.c - per-thread records of pools and epochs, returned when their
 * thread exits.  See perthread.h for the protocol.
 */
#include "perthread.h"
#include "thread_exit.h"

#include <stdlib.h>
#include <string.h>

__thread struct jp__pt_tls jp__pt_tls __attribute__((tls_model("initial-exec")));

static _Atomic uint64_t pt_next_id = 1;

static void hub_unref(struct jp__pt_hub *h)
{
	if (atomic_fetch_sub(&h->refs, 1) == 1)
		free(h);
}

static void hub_unlink(struct jp__pt_hub *h, struct jp__pt_rec *r)
{
	if (r->oprev != NULL)
		r->oprev->onext = r->onext;
	else
		h->recs = r->onext;
	if (r->onext != NULL)
		r->onext->oprev = r->oprev;
}

/* The thread-exit hook (thread_exit.h): give every record of this
 * thread back. */
static void pt_thread_exit(void *arg)
{
	struct jp__pt_rec *r = jp__pt_tls.list;

	(void)arg;
	jp__pt_tls.list = NULL;
	jp__pt_tls.id = 0;
	jp__pt_tls.rec = NULL;
	jp__pt_tls.armed = false;
	while (r != NULL) {
		struct jp__pt_rec *next = r->tnext;
		struct jp__pt_hub *h = r->hub;

		jp__lock(&h->lock);
		if (!h->dead) {
			h->thread_exit(h->owner, r);
			hub_unlink(h, r);
		}
		jp__unlock(&h->lock);
		hub_unref(h);
		free(r);
		r = next;
	}
}

struct jp__pt_hub *jp__pt_hub_new(void *owner, size_t rec_size,
				  void (*rec_init)(struct jp__pt_rec *),
				  void (*thread_exit)(void *, struct jp__pt_rec *))
{
	struct jp__pt_hub *h = calloc(1, sizeof *h);

	if (h == NULL)
		return NULL;
	jp__lock_init(&h->lock);
	atomic_init(&h->refs, 1);
	h->id = atomic_fetch_add_explicit(&pt_next_id, 1, memory_order_relaxed);	/* only uniqueness matters */
	h->owner = owner;
	h->rec_size = rec_size;
	h->rec_init = rec_init;
	h->thread_exit = thread_exit;
	return h;
}

void jp__pt_hub_kill(struct jp__pt_hub *h)
{
	struct jp__pt_rec **pp = &jp__pt_tls.list;

	jp__lock(&h->lock);
	h->dead = true;
	h->recs = NULL;
	jp__unlock(&h->lock);
	/* The caller's own record can go now; other threads sweep theirs. */
	while (*pp != NULL) {
		struct jp__pt_rec *r = *pp;

		if (r->hub == h) {
			*pp = r->tnext;
			hub_unref(h);
			free(r);
		} else {
			pp = &r->tnext;
		}
	}
	if (jp__pt_tls.id == h->id) {
		jp__pt_tls.id = 0;
		jp__pt_tls.rec = NULL;
	}
	hub_unref(h);
}

/* Free this thread's records whose owner is gone. */
static void sweep(void)
{
	struct jp__pt_rec **pp = &jp__pt_tls.list;

	while (*pp != NULL) {
		struct jp__pt_rec *r = *pp;
		bool dead;

		jp__lock(&r->hub->lock);
		dead = r->hub->dead;
		jp__unlock(&r->hub->lock);
		if (dead) {
			*pp = r->tnext;
			hub_unref(r->hub);
			free(r);
		} else {
			pp = &r->tnext;
		}
	}
}

struct jp__pt_rec *jp__pt_get_slow(struct jp__pt_hub *h)
{
	struct jp__pt_rec *r;
	void *m;

	for (r = jp__pt_tls.list; r != NULL; r = r->tnext) {
		if (r->id == h->id) {
			jp__pt_tls.id = h->id;
			jp__pt_tls.rec = r;
			return r;
		}
	}
	if (!jp__pt_tls.armed) {
		if (jp__thread_exit_arm(JP__EXIT_PERTHREAD, pt_thread_exit, &jp__pt_tls) != 0)
			return NULL;
		jp__pt_tls.armed = true;
	}
	sweep();
	if (posix_memalign(&m, JP_CACHELINE, h->rec_size) != 0)
		return NULL;
	memset(m, 0, h->rec_size);
	r = m;
	r->hub = h;
	r->id = h->id;
	if (h->rec_init != NULL)
		h->rec_init(r);
	atomic_fetch_add(&h->refs, 1);
	jp__lock(&h->lock);
	r->onext = h->recs;
	if (h->recs != NULL)
		h->recs->oprev = r;
	h->recs = r;
	jp__unlock(&h->lock);
	r->tnext = jp__pt_tls.list;
	jp__pt_tls.list = r;
	jp__pt_tls.id = h->id;
	jp__pt_tls.rec = r;
	return r;
}
