/*
 * fuzz-alloc-mt.c - the allocator in default mode, two threads: the
 * operations of fuzz-alloc (alloc-model.h), run by the main thread or by a
 * second one, so that blocks move between threads through the slot table
 * and the cross-thread paths (a free into another thread's cache, transfer
 * chains, a thread's exit with blocks of its own still live elsewhere) are
 * fuzzed too.
 *
 * The input is a sequence of steps; the first byte of each says who runs
 * what:
 *   - one operation on the whole table by the main thread, or by the
 *     worker while the main thread waits (a hand-off, so the order is the
 *     input's);
 *   - a burst: both threads run a run of operations at the same time, each
 *     on its half of the table (so the model stays exact whatever the
 *     interleaving), then the whole table is checked, overlaps between the
 *     halves included;
 *   - a swap of two slots of different halves (a block changes owner);
 *   - the worker exits and a new one starts.
 */
#include "alloc-model.h"

#include <jpsync/alloc.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 2048
#define HALF (FA_SLOTS / 2)

enum job { J_ONE = 1, J_BURST };

/* What the worker's job reads: its part of the input and the table. */
static struct {
	struct fz in;
	unsigned nops;
	struct fa_table *t;
} w;

static void run_job(int j)
{
	if (j == J_ONE)
		fa_op(w.t, &w.in, 0, FA_SLOTS, 0, FA_SLOTS);
	else
		for (unsigned i = 0; i < w.nops && !fz_done(&w.in); i++)
			fa_op(w.t, &w.in, HALF, HALF, HALF, HALF);
}

static struct fz_worker wk = FZ_WORKER_INIT(run_job);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_target = "alloc-mt";
	unsetenv("JPSYNC_CHECK");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fa_table t;
	struct fz f;

	memset(&t, 0, sizeof t);
	fz_init(&f, data, size);
	w.t = &t;
	if (!wk.running)
		fz_worker_start(&wk);
	for (unsigned n = 0; !fz_done(&f) && n < MAX_STEPS; n++) {
		uint8_t step = fz_u8(&f);
		size_t len;

		switch (step % 8) {
		case 0: case 1: case 2:
			fa_op(&t, &f, 0, FA_SLOTS, 0, FA_SLOTS);
			break;
		case 3: case 4:
			w.in = f;
			fz_worker_post(&wk, J_ONE);
			fz_worker_wait(&wk);
			f = w.in;	/* the worker consumed its bytes */
			break;
		case 5: {
			/* The worker takes the next len bytes, the main thread
			 * the rest of the burst after them. */
			struct fz mine;
			unsigned nops = fz_u8(&f) % 32 + 1;

			len = fz_count(&f, SIZE_MAX) * 4;
			if (len > (size_t)(f.end - f.p))
				len = (size_t)(f.end - f.p);
			w.in.p = f.p;
			w.in.end = f.p + len;
			w.nops = nops;
			f.p += len;
			fz_worker_post(&wk, J_BURST);
			mine = f;
			for (unsigned i = 0; i < nops && !fz_done(&mine); i++)
				fa_op(&t, &mine, 0, HALF, 0, HALF);
			f = mine;
			fz_worker_wait(&wk);
			fa_verify(&t, 0, FA_SLOTS);
			break;
		}
		case 6: {
			unsigned a = fz_u8(&f) % HALF, b = HALF + fz_u8(&f) % HALF;
			struct fa_slot tmp = t.s[a];

			t.s[a] = t.s[b];
			t.s[b] = tmp;
			break;
		}
		default:
			fz_worker_stop(&wk);
			fz_worker_start(&wk);
			break;
		}
	}
	fa_verify(&t, 0, FA_SLOTS);
	/* The worker exits with every input (its cache goes back) and the
	 * blocks it allocated are freed after it has gone. */
	fz_worker_stop(&wk);
	for (unsigned i = 0; i < FA_SLOTS; i++)
		fa_release(&t, i);
	return 0;
}
