/*
 * fuzz-alloc-check.c - the allocator in check mode (JPSYNC_CHECK=1), one
 * thread: fuzz-alloc's operations and model (alloc-model.h) on sizes and
 * alignments weighted to the edges of size_t (fz_size_edge, fz_align_edge).
 *
 * Every call the model makes is a correct one, so check mode must answer
 * exactly as the default mode does (NULL with ENOMEM or EINVAL at the
 * edges, the old block intact, free keeping errno) and say nothing: a
 * check-mode report aborts the process (a finding), and a weaker check
 * taken because its machinery failed (said on stderr, counted by
 * jp__huge_unprotected) is a finding here too.
 *
 * Check mode is read once, at the allocator's first call: this is its own
 * program, which sets JPSYNC_CHECK=1 before that call.
 */
#include "config.h"

#include "alloc-model.h"
#include "alloc/alloc_init.h"
#include "alloc/quarantine.h"
#include "testutil.h"

#include <jpsync/alloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS 4096

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int rc;

	(void)argc;
	(void)argv;
	fz_target = "alloc-check";
	rc = fz_single_thread();
	if (rc != 0)
		return rc;
	/* Before the allocator's first call: the options are read once. */
	setenv("JPSYNC_CHECK", "1", 1);
	jp_free(jp_alloc(1));
	if (!jp__settings.check && jp_test_on_memcheck()) {
		/* jp_alloc(3): memcheck turns check mode off (it checks
		 * itself); replay-alloc replays the default mode under it. */
		printf("replay: %s: skipped: check mode is off here (valgrind's memcheck)\n",
		       fz_target);
		return 77;
	}
	/* Anywhere else the options were read before the line above set
	 * JPSYNC_CHECK (a constructor that reads them at load): libFuzzer
	 * ignores what this returns, and would fuzz the default mode. */
	FZ_CHECK(jp__settings.check, "check mode is off: JPSYNC_CHECK was read before "
		 "the allocator's first call");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fa_table t;
	struct fz f;

	memset(&t, 0, sizeof t);
	t.check_mode = true;
	t.edges = true;
	fz_init(&f, data, size);
	for (unsigned n = 0; !fz_done(&f) && n < MAX_OPS; n++)
		fa_op(&t, &f, 0, FA_SLOTS, 0, FA_SLOTS);
	fa_verify(&t, 0, FA_SLOTS);
	for (unsigned i = 0; i < FA_SLOTS; i++)
		fa_release(&t, i);
	FZ_CHECK(jp__huge_unprotected() == 0,
		 "check mode degraded %llu times (said on stderr) for correct calls",
		 (unsigned long long)jp__huge_unprotected());
	return 0;
}
