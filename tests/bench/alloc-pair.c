/*
 * alloc-pair.c - N free+malloc pairs of 64 bytes in one thread, for
 * counting instructions with valgrind --tool=callgrind.
 *
 *   alloc-pair N
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

/* The pointer escapes, so the compiler cannot delete the pair. */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

int main(int argc, char **argv)
{
	long n;
	void *p, *sym, *keep[16];
	char *end;
	Dl_info info;

	if (argc != 2 || (n = strtol(argv[1], &end, 10)) < 0 || *end != '\0') {
		fprintf(stderr, "usage: alloc-pair N\n");
		return 2;
	}
	for (int k = 0; k < 16; k++) {
		keep[k] = malloc(64);
		ESCAPE(keep[k]);
	}
	p = malloc(64);
	for (long i = 0; i < n; i++) {
		if (p == NULL)
			break;
		ESCAPE(p);
		free(p);
		p = malloc(64);
	}
	if (p == NULL) {
		fprintf(stderr, "alloc-pair: malloc returned NULL\n");
		return 1;
	}
	free(p);
	for (int k = 0; k < 16; k++)
		free(keep[k]);
	sym = dlsym(RTLD_DEFAULT, "malloc");
	printf("alloc-pair: pairs=%ld malloc=%s\n", n,
	       sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL ?
	       info.dli_fname : "unknown");
	return 0;
}
