/*
 * alloc-pair.c - N free+malloc pairs of 64 bytes in one thread, for
 * counting instructions with valgrind --tool=callgrind.
 *
 *   alloc-pair N [free|sized]
 *
 * free (the default): free(p), then p = malloc(64).  sized: the block goes
 * back through the allocator's C sized free instead, told its size (64):
 * free_sized (C23: jpsync's preload module, glibc from 2.39), else
 * jemalloc's sdallocx, tcmalloc's tc_free_sized or mimalloc's mi_free_size,
 * whichever the process has (weak references, bound by the dynamic linker
 * like free, so that both modes call through the same kind of PLT entry).
 * With none of them, exit 3: "not available here".  The C++ sized delete
 * is alloc-pair-cxx's.
 *
 * tests/bench/alloc-bench.sh runs it with two values of N under callgrind
 * and divides the difference of the totals by the difference of the N, so
 * that start-up and exit cost cancel and what remains is the steady-state
 * cost of one free plus one malloc (the loop's own few instructions
 * included).  It prints the object that defines malloc, so the driver can
 * tell that an LD_PRELOAD took effect.
 *
 * Sixteen other 64-byte blocks stay allocated during the loop, as in a real
 * program: with the pair's block alone in its size class, every free
 * empties a page and mimalloc takes its page-retire path each time (117
 * instructions a pair instead of 54 here).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pointer escapes, so the compiler cannot delete the pair. */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

#define WEAK __attribute__((weak))
extern WEAK void free_sized(void *ptr, size_t size);
extern WEAK void sdallocx(void *ptr, size_t size, int flags);
extern WEAK void tc_free_sized(void *ptr, size_t size);
extern WEAK void mi_free_size(void *ptr, size_t size);

/*
 * n pairs whose free is FREE_P (a statement on p); returns the last block,
 * NULL on failure.  One function for each, so that the loop is the same
 * nine instructions as before the modes came (p in the argument register
 * between the calls), plus the size argument where there is one.
 */
#define PAIRS(name, FREE_P) \
static __attribute__((noinline)) void *name(void *p, long n) \
{ \
	for (long i = 0; i < n; i++) { \
		if (p == NULL) \
			break; \
		ESCAPE(p); \
		FREE_P; \
		p = malloc(64); \
	} \
	return p; \
}
PAIRS(pairs_free, free(p))
PAIRS(pairs_free_sized, free_sized(p, 64))
PAIRS(pairs_sdallocx, sdallocx(p, 64, 0))
PAIRS(pairs_tc_free_sized, tc_free_sized(p, 64))
PAIRS(pairs_mi_free_size, mi_free_size(p, 64))

int main(int argc, char **argv)
{
	long n;
	void *p, *sym, *keep[16];
	const char *mode = argc > 2 ? argv[2] : "free", *how = "free";
	char *end;
	Dl_info info;

	if (argc < 2 || argc > 3 || (n = strtol(argv[1], &end, 10)) < 0 ||
	    *end != '\0' || (strcmp(mode, "free") != 0 && strcmp(mode, "sized") != 0)) {
		fprintf(stderr, "usage: alloc-pair N [free|sized]\n");
		return 2;
	}
	if (strcmp(mode, "sized") == 0) {
		how = free_sized != NULL ? "free_sized" :
		      sdallocx != NULL ? "sdallocx" :
		      tc_free_sized != NULL ? "tc_free_sized" :
		      mi_free_size != NULL ? "mi_free_size" : NULL;
		if (how == NULL) {
			fprintf(stderr, "alloc-pair: no sized free (free_sized, sdallocx, "
				"tc_free_sized, mi_free_size) in this process\n");
			return 3;
		}
	}
	for (int k = 0; k < 16; k++) {
		keep[k] = malloc(64);
		ESCAPE(keep[k]);
	}
	p = malloc(64);
	if (strcmp(how, "free") == 0)
		p = pairs_free(p, n);
	else if (strcmp(how, "free_sized") == 0)
		p = pairs_free_sized(p, n);
	else if (strcmp(how, "sdallocx") == 0)
		p = pairs_sdallocx(p, n);
	else if (strcmp(how, "tc_free_sized") == 0)
		p = pairs_tc_free_sized(p, n);
	else
		p = pairs_mi_free_size(p, n);
	if (p == NULL) {
		fprintf(stderr, "alloc-pair: malloc returned NULL\n");
		return 1;
	}
	free(p);
	for (int k = 0; k < 16; k++)
		free(keep[k]);
	sym = dlsym(RTLD_DEFAULT, "malloc");
	printf("alloc-pair: pairs=%ld free=%s malloc=%s\n", n, how,
	       sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL ?
	       info.dli_fname : "unknown");
	return 0;
}
