/*
 * alloc-helper-fork.c - alloc-helper's fork modes: fork-nested,
 * fork-nested-stress and fork-at-start (alloc-helper.c's opening comment
 * says what each does).
 */
#include "alloc-helper.h"

#include <jpsync/alloc.h>

#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

/*
 * fork-nested.  The helper's own prepare handler is registered after the
 * allocator's (which the library registers when it is loaded), so it runs
 * before it: the nested fork comes before the allocator takes its locks.
 * (A fork nested inside the allocator's locks is fork-nested-stress's: its
 * timer's signal is delivered as fork returns, after every prepare
 * handler.  Registering this one first, from the executable's preinit
 * function, crashed at start on s390x.)  It raises a signal whose
 * handler forks again (in a single-threaded process, where glibc's own
 * fork takes no lock).  Parent and both children must then allocate.
 */
static volatile sig_atomic_t nested_armed, nested_bad;

static void exercise(void)
{
	void *p[64];

	for (int i = 0; i < 64; i++)
		p[i] = jp_alloc((size_t)(i * 523));
	for (int i = 0; i < 64; i++)
		jp_free(p[i]);
	jp_free(jp_alloc(1 << 20));	/* huge: the huge lock */
	jp_thread_flush();		/* the class locks */
	jp_alloc_trim();		/* the segment lock */
}

/* Fork a child that exercises the allocator and exits; true if it did. */
static bool fork_exercise(void)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		exercise();
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

static void nested_fork(int sig)
{
	int saved = errno;

	(void)sig;
	if (!fork_exercise())
		nested_bad = 1;
	errno = saved;
}

static void prepare_raises(void)
{
	if (nested_armed) {
		nested_armed = 0;	/* not again in the nested fork */
		raise(SIGUSR1);
	}
}

int fork_nested(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = nested_fork;
	sigemptyset(&sa.sa_mask);
	if (pthread_atfork(prepare_raises, NULL, NULL) != 0 ||
	    sigaction(SIGUSR1, &sa, NULL) != 0)
		return 2;
	alarm(30);	/* a deadlock ends by SIGALRM */
	exercise();
	for (int r = 0; r < 20; r++) {
		nested_armed = 1;
		if (!fork_exercise())
			return 3;
		exercise();	/* the parent: every lock free again */
	}
	return nested_bad ? 4 : 0;
}

/*
 * fork-nested-stress: single-threaded (a process that ever had a thread
 * deadlocks in glibc's own fork when a handler of a fork forks), forks in a
 * loop while a 100 us CPU-time timer's handler forks as well.  The signal
 * is blocked except around fork(), so that the handler's fork lands inside
 * the loop's fork (the kernel delivers it as fork returns: after the
 * prepare handlers took the locks, before the parent handlers release
 * them) or just before it, and never inside the allocator's own code: a
 * child forked from a handler that interrupted malloc itself inherits a
 * half-done operation (as with any malloc; POSIX allows such a child only
 * async-signal-safe calls), which is not what this tests.
 */
static volatile sig_atomic_t nest_forks, nest_inside, in_fork;

static void timer_fork(int sig)
{
	if (in_fork)
		nest_inside++;
	nested_fork(sig);
	nest_forks++;
}

static void mark_in_fork(void)
{
	in_fork = 1;	/* registered after the allocator's: runs before it */
}


static void mark_out_of_fork(void)
{
	in_fork = 0;
}

int fork_nested_stress(void)
{
	const char *e = getenv("FORKS");
	int forks = e != NULL ? atoi(e) : 300, bad = 0;
	struct sigaction sa;
	struct itimerval it = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 }, { 0, 0 } };
	sigset_t prof;

	alarm(120);	/* a deadlock ends by SIGALRM */
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	sigprocmask(SIG_BLOCK, &prof, NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = timer_fork;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (pthread_atfork(mark_in_fork, NULL, NULL) != 0 ||
	    sigaction(SIGPROF, &sa, NULL) != 0)
		return 2;
	exercise();	/* the allocator's handlers, then ours: */
	if (pthread_atfork(NULL, mark_out_of_fork, mark_out_of_fork) != 0)
		return 2;
	setitimer(ITIMER_PROF, &it, NULL);
	for (int f = 0; f < forks; f++) {
		int st = 0;
		pid_t pid;

		sigprocmask(SIG_UNBLOCK, &prof, NULL);
		pid = fork();
		sigprocmask(SIG_BLOCK, &prof, NULL);
		if (pid == 0) {
			setitimer(ITIMER_PROF, &off, NULL);
			exercise();
			_exit(0);
		}
		while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
		exercise();
	}
	setitimer(ITIMER_PROF, &off, NULL);
	fprintf(stderr, "forks %d nested %d (inside a fork %d) bad %d/%d\n", forks,
		(int)nest_forks, (int)nest_inside, bad, (int)nested_bad);
	return bad == 0 && !nested_bad ? 0 : 1;
}

/* ---- fork-at-start ---------------------------------------------------- */

/* The allocator starts while the main thread forks: the child must find
 * it started (or not begun) and its locks free. */
static _Atomic int start_go, start_stop;
static void *start_blocks[2][64];	/* global: see test-alloc-fork's fork_blocks */

static void *start_thread(void *arg)
{
	void **p = start_blocks[(uintptr_t)arg];

	while (!atomic_load(&start_go))
		;
	while (!atomic_load(&start_stop)) {
		for (int i = 0; i < 64; i++)
			p[i] = jp_alloc((size_t)(16 + i * 40));
		for (int i = 0; i < 64; i++)
			jp_free(p[i]);
	}
	return NULL;
}

int fork_at_start(void)
{
	pthread_t t[2];
	int bad = 0;

	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, start_thread, (void *)i) != 0)
			return 2;
	atomic_store(&start_go, 1);	/* no jp_alloc in this process before */
	for (int f = 0; f < 20; f++) {
		int st;
		pid_t pid = fork();

		if (pid == 0) {
			alarm(10);	/* a deadlock ends by SIGALRM */
			for (int i = 0; i < 100; i++)
				jp_free(jp_alloc((size_t)(16 + i * 40)));
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad++;
	}
	atomic_store(&start_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	fprintf(stderr, "bad %d\n", bad);
	return 0;
}
