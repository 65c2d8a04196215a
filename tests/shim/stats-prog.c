/*
 * stats-prog.c - a program run under the preload module by
 * tests/shim/test-jpsync-run-stats.sh, whose statistics are known:
 *
 *   stats-prog BYTES [exit N | kill SIG | pause]
 *
 * prints "pid=PID" on standard output, allocates BYTES with malloc, writes
 * every byte of it (so that it is resident), frees it, then returns 0,
 * exits with N, raises SIG (a number), or waits for a signal.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	char *p;

	printf("pid=%ld\n", (long)getpid());
	fflush(stdout);
	p = malloc(bytes);
	if (p == NULL && bytes != 0)
		return 99;
	memset(p, 1, bytes);
	free(p);
	if (argc > 3 && strcmp(argv[2], "exit") == 0)
		return atoi(argv[3]);
	if (argc > 3 && strcmp(argv[2], "kill") == 0)
		raise(atoi(argv[3]));
	if (argc > 2 && strcmp(argv[2], "pause") == 0)
		for (;;)
			pause();
	return 0;
}
