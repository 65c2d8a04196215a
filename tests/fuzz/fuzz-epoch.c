/*
 * fuzz-epoch.c - jp_epoch against a model, with two threads.
 *
 * The input runs enter, exit, retire, synchronize, barrier, create and
 * destroy on two epochs, each call made by the main thread or by a second
 * one (a hand-off: one thread runs at a time, in the input's order), and
 * restarts the second thread (its retired pointers stay pending on the
 * epoch).  The model knows which thread is inside which epoch, in which
 * critical section, and checks that:
 *   - every free function runs exactly once, on the pointer it was given;
 *   - none runs while a reader that was inside when the pointer was retired
 *     is still inside that same critical section;
 *   - after jp_epoch_barrier(), every pointer retired before the call has
 *     been freed, whichever thread retired it; after destroy, all of them;
 *   - jp_epoch_synchronize() does not return before a reader that was
 *     inside at the call has left (the second thread leaves while the main
 *     thread waits).
 * Calls the contract forbids (exit without enter, synchronize inside, a
 * wait for a reader that cannot leave) are not made.
 */
#include "fuzz.h"

#include <jpsync/epoch.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_OPS 2048
#define NE 2
#define NT 2		/* the main thread (0) and the helper (1) */
#define TOKENS 4096

struct tok {
	int epoch;
	int freed;		/* times its free function ran */
	long sec[NT];		/* the reader's section at the retire, or -1 */
	bool retired;
};

static struct {
	jp_epoch_t *e[NE];
	unsigned depth[NT][NE];
	long sec[NT][NE];	/* counts outermost enters */
	struct tok tok[TOKENS];
	unsigned ntok;
} m;

/* ---- the free function ---------------------------------------------------- */
static void tok_free(void *p)
{
	struct tok *t = p;
	size_t i = (size_t)(t - m.tok);

	FZ_CHECK(i < TOKENS && t == &m.tok[i], "free function called with %p, not a token", p);
	FZ_CHECK(t->retired, "token %zu freed but never retired", i);
	FZ_CHECK(t->freed == 0, "token %zu freed twice", i);
	for (int r = 0; r < NT; r++)
		FZ_CHECK(t->sec[r] < 0 || m.depth[r][t->epoch] == 0 ||
			 m.sec[r][t->epoch] != t->sec[r],
			 "token %zu freed while thread %d, inside epoch %d when it was "
			 "retired, is still in that critical section", i, r, t->epoch);
	t->freed++;
}

/* ---- the helper thread ---------------------------------------------------- */
enum hjob { H_OP = 1, H_LEAVE_LATE };

static void do_op(int r, struct fz *f);

static struct {
	struct fz *in;
	int epoch;
	atomic_int leaving;	/* set just before its exit call */
} h;

static void helper_job(int j)
{
	if (j == H_OP) {
		do_op(1, h.in);
	} else {
		/* Leave a little later than the main thread's synchronize
		 * starts. */
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
		atomic_store(&h.leaving, 1);
		while (m.depth[1][h.epoch] > 0) {
			jp_epoch_exit(m.e[h.epoch]);
			m.depth[1][h.epoch]--;
		}
	}
}

static struct fz_worker hw = FZ_WORKER_INIT(helper_job);

/* ---- the model's operations ------------------------------------------------ */

static bool anyone_inside(int e)
{
	return m.depth[0][e] > 0 || m.depth[1][e] > 0;
}

static bool inside_any(int r)
{
	for (int e = 0; e < NE; e++)
		if (m.depth[r][e] > 0)
			return true;
	return false;
}

/* After a barrier or destroy: every token of epoch e retired before it
 * (all of them so far) has been freed. */
static void all_freed(int e, const char *what)
{
	for (unsigned i = 0; i < m.ntok; i++)
		if (m.tok[i].retired && m.tok[i].epoch == e)
			FZ_CHECK(m.tok[i].freed == 1, "token %u of epoch %d not freed after %s",
				 i, e, what);
}

static void retire(int r, int e, struct fz *f)
{
	struct tok *t;

	if (fz_u8(f) == 0xff) {
		/* NULL free function: free(3) (a leak shows under ASan) */
		void *p = malloc(32);

		FZ_CHECK(p != NULL, "malloc failed");
		jp_epoch_retire(m.e[e], p, NULL);
		return;
	}
	if (m.ntok == TOKENS)
		return;
	t = &m.tok[m.ntok++];
	t->epoch = e;
	for (int q = 0; q < NT; q++)
		t->sec[q] = m.depth[q][e] > 0 ? m.sec[q][e] : -1;
	t->retired = true;
	FZ_TRACE("thread %d retires token %u on epoch %d", r, m.ntok - 1, e);
	jp_epoch_retire(m.e[e], t, tok_free);
}

/* One operation by thread r (0: main, 1: helper), on an epoch that exists. */
static void do_op(int r, struct fz *f)
{
	uint8_t op = fz_u8(f);
	int e = fz_u8(f) % NE;

	if (m.e[e] == NULL)
		return;
	switch (op % 6) {
	case 0: case 1:
		if (m.depth[r][e]++ == 0)
			m.sec[r][e]++;
		FZ_TRACE("thread %d enters epoch %d (depth %u)", r, e, m.depth[r][e]);
		jp_epoch_enter(m.e[e]);
		break;
	case 2:
		if (m.depth[r][e] == 0)
			break;
		FZ_TRACE("thread %d exits epoch %d", r, e);
		jp_epoch_exit(m.e[e]);
		m.depth[r][e]--;
		break;
	case 3: case 4:
		retire(r, e, f);
		break;
	default:
		if (anyone_inside(e))
			break;	/* would wait for itself or for a blocked thread */
		if (op & 8) {
			FZ_TRACE("thread %d: barrier on epoch %d", r, e);
			jp_epoch_barrier(m.e[e]);
			all_freed(e, "jp_epoch_barrier");
		} else {
			FZ_TRACE("thread %d: synchronize on epoch %d", r, e);
			jp_epoch_synchronize(m.e[e]);
		}
		break;
	}
}

static void destroy(int e)
{
	FZ_TRACE("destroy epoch %d", e);
	jp_epoch_destroy(m.e[e]);
	m.e[e] = NULL;
	all_freed(e, "jp_epoch_destroy");
	/* Its tokens are done with: another epoch may reuse the index. */
	for (unsigned i = 0; i < m.ntok; i++)
		if (m.tok[i].epoch == e)
			m.tok[i].epoch = -1 - e;
}

/* At exit, before LeakSanitizer looks: the helper's records go back with
 * it (LSan does not see a live thread's thread-local pointers here). */
static void stop_at_exit(void)
{
	if (hw.running)
		fz_worker_stop(&hw);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_target = "epoch";
	atexit(stop_at_exit);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f;

	memset(&m, 0, sizeof m);
	fz_init(&f, data, size);
	if (!hw.running)
		fz_worker_start(&hw);
	for (unsigned n = 0; !fz_done(&f) && n < MAX_OPS; n++) {
		uint8_t step = fz_u8(&f);
		int e = fz_u8(&f) % NE;

		switch (step % 8) {
		case 0:
			if (m.e[e] == NULL) {
				m.e[e] = jp_epoch_create();
				FZ_CHECK(m.e[e] != NULL, "jp_epoch_create: NULL");
			} else if (!anyone_inside(e)) {
				destroy(e);
			}
			break;
		case 1: case 2: case 3:
			do_op(0, &f);
			break;
		case 4: case 5:
			h.in = &f;
			fz_worker_post(&hw, H_OP);
			fz_worker_wait(&hw);
			break;
		case 6:
			/* The helper, inside e, leaves while this thread
			 * synchronizes, which must wait for it. */
			if (m.e[e] == NULL || m.depth[0][e] > 0 || m.depth[1][e] == 0)
				break;
			atomic_store(&h.leaving, 0);
			h.epoch = e;
			fz_worker_post(&hw, H_LEAVE_LATE);
			jp_epoch_synchronize(m.e[e]);
			FZ_CHECK(atomic_load(&h.leaving),
				 "jp_epoch_synchronize returned while a reader inside at the "
				 "call had not left");
			fz_worker_wait(&hw);
			break;
		default:
			if (!inside_any(1)) {
				fz_worker_stop(&hw);	/* its retired pointers stay pending */
				fz_worker_start(&hw);
			}
			break;
		}
	}
	/* Everyone leaves; every epoch goes, and every token with it. */
	for (int r = 0; r < NT; r++)
		for (int e = 0; e < NE; e++)
			if (m.depth[r][e] > 0) {
				if (r == 1) {
					h.epoch = e;
					fz_worker_post(&hw, H_LEAVE_LATE);
					fz_worker_wait(&hw);
				} else {
					while (m.depth[0][e] > 0) {
						jp_epoch_exit(m.e[e]);
						m.depth[0][e]--;
					}
				}
			}
	for (int e = 0; e < NE; e++)
		if (m.e[e] != NULL)
			destroy(e);
	for (unsigned i = 0; i < m.ntok; i++)
		FZ_CHECK(m.tok[i].freed == 1, "token %u freed %d times", i, m.tok[i].freed);
	return 0;
}
