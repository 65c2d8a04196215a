/*
 * alloc-start-fork.c - a signal handler that forks interrupts the
 * allocator's start in the thread that makes it: the fork's prepare
 * handler must see the start as this thread's own and leave it, not wait
 * for it (it would wait for itself forever).
 *
 * The signal is raised at a chosen point: this program defines
 * pthread_self (exported with -rdynamic, so the library, which it
 * dlopens, calls ours), and the first call after arming raises SIGUSR1
 * before it answers.  The start calls pthread_self to write who makes it;
 * before 1.2 it did so after it had marked the start as running, and a
 * fork there never returned.  SIGALRM (10 s) ends a deadlock.
 * Usage: alloc-start-fork PATH-TO-libjpsync.so.1; exit 0 when all went
 * well, 1 with a message when not.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fork-reap.h"

static pthread_t (*real_self)(void);
static volatile sig_atomic_t armed, forks, bad;

pthread_t pthread_self(void)
{
	if (armed) {
		armed = 0;
		raise(SIGUSR1);
	}
	return real_self();
}

static void fork_in_handler(int sig)
{
	(void)sig;
	if (jp_fork_and_reap() != 0)
		bad = 1;
	forks++;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	void *(*p_alloc)(size_t);
	void (*p_free)(void *);
	void *h, *p;

	if (argc != 2) {
		fprintf(stderr, "usage: alloc-start-fork PATH-TO-libjpsync.so.1\n");
		return 2;
	}
	real_self = (pthread_t (*)(void))dlsym(RTLD_NEXT, "pthread_self");
	if (real_self == NULL) {
		fprintf(stderr, "alloc-start-fork: no pthread_self after ours: %s\n", dlerror());
		return 1;
	}
	if ((h = dlopen(argv[1], RTLD_NOW)) == NULL) {
		fprintf(stderr, "alloc-start-fork: %s\n", dlerror());
		return 1;
	}
	p_alloc = (void *(*)(size_t))dlsym(h, "jp_alloc");
	p_free = (void (*)(void *))dlsym(h, "jp_free");
	if (p_alloc == NULL || p_free == NULL) {
		fprintf(stderr, "alloc-start-fork: no jp_alloc or jp_free in %s\n", argv[1]);
		return 1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fork_in_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	alarm(10);		/* default action: a deadlock ends the program */
	armed = 1;
	p = p_alloc(48);	/* the first allocation starts the allocator */
	armed = 0;
	alarm(0);
	if (p == NULL || forks != 1 || bad) {
		fprintf(stderr, "alloc-start-fork: block %p, %d forks (want 1), child %s\n",
			p, (int)forks, bad ? "failed" : "ok");
		return 1;
	}
	memset(p, 0x5a, 48);
	p_free(p);
	return 0;
}
