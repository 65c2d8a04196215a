/*
 * test-misuse.c - misuse of jp_mutex, jp_cond, jp_rwlock and jp_pool is
 * reported (one line naming the call and the object, then abort), and
 * correct use is not, by default and under JPSYNC_CHECK=1 (white-box: the
 * owner checks are turned on in a child with jp__sync_force_check, and
 * once through the environment, as a user would).
 *
 * By default (what costs the fast path nothing): destroy of a locked
 * mutex or of a held or waited-for rwlock, unlock of a mutex that is not
 * locked, a cond wait with a mutex that is not locked.  Under
 * JPSYNC_CHECK=1 also: unlock by a thread that does not hold the mutex,
 * or that holds neither lock of the rwlock, a cond wait with a mutex
 * another thread holds, a double jp_pool_put.
 */
#include <jpsync/hammer.h>
#include <jpsync/mutex.h>
#include <jpsync/pool.h>
#include <jpsync/rwlock.h>

#include "sync/sync.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char self_path[4096];

/* The report, exactly as the library writes it, for obj (and obj2). */
static void expect_line(char *buf, size_t cap, const char *call, const void *obj,
			const void *obj2, const char *why)
{
	if (obj2 != NULL)
		snprintf(buf, cap, "jpsync: %s(%p, %p): %s\n", call, obj, obj2, why);
	else
		snprintf(buf, cap, "jpsync: %s(%p): %s\n", call, obj, why);
}

/* The child was killed by SIGABRT after writing exactly that one line. */
static void assert_reported(const struct jp_child_result *r, const char *call, const void *obj,
			    const void *obj2, const char *why)
{
	char want[256];
	const char *first;

	expect_line(want, sizeof want, call, obj, obj2, why);
	CU_ASSERT(r->signaled && r->sig == SIGABRT);
	CU_ASSERT_PTR_NOT_NULL(strstr(r->err, want));
	/* One line, and nothing from the library besides it. */
	first = strstr(r->err, "jpsync: ");
	CU_ASSERT(first != NULL && strstr(first + 1, "jpsync: ") == NULL);
	if (strstr(r->err, want) == NULL)
		fprintf(stderr, "\n  wanted: %s  got: %s\n", want, r->err);
}

static void assert_silent(const struct jp_child_result *r)
{
	CU_ASSERT(r->exited && r->status == 0);
	CU_ASSERT_STRING_EQUAL(r->err, "");
	if (!r->exited || r->status != 0 || r->err[0] != '\0')
		fprintf(stderr, "\n  exited %d status %d signal %d: %s\n", r->exited, r->status,
			r->sig, r->err);
}

static jp_mutex_t m1 = JP_MUTEX_INIT, m2 = JP_MUTEX_INIT;
static jp_cond_t c1 = JP_COND_INIT;
static jp_rwlock_t rw1 = JP_RWLOCK_INIT, rw2 = JP_RWLOCK_INIT;

/* ---- by default ---------------------------------------------------------- */

static void child_destroy_locked(void *arg)
{
	(void)arg;
	jp_mutex_lock(&m1);
	jp_mutex_destroy(&m1);
}

static void test_destroy_locked(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_destroy_locked, NULL, &r), 0);
	assert_reported(&r, "jp_mutex_destroy", &m1, NULL, "locked");
}

static void child_unlock_free(void *arg)
{
	(void)arg;
	jp_mutex_lock(&m1);
	jp_mutex_unlock(&m1);
	jp_mutex_unlock(&m1);	/* the second: nobody holds it */
}

static void test_unlock_not_locked(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_unlock_free, NULL, &r), 0);
	assert_reported(&r, "jp_mutex_unlock", &m1, NULL, "not locked");
}

static void child_wait_unlocked(void *arg)
{
	struct timespec ts;

	alarm(20);	/* without the check the wait would never end */
	if (arg != NULL) {
		jp_test_deadline_ms(&ts, 10);
		jp_cond_timedwait(&c1, &m1, &ts);
	} else {
		jp_cond_wait(&c1, &m1);		/* would hang or unlock nothing */
	}
}

static void test_cond_wait_unlocked(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_wait_unlocked, NULL, &r), 0);
	assert_reported(&r, "jp_cond_wait", &c1, &m1, "the mutex is not locked");
	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_wait_unlocked, &r, &r), 0);
	assert_reported(&r, "jp_cond_timedwait", &c1, &m1, "the mutex is not locked");
}

static _Atomic int held, release;

/* A thread that takes m1 ("mutex"), or rw1 ("read", "write"), until release. */
static void *hold(void *arg)
{
	int mutex = strcmp(arg, "mutex") == 0, read = strcmp(arg, "read") == 0;

	if (mutex)
		jp_mutex_lock(&m1);
	else if (read)
		jp_rwlock_rdlock(&rw1);
	else
		jp_rwlock_wrlock(&rw1);
	atomic_store(&held, 1);
	while (!atomic_load(&release))
		usleep(1000);
	if (mutex)
		jp_mutex_unlock(&m1);
	else
		jp_rwlock_unlock(&rw1);
	return NULL;
}

/* arg: "read" or "write" (held by this thread), "waited" (a reader waits). */
static void child_rw_destroy_locked(void *arg)
{
	pthread_t t;

	alarm(20);
	if (strcmp(arg, "read") == 0) {
		jp_rwlock_rdlock(&rw1);
	} else if (strcmp(arg, "write") == 0) {
		jp_rwlock_wrlock(&rw1);
	} else {
		/* Held for writing by this thread, a reader waiting for it. */
		jp_rwlock_wrlock(&rw1);
		if (pthread_create(&t, NULL, hold, (void *)"read") != 0)
			return;
		usleep(20000);
	}
	jp_rwlock_destroy(&rw1);
	fprintf(stderr, "the destroy returned\n");
}

static void test_rwlock_destroy_locked(void)
{
	static const char *const how[] = { "read", "write", "waited" };
	struct jp_child_result r;

	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(jp_test_child(child_rw_destroy_locked, (void *)how[i], &r), 0);
		assert_reported(&r, "jp_rwlock_destroy", &rw1, NULL, "locked");
	}
}

/* ---- under JPSYNC_CHECK=1 ---------------------------------------------- */


/* Another thread holds m1 while this one misuses it; what: how. */
static void other_holds(const char *what)
{
	pthread_t t;

	alarm(20);	/* without the check a wait would never end */
	if (pthread_create(&t, NULL, hold, (void *)"mutex") != 0)
		return;
	while (!atomic_load(&held))
		usleep(1000);
	if (strcmp(what, "unlock") == 0)
		jp_mutex_unlock(&m1);
	else
		jp_cond_wait(&c1, &m1);
	atomic_store(&release, 1);
	pthread_join(t, NULL);
	fprintf(stderr, "the misuse returned\n");
}

static void child_other_holds(void *arg)
{
	jp__sync_force_check(true);
	other_holds(arg);
}

/* Lockdep keeps the same held stacks: the wait is refused there too. */
static void child_other_holds_lockdep(void *arg)
{
	jp__sync_force_lockdep(true);
	other_holds(arg);
}

/*
 * Under lockdep alone, an unlock of a mutex another thread holds is
 * reported and releases nothing: the holder keeps it (a trylock here
 * fails) and its own unlock later works.  It used to release the mutex,
 * and the holder's unlock then aborted with "not locked".
 */
static void child_unlock_lockdep(void *arg)
{
	pthread_t t;

	(void)arg;
	alarm(20);
	jp__sync_force_lockdep(true);
	if (pthread_create(&t, NULL, hold, (void *)"mutex") != 0)
		return;
	while (!atomic_load(&held))
		usleep(1000);
	jp_mutex_unlock(&m1);		/* the misuse */
	if (jp_mutex_trylock(&m1) == 0) {
		fprintf(stderr, "the unlock released the holder's mutex\n");
		jp_mutex_unlock(&m1);
	}
	atomic_store(&release, 1);
	pthread_join(t, NULL);		/* the holder's unlock */
	if (jp_mutex_trylock(&m1) != 0)
		fprintf(stderr, "the holder's unlock did not release it\n");
	else
		jp_mutex_unlock(&m1);
}

static void test_unlock_lockdep(void)
{
	struct jp_child_result r;
	char want[128];

	snprintf(want, sizeof want, " unlocks mutex %p that it does not hold, at ", (void *)&m1);
	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_unlock_lockdep, NULL, &r), 0);
	CU_ASSERT(r.exited && r.status == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, want));
	CU_ASSERT_PTR_NULL(strstr(r.err, "released the holder"));
	CU_ASSERT_PTR_NULL(strstr(r.err, "did not release"));
	if (!r.exited || r.status != 0 || strstr(r.err, want) == NULL)
		fprintf(stderr, "\n  exited %d status %d signal %d: %s\n", r.exited, r.status,
			r.sig, r.err);
}

static void test_unlock_by_non_owner(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_other_holds, "unlock", &r), 0);
	assert_reported(&r, "jp_mutex_unlock", &m1, NULL, "not held by this thread");
}

/*
 * An unlock of rw1 by this thread, which holds neither lock: another
 * thread holds it for reading or writing ("read", "write"), or nobody
 * does ("free", after a lock and unlock of its own), or this thread holds
 * rw2 only ("other").
 */
static void rw_unlock_not_held(const char *how)
{
	pthread_t t;
	int other = strcmp(how, "read") == 0 || strcmp(how, "write") == 0;

	alarm(20);
	if (other) {
		if (pthread_create(&t, NULL, hold, (void *)how) != 0)
			return;
		while (!atomic_load(&held))
			usleep(1000);
	} else if (strcmp(how, "free") == 0) {
		jp_rwlock_rdlock(&rw1);
		jp_rwlock_unlock(&rw1);
	} else {
		jp_rwlock_rdlock(&rw2);
	}
	jp_rwlock_unlock(&rw1);
	if (other) {
		atomic_store(&release, 1);
		pthread_join(t, NULL);
	}
	fprintf(stderr, "the unlock returned\n");
}

static void child_rw_unlock_check(void *arg)
{
	jp__sync_force_check(true);
	rw_unlock_not_held(arg);
}

static void test_rwlock_unlock_not_held(void)
{
	static const char *const how[] = { "read", "write", "free", "other" };
	struct jp_child_result r;

	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL_FATAL(jp_test_child(child_rw_unlock_check, (void *)how[i], &r), 0);
		assert_reported(&r, "jp_rwlock_unlock", &rw1, NULL, "not held by this thread");
	}
}

/*
 * Lockdep alone reports such an unlock and goes on, and the unlock
 * releases nothing: the lock stays whole (it used to count a departure
 * nobody made, and a writer then waited for ever).
 */
static void child_rw_unlock_lockdep(void *arg)
{
	struct timespec ts;

	(void)arg;
	alarm(20);
	jp__sync_force_lockdep(true);
	jp_rwlock_unlock(&rw1);		/* nobody holds it */
	jp_test_deadline_ms(&ts, 2000);
	if (jp_rwlock_timedwrlock(&rw1, &ts) != 0) {
		fprintf(stderr, "the writer timed out\n");
		return;
	}
	jp_rwlock_unlock(&rw1);
	jp_rwlock_rdlock(&rw1);
	jp_rwlock_unlock(&rw1);
	jp_rwlock_destroy(&rw1);
}

static void test_rwlock_unlock_lockdep(void)
{
	struct jp_child_result r;
	char want[128];

	snprintf(want, sizeof want, " unlocks rwlock %p that it does not hold, at ", (void *)&rw1);
	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_rw_unlock_lockdep, NULL, &r), 0);
	CU_ASSERT(r.exited && r.status == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, want));
	CU_ASSERT_PTR_NULL(strstr(r.err, "timed out"));
	if (!r.exited || r.status != 0 || strstr(r.err, want) == NULL)
		fprintf(stderr, "\n  exited %d status %d signal %d: %s\n", r.exited, r.status,
			r.sig, r.err);
}

static void test_cond_wait_other_holds(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_other_holds, "wait", &r), 0);
	assert_reported(&r, "jp_cond_wait", &c1, &m1, "the mutex is not held by this thread");
	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_other_holds_lockdep, "wait", &r), 0);
	assert_reported(&r, "jp_cond_wait", &c1, &m1, "the mutex is not held by this thread");
}

/* The same from the environment: this program again with JPSYNC_CHECK=1. */
static void child_exec(void *arg)
{
	setenv("JPSYNC_CHECK", "1", 1);
	jp_test_execv(self_path, (char *[]){ "test-misuse", "--case", arg, NULL });
	fprintf(stderr, "exec failed\n");
}

static void test_check_from_environment(void)
{
	struct jp_child_result r;

	/* Another process: m1 may be elsewhere there (ASLR). */
	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_exec, "unlock", &r), 0);
	CU_ASSERT(r.signaled && r.sig == SIGABRT);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "jpsync: jp_mutex_unlock(0x"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "): not held by this thread\n"));
}

static void test_double_pool_put(void)
{
	static const char *const modes[] = { "pool-plain", "pool-cache" };

	for (int i = 0; i < 2; i++) {
		struct jp_child_result r;

		CU_ASSERT_EQUAL_FATAL(jp_test_child(child_exec, (void *)modes[i], &r), 0);
		CU_ASSERT(r.signaled && r.sig == SIGABRT);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "jpsync: jp_pool_put of an object already in the pool of 0x"));
	}
}

/* A pool of 4, one object put twice (the --case child, JPSYNC_CHECK=1). */
static void double_put(unsigned flags)
{
	jp_pool_t *p = jp_pool_create(32, 4, flags);
	void *o;

	if (p == NULL)
		return;
	o = jp_pool_get(p);
	jp_pool_put(p, o);
	jp_pool_put(p, o);
	fprintf(stderr, "second put returned\n");
}

/* ---- correct programs are not reported ---------------------------------- */

struct work {
	jp_rwlock_t rw;
	_Atomic uint64_t reads;
	jp_mutex_t m, inner, outer;
	jp_cond_t c;
	uint64_t count;
	int items;
};

static void counter_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct work *w = ctx;
	struct timespec ts;

	switch ((thread + iter) % 3) {
	case 0:
		jp_mutex_lock(&w->m);
		break;
	case 1:
		while (jp_mutex_trylock(&w->m) != 0)
			sched_yield();
		break;
	default:
		jp_test_deadline_ms(&ts, 10000);
		if (jp_mutex_timedlock(&w->m, &ts) != 0)
			return;
	}
	jp_mutex_lock(&w->inner);	/* nested, always in the same order */
	w->count++;
	jp_mutex_unlock(&w->inner);
	jp_mutex_unlock(&w->m);
}

/* Readers and writers by every call, on one rwlock, nested in w->m. */
static void rw_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct work *w = ctx;
	struct timespec ts;
	int r = 0;

	jp_test_deadline_ms(&ts, 10000);
	switch ((thread + iter) % 6) {
	case 0: r = jp_rwlock_rdlock(&w->rw); break;
	case 1: while ((r = jp_rwlock_tryrdlock(&w->rw)) == EBUSY) sched_yield(); break;
	case 2: r = jp_rwlock_timedrdlock(&w->rw, &ts); break;
	case 3: jp_rwlock_wrlock(&w->rw); break;
	case 4: while ((r = jp_rwlock_trywrlock(&w->rw)) == EBUSY) sched_yield(); break;
	default: r = jp_rwlock_timedwrlock(&w->rw, &ts); break;
	}
	if (r != 0)
		return;
	if ((thread + iter) % 6 < 3) {
		atomic_fetch_add(&w->reads, 1);
	} else {
		jp_mutex_lock(&w->inner);	/* rw before inner, always */
		w->count++;
		jp_mutex_unlock(&w->inner);
	}
	jp_rwlock_unlock(&w->rw);
}

/*
 * Timed calls on rw1 that give up while another thread writes leave it
 * whole; locked by that thread, destroyed by this one after the unlock.
 */
static int rw_timeouts(void)
{
	struct timespec ts;
	pthread_t t;
	int bad = 0;

	if (pthread_create(&t, NULL, hold, (void *)"write") != 0)
		return 1;
	while (!atomic_load(&held))
		usleep(1000);
	jp_test_deadline_ms(&ts, 5);
	bad |= jp_rwlock_timedrdlock(&rw1, &ts) != ETIMEDOUT;
	jp_test_deadline_ms(&ts, 5);
	bad |= jp_rwlock_timedwrlock(&rw1, &ts) != ETIMEDOUT;
	bad |= jp_rwlock_tryrdlock(&rw1) != EBUSY;
	bad |= jp_rwlock_trywrlock(&rw1) != EBUSY;
	atomic_store(&release, 1);
	pthread_join(t, NULL);
	atomic_store(&held, 0);
	atomic_store(&release, 0);
	jp_rwlock_destroy(&rw1);
	return bad;
}

/* A producer and a consumer through a cond, waiting with another mutex
 * held (taken before m, as nobody takes them the other way). */
static void *consumer(void *arg)
{
	struct work *w = arg;
	struct timespec ts;

	for (int got = 0; got < 200; got++) {
		jp_mutex_lock(&w->outer);
		jp_mutex_lock(&w->m);
		while (w->items == 0) {
			jp_test_deadline_ms(&ts, 50);
			if (got % 2 == 0)
				jp_cond_wait(&w->c, &w->m);
			else
				jp_cond_timedwait(&w->c, &w->m, &ts);
		}
		w->items--;
		jp_mutex_unlock(&w->m);
		jp_mutex_unlock(&w->outer);
	}
	return NULL;
}

static void correct_program(void)
{
	struct work w = { .m = JP_MUTEX_INIT, .inner = JP_MUTEX_INIT, .outer = JP_MUTEX_INIT,
			  .c = JP_COND_INIT };
	uint64_t iters = jp_test_scaled(20000, 200);
	pthread_t t;
	jp_pool_t *p;
	void *objs[8];

	if (jp_hammer(4, iters, counter_body, &w) != 0 || w.count != 4 * iters) {
		fprintf(stderr, "counter %llu, wanted %llu\n", (unsigned long long)w.count,
			(unsigned long long)(4 * iters));
		return;
	}
	w.count = 0;
	jp_rwlock_init(&w.rw);
	if (jp_hammer(4, iters, rw_body, &w) != 0 || w.count + atomic_load(&w.reads) != 4 * iters) {
		fprintf(stderr, "rwlock: %llu writes + %llu reads, wanted %llu\n",
			(unsigned long long)w.count, (unsigned long long)atomic_load(&w.reads),
			(unsigned long long)(4 * iters));
		return;
	}
	if (rw_timeouts() != 0) {
		fprintf(stderr, "rwlock: a timed or try call returned the wrong value\n");
		return;
	}
	if (pthread_create(&t, NULL, consumer, &w) != 0)
		return;
	for (int i = 0; i < 200; i++) {
		jp_mutex_lock(&w.m);
		w.items++;
		jp_mutex_unlock(&w.m);
		if (i % 2)
			jp_cond_signal(&w.c);
		else
			jp_cond_broadcast(&w.c);
	}
	pthread_join(t, NULL);
	/* Locked by one thread, destroyed by another after the unlock. */
	jp_mutex_lock(&m2);
	jp_mutex_unlock(&m2);
	jp_mutex_destroy(&m2);
	jp_mutex_destroy(&w.m);
	jp_mutex_destroy(&w.inner);
	jp_mutex_destroy(&w.outer);
	jp_cond_destroy(&w.c);
	jp_rwlock_destroy(&w.rw);
	/* Every object got and put once, twice over, with and without a cache. */
	for (unsigned flags = 0; flags <= JP_POOL_THREAD_CACHE; flags += JP_POOL_THREAD_CACHE) {
		p = jp_pool_create(32, 8, flags);
		if (p == NULL)
			return;
		for (int round = 0; round < 2; round++) {
			for (int i = 0; i < 8; i++)
				objs[i] = jp_pool_get(p);
			for (int i = 0; i < 8; i++)
				jp_pool_put(p, objs[i]);
		}
		jp_pool_destroy(p);
	}
}

/* arg: NULL (by default), "check" or "lockdep" (forced on). */
static void child_correct(void *arg)
{
	if (arg != NULL && strcmp(arg, "check") == 0)
		jp__sync_force_check(true);
	if (arg != NULL && strcmp(arg, "lockdep") == 0)
		jp__sync_force_lockdep(true);
	correct_program();
}

static void test_correct_silent(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_correct, NULL, &r), 0);
	assert_silent(&r);
	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_correct, "check", &r), 0);
	assert_silent(&r);
	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_correct, "lockdep", &r), 0);
	assert_silent(&r);
	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_exec, "correct", &r), 0);
	assert_silent(&r);
}

int main(int argc, char **argv)
{
	CU_TestInfo tests[] = {
		{ "destroy of a locked mutex: reported", test_destroy_locked },
		{ "unlock of a mutex not locked: reported", test_unlock_not_locked },
		{ "cond wait, mutex not locked: reported", test_cond_wait_unlocked },
		{ "destroy of a held or waited-for rwlock: reported", test_rwlock_destroy_locked },
		{ "check: unlock by a thread that does not hold it: reported", test_unlock_by_non_owner },
		{ "lockdep: that mutex unlock reported, and it releases nothing", test_unlock_lockdep },
		{ "check, lockdep: cond wait, another thread holds the mutex: reported", test_cond_wait_other_holds },
		{ "check: rwlock unlock by a thread that holds neither lock: reported", test_rwlock_unlock_not_held },
		{ "lockdep: that rwlock unlock reported, and it releases nothing", test_rwlock_unlock_lockdep },
		{ "JPSYNC_CHECK=1 in the environment turns the owner check on", test_check_from_environment },
		{ "JPSYNC_CHECK=1: double jp_pool_put: reported", test_double_pool_put },
		{ "correct programs (mutex, cond, rwlock, pool): silent by default, with JPSYNC_CHECK=1 and lockdep", test_correct_silent },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "misuse", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};
	ssize_t len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);

	if (len > 0)
		self_path[len] = '\0';
	if (argc == 3 && strcmp(argv[1], "--case") == 0) {
		if (strcmp(argv[2], "unlock") == 0)
			other_holds("unlock");
		else if (strcmp(argv[2], "pool-plain") == 0)
			double_put(0);
		else if (strcmp(argv[2], "pool-cache") == 0)
			double_put(JP_POOL_THREAD_CACHE);
		else if (strcmp(argv[2], "correct") == 0)
			correct_program();
		return 0;
	}
	return jp_test_run(suites);
}
