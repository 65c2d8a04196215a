/*
 * heap-profile-prog.c - known allocations for tests/alloc/test-heap-profile.sh,
 * run under jpsync-run --heap-profile: keep_big keeps 64 MiB in 4 KiB
 * blocks, keep_small 16 MiB, churn allocates 32 MiB and frees it all (in
 * the "alloc" figures, not "in use"), grow keeps one block grown by realloc
 * from 1 to 24 MiB (past 256 KiB a block has a mapping of its own, which
 * realloc resizes with mremap).  With "signal" as argument it then raises
 * SIGUSR2 (the stats signal of the test).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 4096
#define MIB ((size_t)1 << 20)

/* Not static: the blocks stay reachable, and the compiler cannot drop
 * the allocations as unused. */
void *kept[(80 * MIB) / BLOCK];
size_t nkept;

__attribute__((noinline)) void keep_big(void)
{
	for (size_t i = 0; i < 64 * MIB / BLOCK; i++)
		kept[nkept++] = malloc(BLOCK);
}

__attribute__((noinline)) void keep_small(void)
{
	for (size_t i = 0; i < 16 * MIB / BLOCK; i++)
		kept[nkept++] = malloc(BLOCK);
}

__attribute__((noinline)) void churn(void)
{
	void *volatile p;

	for (size_t i = 0; i < 32 * MIB / BLOCK; i++) {
		p = malloc(BLOCK);
		free(p);
	}
}

void *grown;

__attribute__((noinline)) void grow(void)
{
	static const size_t mib[] = { 1, 2, 4, 8, 16, 24 };

	for (size_t i = 0; i < sizeof mib / sizeof mib[0]; i++) {
		void *q = realloc(grown, mib[i] * MIB);

		if (q == NULL) {
			fprintf(stderr, "heap-profile-prog: out of memory\n");
			exit(1);
		}
		grown = q;
		memset(grown, 1, mib[i] * MIB);
	}
}

int main(int argc, char **argv)
{
	keep_big();
	churn();
	grow();
	keep_small();
	for (size_t i = 0; i < nkept; i++)
		if (kept[i] == NULL) {
			fprintf(stderr, "heap-profile-prog: out of memory\n");
			return 1;
		}
	if (argc > 1 && strcmp(argv[1], "signal") == 0)
		raise(SIGUSR2);
	return 0;
}
