/*
 * fuzz-alloc.c - the allocator in default mode, one thread: the input is a
 * sequence of malloc, calloc, realloc, reallocarray, free, free_sized,
 * aligned_alloc, posix_memalign, memalign, valloc, pvalloc,
 * malloc_usable_size, malloc_trim / jp_alloc_trim and jp_thread_flush calls
 * on a table of 64 slots, each through the jp_* API or the preload
 * module's functions, checked against the model of alloc-model.h, on
 * sizes and alignments weighted to the edges of size_t (as alloc-check
 * does in check mode).
 */
#include "alloc-model.h"

#include <jpsync/alloc.h>

#include <stdlib.h>
#include <string.h>

/* More operations than this in one input add nothing the fuzzer cannot
 * reach with a shorter one, and only slow it down. */
#define MAX_OPS 4096

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_target = "alloc";
	/* Default mode: check mode's contract is another target's. */
	unsetenv("JPSYNC_CHECK");
	return fz_single_thread();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fa_table t;
	struct fz f;

	memset(&t, 0, sizeof t);
	t.edges = true;
	fz_init(&f, data, size);
	for (unsigned n = 0; !fz_done(&f) && n < MAX_OPS; n++)
		fa_op(&t, &f, 0, FA_SLOTS, 0, FA_SLOTS);
	fa_verify(&t, 0, FA_SLOTS);
	for (unsigned i = 0; i < FA_SLOTS; i++)
		fa_release(&t, i);
	return 0;
}
