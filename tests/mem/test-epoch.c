/* test-epoch.c - jp_epoch. */
#include <jpsync/epoch.h>
#include <jpsync/hammer.h>

#include "testutil.h"
#include "base/jp_internal.h"	/* JP_HB_BEFORE/AFTER for the test's own publication */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIVE 0x11feu
#define DEAD 0xdeadu

struct obj {
	_Atomic unsigned magic;	/* atomic: the poison store races with nothing
				 * when the epoch works, and is reported when not */
	uint64_t payload[4];
};

static _Atomic uint64_t freed;

static void poison_free(void *p)
{
	struct obj *o = p;

	atomic_store_explicit(&o->magic, DEAD, memory_order_relaxed);
	memset(o->payload, 0xdd, sizeof o->payload);
	atomic_fetch_add(&freed, 1);
	free(o);
}

static struct obj *new_obj(uint64_t v)
{
	struct obj *o = malloc(sizeof *o);

	atomic_init(&o->magic, LIVE);
	for (int i = 0; i < 4; i++)
		o->payload[i] = v;
	return o;
}

static void test_barrier_runs_retired(void)
{
	jp_epoch_t *e = jp_epoch_create();

	CU_ASSERT_FATAL(e != NULL);
	atomic_store(&freed, 0);
	jp_epoch_enter(e);
	jp_epoch_enter(e);	/* nests */
	jp_epoch_exit(e);
	jp_epoch_exit(e);
	for (int i = 0; i < 10; i++)
		jp_epoch_retire(e, new_obj(i), poison_free);
	jp_epoch_barrier(e);
	CU_ASSERT_EQUAL(atomic_load(&freed), 10);
	jp_epoch_barrier(e);
	CU_ASSERT_EQUAL(atomic_load(&freed), 10);
	jp_epoch_synchronize(e);
	jp_epoch_retire(e, malloc(16), NULL);	/* NULL: free() */
	jp_epoch_retire(e, new_obj(1), poison_free);
	jp_epoch_destroy(e);			/* runs what is pending */
	CU_ASSERT_EQUAL(atomic_load(&freed), 11);
	jp_epoch_destroy(NULL);
}

/* Readers dereference the shared pointer while writers swap and retire it. */
struct swap {
	jp_epoch_t *e;
	_Atomic(struct obj *) cur;
	unsigned writers;
	_Atomic uint64_t bad, retired;
};

static void swap_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct swap *s = ctx;

	if (thread < s->writers) {
		struct obj *n = new_obj(iter), *old;

		/* seq_cst exchange: the unlink; retire orders it before its scan. */
		JP_HB_BEFORE(n);	/* helgrind does not see atomics as sync */
		old = atomic_exchange(&s->cur, n);
		jp_epoch_retire(s->e, old, poison_free);
		atomic_fetch_add(&s->retired, 1);
		if (iter % 512 == 511)
			jp_epoch_synchronize(s->e);
		return;
	}
	jp_epoch_enter(s->e);
	for (int k = 0; k < 4; k++) {
		struct obj *o = atomic_load_explicit(&s->cur, memory_order_acquire);
		JP_HB_AFTER(o);
		uint64_t v = o->payload[0];

		if (atomic_load_explicit(&o->magic, memory_order_relaxed) != LIVE)
			atomic_fetch_add(&s->bad, 1);
		for (int i = 1; i < 4; i++)
			if (o->payload[i] != v)
				atomic_fetch_add(&s->bad, 1);
		if (k == 1)
			sched_yield();	/* stay inside while writers retire */
	}
	jp_epoch_exit(s->e);
}

static void test_readers_never_see_freed(void)
{
	struct swap s;

	memset(&s, 0, sizeof s);
	atomic_store(&freed, 0);
	s.e = jp_epoch_create();
	CU_ASSERT_FATAL(s.e != NULL);
	atomic_init(&s.cur, new_obj(0));
	s.writers = 2;
	CU_ASSERT_EQUAL(jp_hammer(6, jp_test_scaled(20000, 200), swap_body, &s), 0);
	CU_ASSERT_EQUAL(atomic_load(&s.bad), 0);
	jp_epoch_barrier(s.e);
	/* Every retired object freed exactly once (the hammer threads exited,
	 * their pending ones went to the epoch and barrier ran them). */
	CU_ASSERT_EQUAL(atomic_load(&freed), atomic_load(&s.retired));
	free(atomic_load(&s.cur));
	jp_epoch_destroy(s.e);
}

/* Each callback counts its own calls: exactly once, whoever retired it. */
static _Atomic unsigned *calls;

static void count_call(void *p)
{
	atomic_fetch_add(&calls[(uintptr_t)p], 1);
}

struct many {
	jp_epoch_t *e;
	uint64_t per;
};

static void retire_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct many *m = ctx;

	jp_epoch_enter(m->e);
	jp_epoch_retire(m->e, (void *)(uintptr_t)(thread * m->per + iter), count_call);
	jp_epoch_exit(m->e);
}

static void test_barrier_exactly_once(void)
{
	struct many m;
	unsigned threads = 5;
	uint64_t bad = 0;

	m.per = jp_test_scaled(5000, 100);
	m.e = jp_epoch_create();
	calls = calloc(threads * m.per, sizeof *calls);
	CU_ASSERT_FATAL(m.e != NULL && calls != NULL);
	CU_ASSERT_EQUAL(jp_hammer(threads, m.per, retire_body, &m), 0);
	jp_epoch_barrier(m.e);
	for (uint64_t i = 0; i < threads * m.per; i++)
		bad += atomic_load(&calls[i]) != 1;
	CU_ASSERT_EQUAL(bad, 0);
	jp_epoch_destroy(m.e);
	for (uint64_t i = 0; i < threads * m.per; i++)
		bad += atomic_load(&calls[i]) != 1;
	CU_ASSERT_EQUAL(bad, 0);
	free(calls);
}

/* synchronize waits for a reader that was inside at the call. */
struct inside {
	jp_epoch_t *e;
	_Atomic int entered, left;
};

static void *slow_reader(void *arg)
{
	struct inside *in = arg;

	jp_epoch_enter(in->e);
	atomic_store(&in->entered, 1);
	usleep(50000);
	atomic_store(&in->left, 1);
	jp_epoch_exit(in->e);
	return NULL;
}

static void test_synchronize_waits(void)
{
	struct inside in;
	pthread_t t;

	memset(&in, 0, sizeof in);
	in.e = jp_epoch_create();
	CU_ASSERT_FATAL(in.e != NULL);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, slow_reader, &in) == 0);
	while (!atomic_load(&in.entered))
		sched_yield();
	jp_epoch_synchronize(in.e);
	CU_ASSERT_EQUAL(atomic_load(&in.left), 1);
	pthread_join(t, NULL);
	jp_epoch_destroy(in.e);
}

/* An epoch destroyed while threads that used it are still alive. */
struct outlive {
	jp_epoch_t *e;
	pthread_barrier_t used, destroyed;
};

static void *use_then_wait(void *arg)
{
	struct outlive *o = arg;

	jp_epoch_enter(o->e);
	jp_epoch_exit(o->e);
	pthread_barrier_wait(&o->used);
	pthread_barrier_wait(&o->destroyed);
	return NULL;	/* thread exit must not touch the destroyed epoch */
}

static void test_destroy_before_thread_exit(void)
{
	struct outlive o;
	pthread_t t[3];

	o.e = jp_epoch_create();
	CU_ASSERT_FATAL(o.e != NULL);
	pthread_barrier_init(&o.used, NULL, 4);
	pthread_barrier_init(&o.destroyed, NULL, 4);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_FATAL(pthread_create(&t[i], NULL, use_then_wait, &o) == 0);
	pthread_barrier_wait(&o.used);
	jp_epoch_destroy(o.e);
	pthread_barrier_wait(&o.destroyed);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&o.used);
	pthread_barrier_destroy(&o.destroyed);
}

static void exit_unbalanced(void *arg)
{
	jp_epoch_t *e = jp_epoch_create();
	(void)arg;
	jp_epoch_exit(e);
}

static void sync_inside(void *arg)
{
	jp_epoch_t *e = jp_epoch_create();
	(void)arg;
	jp_epoch_enter(e);
	jp_epoch_synchronize(e);
}

static void test_misuse_aborts(void)
{
	struct jp_child_result r;

	CU_ASSERT_FATAL(jp_test_child(exit_unbalanced, NULL, &r) == 0);
	CU_ASSERT(r.signaled && r.sig == SIGABRT);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "jp_epoch_exit without jp_epoch_enter"));
	CU_ASSERT_FATAL(jp_test_child(sync_inside, NULL, &r) == 0);
	CU_ASSERT(r.signaled && r.sig == SIGABRT);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "jp_epoch_synchronize inside"));
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "barrier runs retired callbacks, enter/exit nest", test_barrier_runs_retired },
		{ "readers never see freed memory", test_readers_never_see_freed },
		{ "barrier runs every callback exactly once", test_barrier_exactly_once },
		{ "synchronize waits for readers inside", test_synchronize_waits },
		{ "epoch destroyed before its threads exit", test_destroy_before_thread_exit },
		{ "misuse aborts with a message", test_misuse_aborts },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "epoch", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};
	return jp_test_run(suites);
}
