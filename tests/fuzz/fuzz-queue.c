/*
 * fuzz-queue.c - jp_spsc, jp_mpsc and jp_mpmc against a model.
 *
 * The input creates up to four queues of any kind, capacity and element
 * size (absurd ones included: they must fail at once with EINVAL or
 * ENOMEM, as jp_spsc(3) says), and runs every call on them: try_push,
 * try_pop, push and pop with a deadline that has passed (negative tv_sec
 * included), a tv_nsec out of range, a deadline a little ahead, or none
 * when the call cannot block; push_bulk and pop_bulk; close; size;
 * capacity; destroy with elements left; NULL arguments.  The model is a
 * FIFO of element numbers: each element's bytes are a pattern of its
 * number, so a lost, repeated, reordered or torn element shows.
 */
#include "fuzz.h"
#include "queue-kinds.h"

#include <jpsync/deadline.h>
#include <jpsync/queue.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_OPS 4096
#define NQ 4
/* What the model keeps per queue (elements beyond are not pushed): the
 * fuzzer must not fill gigabytes. */
#define MODEL_ELEMS 2048
#define MODEL_BYTES ((size_t)8 << 20)
/* A queue of at most this many bytes must be created. */
#define MUST_CREATE ((size_t)256 << 20)


struct mq {
	const struct qops *ops;
	void *q;
	size_t cap, esize;
	bool closed;
	uint64_t ids[MODEL_ELEMS];	/* the FIFO, ring of model numbers */
	size_t head, n;
	uint64_t next_id;
};

static struct mq qs[NQ];
static unsigned char *ebuf;	/* elements in and out, bulk included */
static size_t ebuf_size;

static size_t pow2_up(size_t c)
{
	size_t r = 1;

	while (r < c && r != 0)
		r <<= 1;
	return r;
}

static bool model_full(const struct mq *m)
{
	return m->n == m->cap;
}

/* Room the model has for more elements (its own limit, not the queue's). */
static size_t model_room(const struct mq *m)
{
	size_t by_bytes = m->esize > MODEL_BYTES ? 0 : MODEL_BYTES / m->esize;
	size_t lim = by_bytes < MODEL_ELEMS ? by_bytes : MODEL_ELEMS;

	return m->n >= lim ? 0 : lim - m->n;
}

static unsigned char *buf(size_t bytes)
{
	if (bytes > ebuf_size) {
		free(ebuf);
		ebuf = malloc(bytes);
		FZ_CHECK(ebuf != NULL, "out of memory for %zu bytes of elements", bytes);
		ebuf_size = bytes;
	}
	return ebuf;
}

/* An element's bytes: the pattern of its number (the edges of a large
 * one, as fz_fill). */
static void make_elem(unsigned char *e, size_t esize, uint64_t id)
{
	fz_fill(e, esize, 0, esize, (uint32_t)(id * 2654435761u));
}

static void check_elem(const struct mq *m, const unsigned char *e, uint64_t id,
		       const char *what)
{
	size_t bad = fz_check(e, m->esize, (uint32_t)(id * 2654435761u));

	FZ_CHECK(bad == SIZE_MAX,
		 "%s %s: element %llu, byte %zu is 0x%02x (another element, or torn)",
		 m->ops->name, what, (unsigned long long)id, bad, e[bad]);
}

static void model_push(struct mq *m)
{
	m->ids[(m->head + m->n) % MODEL_ELEMS] = m->next_id++;
	m->n++;
}

static uint64_t model_pop(struct mq *m)
{
	uint64_t id = m->ids[m->head];

	m->head = (m->head + 1) % MODEL_ELEMS;
	m->n--;
	return id;
}

static void check_size(const struct mq *m)
{
	size_t s = m->ops->size(m->q), c = m->ops->capacity(m->q);

	FZ_CHECK(s == m->n, "%s_size is %zu, the model holds %zu", m->ops->name, s, m->n);
	FZ_CHECK(c == m->cap, "%s_capacity is %zu, not %zu", m->ops->name, c, m->cap);
}

/* ---- deadlines ---------------------------------------------------------- */
enum dl { DL_NONE, DL_PAST, DL_NEGATIVE, DL_BAD_NSEC, DL_SOON };

/* A deadline of the kind the input picks; DL_NONE (wait forever) only when
 * the call cannot block (it could succeed or the queue is closed). */
static enum dl pick_deadline(struct fz *f, struct timespec *ts, bool may_block)
{
	uint8_t sel = fz_u8(f);
	enum dl d = (enum dl)(sel % 5);

	switch (d) {
	case DL_NONE:
		if (may_block)
			d = DL_PAST;
		break;
	case DL_SOON:
		/* 0 to 255 microseconds ahead: a real, short sleep */
		jp_deadline_after(ts, (uint64_t)fz_u8(f) * 1000);
		return d;
	default:
		break;
	}
	switch (d) {
	case DL_PAST:
		ts->tv_sec = 0;		/* the first millisecond after boot */
		ts->tv_nsec = (long)fz_bytes(f, 2) * 10;
		break;
	case DL_NEGATIVE:
		/* 31 bits: where time_t has 32, a larger value would wrap to a
		 * positive, far future second and the call would wait for it. */
		ts->tv_sec = -(time_t)(fz_bytes(f, 4) & 0x7fffffff) - 1;
		ts->tv_nsec = fz_u8(f) & 1 ? 999999999 : 0;
		break;
	case DL_BAD_NSEC:
		ts->tv_sec = fz_u8(f) & 1 ? 0 : (time_t)INT32_MAX;
		ts->tv_nsec = fz_u8(f) & 1 ? -1 : 1000000000 + (long)fz_u8(f);
		break;
	default:
		break;
	}
	return d;
}

/* ---- the operations ------------------------------------------------------ */

/* A started slot lies in the ring, aligned as jp_spsc(3) says: to the
 * largest power of two up to 8 that divides the element size. */
static void check_slot(const struct mq *m, const jp_queue_slot_t *sl)
{
	size_t align = m->esize & -m->esize;

	if (align > 8)
		align = 8;
	FZ_CHECK(sl->elem != NULL && (uintptr_t)sl->elem % align == 0,
		 "%s: slot %p for elements of %zu bytes: not aligned to %zu", m->ops->name,
		 sl->elem, m->esize, align);
}

static void op_create(struct fz *f, struct mq *m)
{
	const struct qops *k = &kinds[fz_u8(f) % NKINDS];
	size_t cap = fz_size(f), esize = fz_u8(f) & 1 ? fz_size(f) : fz_u8(f) % 65;
	void *q;
	int err;

	if (m->q != NULL)
		m->ops->destroy(m->q);	/* with whatever is left in it */
	memset(m, 0, sizeof *m);
	{
		size_t bytes;

		if (!__builtin_mul_overflow(pow2_up(cap), esize, &bytes) && pow2_up(cap) >= cap &&
		    fz_huge_skip(bytes))
			return;
	}
	errno = 0;
	q = k->create(cap, esize);
	err = errno;
	FZ_TRACE("%s_create(%zu, %zu) -> %p errno %d", k->name, cap, esize, q, err);
	if (cap == 0 || esize == 0) {
		FZ_CHECK(q == NULL && err == EINVAL,
			 "%s_create(%zu, %zu): %p, errno %d, not NULL and EINVAL",
			 k->name, cap, esize, q, err);
		return;
	}
	if (q == NULL) {
		size_t bytes;

		FZ_CHECK(err == EINVAL || err == ENOMEM,
			 "%s_create(%zu, %zu) failed with errno %d", k->name, cap, esize, err);
		FZ_CHECK(__builtin_mul_overflow(pow2_up(cap), esize, &bytes) ||
			 bytes > MUST_CREATE || pow2_up(cap) < cap,
			 "%s_create(%zu, %zu) failed (errno %d): small enough to succeed",
			 k->name, cap, esize, err);
		return;
	}
	m->ops = k;
	m->q = q;
	m->cap = pow2_up(cap);
	m->esize = esize;
	FZ_CHECK(m->cap >= cap, "%s_create(%zu): capacity overflow", k->name, cap);
	check_size(m);
}

static void op_push(struct fz *f, struct mq *m, bool blocking)
{
	struct timespec ts;
	enum dl d = DL_NONE;
	bool fits = !m->closed && !model_full(m);
	unsigned char *e;
	uint8_t how;
	int r, want;

	if (model_room(m) == 0 && fits)
		return;		/* the model is full, not the queue */
	if (blocking)
		d = pick_deadline(f, &ts, !fits && !m->closed);
	/* An element too large for the model is pushed only where nothing
	 * may be read from it (closed, full, a bad deadline): from a small
	 * buffer, so that a read would show as an overflow. */
	e = buf(m->esize <= MODEL_BYTES ? m->esize : 64);
	if (m->esize <= MODEL_BYTES)
		make_elem(e, m->esize, m->next_id);
	how = fz_u8(f);
	if (how == 0xff) {		/* a NULL element */
		r = blocking ? m->ops->push(m->q, NULL, NULL) : m->ops->try_push(m->q, NULL);
		FZ_CHECK(r == EINVAL, "%s_push(q, NULL): %d, not EINVAL", m->ops->name, r);
		return;
	}
	if (how >= 0x80) {		/* through an in-place slot */
		jp_queue_slot_t sl;

		r = blocking ? m->ops->push_start(m->q, &sl, d == DL_NONE ? NULL : &ts)
			     : m->ops->try_push_start(m->q, &sl);
		if (r == 0) {
			check_slot(m, &sl);
			memcpy(sl.elem, e, m->esize <= MODEL_BYTES ? m->esize : 64);
			m->ops->push_finish(m->q, &sl);
		}
	} else {
		r = blocking ? m->ops->push(m->q, e, d == DL_NONE ? NULL : &ts)
			     : m->ops->try_push(m->q, e);
	}
	if (blocking && d == DL_BAD_NSEC)
		want = EINVAL;
	else if (m->closed)
		want = EPIPE;
	else if (model_full(m))
		want = blocking ? ETIMEDOUT : EAGAIN;
	else
		want = 0;
	FZ_TRACE("%s_%spush (deadline %d) -> %d, want %d", m->ops->name,
		 blocking ? "" : "try_", (int)d, r, want);
	FZ_CHECK(r == want, "%s_%spush (deadline kind %d, %zu of %zu, %s): %d, not %d",
		 m->ops->name, blocking ? "" : "try_", (int)d, m->n, m->cap,
		 m->closed ? "closed" : "open", r, want);
	if (r == 0)
		model_push(m);
}

static void op_pop(struct fz *f, struct mq *m, bool blocking)
{
	struct timespec ts;
	enum dl d = DL_NONE;
	unsigned char *e = buf(m->esize <= MODEL_BYTES ? m->esize : 64);
	uint8_t how;
	int r, want;

	if (blocking)
		d = pick_deadline(f, &ts, m->n == 0 && !m->closed);
	how = fz_u8(f);
	if (how == 0xff) {
		r = blocking ? m->ops->pop(m->q, NULL, NULL) : m->ops->try_pop(m->q, NULL);
		FZ_CHECK(r == EINVAL, "%s_pop(q, NULL): %d, not EINVAL", m->ops->name, r);
		return;
	}
	if (how >= 0x80) {		/* through an in-place slot */
		jp_queue_slot_t sl;

		r = blocking ? m->ops->pop_start(m->q, &sl, d == DL_NONE ? NULL : &ts)
			     : m->ops->try_pop_start(m->q, &sl);
		if (r == 0) {
			check_slot(m, &sl);
			memcpy(e, sl.elem, m->esize <= MODEL_BYTES ? m->esize : 64);
			m->ops->pop_finish(m->q, &sl);
		}
	} else {
		r = blocking ? m->ops->pop(m->q, e, d == DL_NONE ? NULL : &ts)
			     : m->ops->try_pop(m->q, e);
	}
	if (blocking && d == DL_BAD_NSEC)
		want = EINVAL;
	else if (m->n > 0)
		want = 0;
	else if (m->closed)
		want = EPIPE;
	else
		want = blocking ? ETIMEDOUT : EAGAIN;
	FZ_TRACE("%s_%spop (deadline %d) -> %d, want %d", m->ops->name,
		 blocking ? "" : "try_", (int)d, r, want);
	FZ_CHECK(r == want, "%s_%spop (deadline kind %d, %zu of %zu, %s): %d, not %d",
		 m->ops->name, blocking ? "" : "try_", (int)d, m->n, m->cap,
		 m->closed ? "closed" : "open", r, want);
	if (r == 0)
		check_elem(m, e, model_pop(m), "pop");
}

static void op_push_bulk(struct fz *f, struct mq *m)
{
	size_t n = fz_count(f, SIZE_MAX), room = model_room(m), want, got, bytes;
	unsigned char *e;

	if (n > room)
		n = room;	/* what the model can keep */
	if (fz_u8(f) == 0xff) {
		got = m->ops->push_bulk(m->q, NULL, n);
		FZ_CHECK(got == 0, "%s_push_bulk(q, NULL, %zu): %zu", m->ops->name, n, got);
		return;
	}
	bytes = n * m->esize;
	e = buf(bytes ? bytes : 1);
	for (size_t i = 0; i < n; i++)
		make_elem(e + i * m->esize, m->esize, m->next_id + i);
	got = m->ops->push_bulk(m->q, e, n);
	want = m->closed ? 0 : n < m->cap - m->n ? n : m->cap - m->n;
	FZ_TRACE("%s_push_bulk(%zu) -> %zu, want %zu", m->ops->name, n, got, want);
	FZ_CHECK(got == want, "%s_push_bulk(%zu) with %zu of %zu (%s): %zu, not %zu",
		 m->ops->name, n, m->n, m->cap, m->closed ? "closed" : "open", got, want);
	for (size_t i = 0; i < got; i++)
		model_push(m);
}

static void op_pop_bulk(struct fz *f, struct mq *m)
{
	size_t n = fz_count(f, SIZE_MAX), want, got;
	unsigned char *e;

	if (m->esize > MODEL_BYTES)
		return;		/* never holds an element (see op_push) */
	if (fz_u8(f) == 0xff) {
		got = m->ops->pop_bulk(m->q, NULL, n);
		FZ_CHECK(got == 0, "%s_pop_bulk(q, NULL, %zu): %zu", m->ops->name, n, got);
		return;
	}
	/* More than the queue holds, but no more than the model could. */
	if (n > MODEL_ELEMS + 1)
		n = MODEL_ELEMS + 1;
	if (n > MODEL_BYTES / m->esize + 1)
		n = MODEL_BYTES / m->esize + 1;
	e = buf(n * m->esize != 0 ? n * m->esize : 1);
	got = m->ops->pop_bulk(m->q, e, n);
	want = n < m->n ? n : m->n;	/* a closed queue still drains */
	FZ_TRACE("%s_pop_bulk(%zu) -> %zu, want %zu", m->ops->name, n, got, want);
	FZ_CHECK(got == want, "%s_pop_bulk(%zu) with %zu (%s): %zu, not %zu",
		 m->ops->name, n, m->n, m->closed ? "closed" : "open", got, want);
	for (size_t i = 0; i < got; i++)
		check_elem(m, e + i * m->esize, model_pop(m), "pop_bulk");
}

static void op_null(struct fz *f)
{
	const struct qops *k = &kinds[fz_u8(f) % NKINDS];
	unsigned char e[8] = { 0 };
	struct timespec ts = { 0, 0 };

	/* Every call but destroy and size/capacity's NULL answer: EINVAL or
	 * nothing, never a crash. */
	FZ_CHECK(k->try_push(NULL, e) == EINVAL, "%s_try_push(NULL): not EINVAL", k->name);
	FZ_CHECK(k->try_pop(NULL, e) == EINVAL, "%s_try_pop(NULL): not EINVAL", k->name);
	FZ_CHECK(k->push(NULL, e, &ts) == EINVAL, "%s_push(NULL): not EINVAL", k->name);
	FZ_CHECK(k->pop(NULL, e, &ts) == EINVAL, "%s_pop(NULL): not EINVAL", k->name);
	FZ_CHECK(k->push_bulk(NULL, e, 1) == 0, "%s_push_bulk(NULL): not 0", k->name);
	FZ_CHECK(k->pop_bulk(NULL, e, 1) == 0, "%s_pop_bulk(NULL): not 0", k->name);
	FZ_CHECK(k->try_push_start(NULL, &(jp_queue_slot_t){ 0 }) == EINVAL &&
		 k->push_start(NULL, &(jp_queue_slot_t){ 0 }, &ts) == EINVAL &&
		 k->try_pop_start(NULL, &(jp_queue_slot_t){ 0 }) == EINVAL &&
		 k->pop_start(NULL, &(jp_queue_slot_t){ 0 }, &ts) == EINVAL,
		 "%s_*_start(NULL): not EINVAL", k->name);
	FZ_CHECK(k->size(NULL) == 0 && k->capacity(NULL) == 0,
		 "%s_size/capacity(NULL): not 0", k->name);
	k->close(NULL);
	k->destroy(NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_target = "queue";
	return fz_single_thread();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f;

	fz_init(&f, data, size);
	for (unsigned n = 0; !fz_done(&f) && n < MAX_OPS; n++) {
		uint8_t op = fz_u8(&f);
		struct mq *m = &qs[fz_u8(&f) % NQ];

		if (op % 12 == 0 || m->q == NULL) {
			if (op % 12 == 11)
				op_null(&f);
			else
				op_create(&f, m);
			continue;
		}
		switch (op % 12) {
		case 1: case 2:
			op_push(&f, m, false);
			break;
		case 3: case 4:
			op_pop(&f, m, false);
			break;
		case 5:
			op_push(&f, m, true);
			break;
		case 6:
			op_pop(&f, m, true);
			break;
		case 7:
			op_push_bulk(&f, m);
			break;
		case 8:
			op_pop_bulk(&f, m);
			break;
		case 9:
			m->ops->close(m->q);
			m->closed = true;
			FZ_TRACE("%s_close", m->ops->name);
			break;
		case 10:
			m->ops->destroy(m->q);	/* elements left or not */
			m->q = NULL;
			break;
		default:
			op_null(&f);
			break;
		}
		if (m->q != NULL)
			check_size(m);
	}
	for (unsigned i = 0; i < NQ; i++) {
		if (qs[i].q != NULL)
			qs[i].ops->destroy(qs[i].q);
		qs[i].q = NULL;
	}
	return 0;
}
