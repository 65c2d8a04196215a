/*
 * fuzz-pool.c - jp_pool against a model.
 *
 * The input creates pools of any object size, capacity and flags (absurd
 * ones included: EINVAL or ENOMEM at once, as jp_pool(3) says) and runs
 * get, put, get_batch and put_batch (with NULLs among the objects), from
 * this thread or from a short-lived second one whose cache goes back when
 * it exits, and destroy with objects out.  The model is the set of objects
 * held: each is distinct, aligned to 16 and to its size's largest
 * power-of-two divisor, inside no other, keeps what was written into it
 * while held, and the pool is exhausted (NULL, ENOMEM) exactly when every
 * object is held.
 */
#include "fuzz.h"

#include <jpsync/pool.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS 2048
/* Objects the model holds at most (the rest of a large pool is not
 * taken). */
#define HELD_MAX 1024
#define MUST_CREATE ((size_t)256 << 20)

static struct {
	jp_pool_t *p;
	size_t obj_size, cap;
	unsigned flags;
	unsigned char *held[HELD_MAX];
	uint32_t seed[HELD_MAX];
	size_t n;
	uint32_t gen;
} m;

static size_t pow2_up(size_t c)
{
	size_t r = 1;

	while (r < c && r != 0)
		r <<= 1;
	return r;
}

static void fill(unsigned char *o, uint32_t seed)
{
	fz_fill(o, m.obj_size, 0, m.obj_size, seed);
}

static void check(size_t k)
{
	size_t bad = fz_check(m.held[k], m.obj_size, m.seed[k]);

	FZ_CHECK(bad == SIZE_MAX, "object %p of %zu bytes: byte %zu changed while held",
		 (void *)m.held[k], m.obj_size, bad);
}

/* A new object from the pool: check it against the held ones, keep it. */
static void took(unsigned char *o, const char *what)
{
	size_t lb = m.obj_size & -m.obj_size, al = lb > 16 ? lb : 16;

	FZ_CHECK(o != NULL, "%s returned NULL in the middle of a batch", what);
	FZ_CHECK((uintptr_t)o % al == 0, "%s: %p of a pool of %zu-byte objects is not "
		 "aligned to %zu", what, (void *)o, m.obj_size, al);
	{
		size_t k = fz_overlap(o, m.obj_size, (void *const *)m.held, NULL, m.n);

		FZ_CHECK(k == SIZE_MAX, "%s: %p overlaps %p, held (objects of %zu bytes)",
			 what, (void *)o, (void *)m.held[k], m.obj_size);
	}
	FZ_CHECK(m.n < HELD_MAX, "model full");
	m.held[m.n] = o;
	m.seed[m.n] = ++m.gen * 2654435761u;
	fill(o, m.seed[m.n]);
	m.n++;
}

/* Take held object k out of the model (checked), for a put. */
static unsigned char *give(size_t k)
{
	unsigned char *o = m.held[k];

	check(k);
	m.n--;
	m.held[k] = m.held[m.n];
	m.seed[k] = m.seed[m.n];
	return o;
}

/* Objects the pool still has for this thread: all it does not hold (the
 * only other thread has exited, and its cache is back). */
static size_t avail(void)
{
	return m.cap - m.n;
}

static void op_create(struct fz *f)
{
	size_t obj = fz_u8(f) & 1 ? fz_size(f) : (size_t)fz_u8(f) + 1, cap = fz_size(f);
	unsigned flags = fz_u8(f);
	int err;
	jp_pool_t *p;

	flags = flags < 200 ? flags & JP_POOL_THREAD_CACHE : flags << (flags % 24);
	if (m.p != NULL)
		jp_pool_destroy(m.p);	/* objects held or not */
	memset(&m, 0, sizeof m);
	{
		size_t bytes;

		if (!__builtin_mul_overflow(pow2_up(cap), obj, &bytes) && pow2_up(cap) >= cap &&
		    fz_huge_skip(bytes))
			return;
	}
	errno = 0;
	p = jp_pool_create(obj, cap, flags);
	err = errno;
	FZ_TRACE("jp_pool_create(%zu, %zu, %#x) -> %p errno %d", obj, cap, flags,
		 (void *)p, err);
	if (obj == 0 || cap == 0 || (flags & ~JP_POOL_THREAD_CACHE) != 0 ||
	    cap > ((size_t)1 << 31) || (uint64_t)obj > UINT64_C(1) << 40 || obj > SIZE_MAX / 4 ||
	    (size_t)((obj + 15) & ~(size_t)15) > SIZE_MAX / pow2_up(cap)) {
		FZ_CHECK(p == NULL && err == EINVAL,
			 "jp_pool_create(%zu, %zu, %#x): %p, errno %d, not NULL and EINVAL",
			 obj, cap, flags, (void *)p, err);
		return;
	}
	if (p == NULL) {
		size_t total;

		FZ_CHECK(err == EINVAL || err == ENOMEM,
			 "jp_pool_create(%zu, %zu) failed with errno %d", obj, cap, err);
		FZ_CHECK(__builtin_mul_overflow(pow2_up(cap), obj, &total) ||
			 total > MUST_CREATE,
			 "jp_pool_create(%zu, %zu) failed (errno %d): small enough to succeed",
			 obj, cap, err);
		return;
	}
	m.p = p;
	m.obj_size = obj;
	m.cap = pow2_up(cap);
	m.flags = flags;
	FZ_CHECK(jp_pool_capacity(p) == m.cap, "jp_pool_capacity is %zu, not %zu",
		 jp_pool_capacity(p), m.cap);
}

static void op_get(void)
{
	void *o;
	int err;

	if (m.n == HELD_MAX)
		return;
	errno = 0;
	o = jp_pool_get(m.p);
	err = errno;
	if (avail() == 0) {
		FZ_CHECK(o == NULL && err == ENOMEM,
			 "jp_pool_get of an exhausted pool (%zu held): %p, errno %d",
			 m.n, o, err);
		return;
	}
	FZ_CHECK(o != NULL, "jp_pool_get: NULL (errno %d) with %zu of %zu held",
		 err, m.n, m.cap);
	took(o, "jp_pool_get");
}

static void op_get_batch(struct fz *f)
{
	void *objs[HELD_MAX];
	size_t n = fz_count(f, HELD_MAX - m.n), got, want;
	int err;

	errno = 0;
	got = jp_pool_get_batch(m.p, objs, n);
	err = errno;
	want = n < avail() ? n : avail();
	FZ_CHECK(got == want, "jp_pool_get_batch(%zu) with %zu of %zu held: %zu, not %zu",
		 n, m.n, m.cap, got, want);
	if (got < n)
		FZ_CHECK(err == ENOMEM, "jp_pool_get_batch: %zu of %zu, errno %d, not ENOMEM",
			 got, n, err);
	for (size_t i = 0; i < got; i++)
		took(objs[i], "jp_pool_get_batch");
}

static void op_put(struct fz *f)
{
	if (m.n == 0) {
		jp_pool_put(m.p, NULL);		/* does nothing */
		return;
	}
	jp_pool_put(m.p, give(fz_u8(f) % m.n));
}

static void op_put_batch(struct fz *f)
{
	void *objs[2 * HELD_MAX];
	size_t n = fz_count(f, m.n), k = 0;
	uint8_t nulls = fz_u8(f);

	for (size_t i = 0; i < n; i++) {
		if (nulls & 1 && (i + nulls) % 3 == 0)
			objs[k++] = NULL;	/* skipped */
		objs[k++] = give(fz_u8(f) % m.n);
	}
	jp_pool_put_batch(m.p, objs, k);
}

/* ---- a second thread ------------------------------------------------------ */
struct job {
	struct fz f;
	void *got[64];
	size_t ngot;
	void *put[64];
	size_t nput;
	size_t want;		/* gets it must manage */
};

static void *thread_body(void *arg)
{
	struct job *j = arg;

	/* Put what it was given (into its own cache), then take objects. */
	for (size_t i = 0; i < j->nput; i++)
		jp_pool_put(m.p, j->put[i]);
	for (size_t i = 0; i < j->want; i++) {
		void *o = jp_pool_get(m.p);

		if (o == NULL)
			break;
		j->got[j->ngot++] = o;
	}
	return NULL;	/* its cache goes back to the pool */
}

static void op_thread(struct fz *f)
{
	struct job j;
	pthread_t th;
	size_t np = fz_count(f, m.n < 64 ? m.n : 64), ng = fz_count(f, 63);
	int rc;

	memset(&j, 0, sizeof j);
	for (size_t i = 0; i < np; i++)
		j.put[j.nput++] = give(fz_u8(f) % m.n);
	if (ng > HELD_MAX - m.n)
		ng = HELD_MAX - m.n;
	j.want = ng;
	rc = pthread_create(&th, NULL, thread_body, &j);
	FZ_CHECK(rc == 0, "pthread_create: error %d", rc);
	pthread_join(th, NULL);
	/* It may have found fewer than it wanted: this thread's cache is not
	 * its to take.  Its own cache is back in the pool now. */
	for (size_t i = 0; i < j.ngot; i++)
		took(j.got[i], "jp_pool_get (second thread)");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_target = "pool";
	unsetenv("JPSYNC_CHECK");	/* check mode's pools: another target */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f;

	fz_init(&f, data, size);
	for (unsigned n = 0; !fz_done(&f) && n < MAX_OPS; n++) {
		uint8_t op = fz_u8(&f);

		if (m.p == NULL || op % 8 == 0) {
			op_create(&f);
			continue;
		}
		switch (op % 8) {
		case 1: case 2:
			op_get();
			break;
		case 3:
			op_get_batch(&f);
			break;
		case 4: case 5:
			op_put(&f);
			break;
		case 6:
			op_put_batch(&f);
			break;
		default:
			op_thread(&f);
			break;
		}
	}
	for (size_t k = 0; k < m.n; k++)
		check(k);
	if (m.p != NULL)
		jp_pool_destroy(m.p);
	memset(&m, 0, sizeof m);
	return 0;
}
