/*
 * test-preload-compat-proc.c - test-preload-compat's cases about processes
 * and threads: fork from a signal handler inside malloc, fork racing stdio,
 * thousands of short-lived threads, a malloc-wrapping library preloaded
 * before or after the module, and dlopen of a library linked against
 * libjpsync (test-preload-compat.c's opening comment says what each checks).
 */
#define _GNU_SOURCE
#include "test-preload-compat.h"

#include <jpsync/alloc.h>	/* struct jp_alloc_stats only: jp_* by dlsym */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */

static volatile sig_atomic_t sig_forks, sig_bad;
/* The timer and its period: a fork and wait that take longer than the
 * period (a loaded machine, a large page table) would leave the next
 * signal pending as the handler returns, and the main loop, where the
 * signals are meant to land, would never run again.  The handler keeps the
 * period at twice its last fork and wait, 0.7 ms at least (timer_settime
 * and clock_gettime are async-signal-safe). */
static timer_t sig_timer;
static volatile long sig_period_ns = 700 * 1000;

static long elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (long)(b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

static void fork_handler(int sig)
{
	int saved = errno, st;
	struct timespec t0, t1;
	pid_t pid;

	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid == 0)
		_exit(7);
	if (pid < 0) {
		sig_bad = sig_bad + 1;
	} else {
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 7)
			sig_bad = sig_bad + 1;
		sig_forks = sig_forks + 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long want = elapsed_ns(&t0, &t1) * 2;
	if (want < 700 * 1000)
		want = 700 * 1000;
	if (want > 100 * 1000 * 1000)
		want = 100 * 1000 * 1000;
	if (want > sig_period_ns || want * 2 < sig_period_ns) {
		struct itimerspec its = { { 0, 0 }, { 0, 0 } };

		sig_period_ns = want;
		its.it_interval.tv_sec = sig_period_ns / 1000000000L;
		its.it_interval.tv_nsec = sig_period_ns % 1000000000L;
		its.it_value = its.it_interval;
		timer_settime(sig_timer, 0, &its, NULL);
	}
	errno = saved;
}

void case_fork_signal(void)
{
	const int want = (int)scaled(300, 30);
	struct sigaction sa;
	struct sigevent sev;
	struct itimerspec its;
	void *slot[64] = { 0 };
	unsigned long ops = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fork_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGUSR1;
	CHECK(timer_create(CLOCK_MONOTONIC, &sev, &sig_timer) == 0, "timer_create");
	memset(&its, 0, sizeof its);
	its.it_interval.tv_nsec = sig_period_ns;	/* 0.7 ms, mostly inside malloc/free */
	its.it_value = its.it_interval;
	timer_settime(sig_timer, 0, &its, NULL);
	/* Nothing but malloc and free in this thread: that is where the
	 * signal lands. */
	while (sig_forks < want) {
		for (int i = 0; i < 4096; i++) {
			size_t k = (ops * 7 + (size_t)i) % 64;
			free(slot[k]);
			slot[k] = malloc(16 + (ops * 13 + (size_t)i) % 3000);
			ops++;
		}
	}
	memset(&its, 0, sizeof its);
	timer_settime(sig_timer, 0, &its, NULL);
	timer_delete(sig_timer);
	for (int i = 0; i < 64; i++)
		free(slot[i]);
	printf("fork-signal: %d forks from a handler over %lu malloc/free pairs"
	       " (signal period %ld us)\n", (int)sig_forks, ops, sig_period_ns / 1000);
	CHECK(sig_bad == 0, "%d forks failed or their child did not exit 7", (int)sig_bad);
	/* The parent's allocator still works. */
	void *p = malloc(1000);
	CHECK(p != NULL, "malloc after the forks");
	free(p);
}

/* ------------------------------------------------------------------------ */

static atomic_bool stdio_stop;
static char stdio_path[64];

static void *stdio_worker(void *arg)
{
	FILE *f = fopen(stdio_path, "r");
	char *line = NULL;
	size_t cap = 0;
	unsigned long lines = 0;

	(void)arg;
	if (f == NULL)
		return (void *)1;
	while (!atomic_load(&stdio_stop)) {
		ssize_t n = getline(&line, &cap, f);
		if (n < 0) {
			rewind(f);
			fflush(NULL);
			/* a fresh buffer now and then: realloc growth from 0 */
			free(line);
			line = NULL;
			cap = 0;
			continue;
		}
		lines++;
		if (lines % 64 == 0)
			fflush(NULL);
	}
	free(line);
	fclose(f);
	return NULL;
}

void case_fork_stdio(void)
{
	const int forks = (int)scaled(200, 20);
	pthread_t th[3];
	int fd, bad = 0;

	strcpy(stdio_path, "/tmp/jpsync-stdio-XXXXXX");
	fd = mkstemp(stdio_path);
	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	FILE *w = fdopen(fd, "w");
	for (int i = 0; i < 2000; i++)
		fprintf(w, "line %d %.*s\n", i, i % 300, "................................................................................................................................................................................................................................................................................................................");
	fclose(w);
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, stdio_worker, NULL);
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			/* The child allocates and uses stdio: both must have been
			 * left consistent by fork. */
			char *p = malloc(5000);
			if (p == NULL)
				_exit(3);
			memset(p, 1, 5000);
			free(p);
			FILE *f = fopen("/dev/null", "w");
			if (f == NULL)
				_exit(4);
			fprintf(f, "%d\n", i);
			fclose(f);
			fflush(NULL);
			_exit(0);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad++;
	}
	atomic_store(&stdio_stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	unlink(stdio_path);
	printf("fork-stdio: %d forks against 3 threads in getline/fflush(NULL)\n", forks);
	CHECK(bad == 0, "%d of %d children failed", bad, forks);
}

/* ------------------------------------------------------------------------ */

static void *handed[64];
static pthread_mutex_t handed_lock = PTHREAD_MUTEX_INITIALIZER;

static void *request(void *arg)
{
	uintptr_t r = (uintptr_t)arg;
	void *keep[32];

	/* Allocate like a request handler: a spread of sizes, most freed here,
	 * one handed to another thread to free. */
	for (int i = 0; i < 32; i++) {
		keep[i] = malloc(16 + (r * 31 + (uintptr_t)i * 97) % 4000);
		if (keep[i] != NULL)
			memset(keep[i], (int)i, 16);
	}
	for (int i = 1; i < 32; i++)
		free(keep[i]);
	pthread_mutex_lock(&handed_lock);
	void *old = handed[r % 64];
	handed[r % 64] = keep[0];
	pthread_mutex_unlock(&handed_lock);
	free(old);	/* a block another thread allocated */
	return NULL;
}

static size_t run_requests(size_t from, size_t to)
{
	for (size_t r = from; r < to; r += 2) {
		pthread_t a, b;
		/* two at a time, as a server under light load */
		if (pthread_create(&a, NULL, request, (void *)(uintptr_t)r) != 0)
			return r;
		if (pthread_create(&b, NULL, request, (void *)(uintptr_t)(r + 1)) != 0) {
			pthread_join(a, NULL);
			return r;
		}
		pthread_join(a, NULL);
		pthread_join(b, NULL);
	}
	return to;
}

void case_threads(void)
{
	const size_t total = scaled(6000, 600), warm = total / 5;
	size_t done, rss_warm, rss_end;

	done = run_requests(0, warm);
	CHECK(done == warm, "pthread_create failed after %zu threads", done);
	rss_warm = rss_bytes();
	done = run_requests(warm, total);
	CHECK(done == total, "pthread_create failed after %zu threads", done);
	rss_end = rss_bytes();
	printf("threads: %zu short-lived threads; RSS after %zu: %zu KiB, after %zu: %zu KiB\n",
	       total, warm, rss_warm >> 10, total, rss_end >> 10);
	/* Flat: four times as many threads again may not add more than 4 MiB
	 * (each thread's cache would add tens of KiB if it leaked). */
	CHECK(rss_end <= rss_warm + ((size_t)4 << 20),
	      "RSS grew by %zu KiB over %zu threads", (rss_end - rss_warm) >> 10,
	      total - warm);
	for (int i = 0; i < 64; i++)
		free(handed[i]);
}

/* ------------------------------------------------------------------------ */

void check_hook(bool hook_first)
{
	unsigned long (*calls)(void) =
		(unsigned long (*)(void))dlsym(RTLD_DEFAULT, "jp_test_hook_calls");
	unsigned long (*fallbacks)(void) =
		(unsigned long (*)(void))dlsym(RTLD_DEFAULT, "jp_test_hook_fallbacks");
	int (*ctor_ok)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "jp_test_hook_ctor_ok");
	usable_fn us = jp_usable();

	CHECK(calls != NULL && fallbacks != NULL && ctor_ok != NULL && us != NULL,
	      "the hook library and libjpsync are loaded");
	if (calls == NULL || fallbacks == NULL || ctor_ok == NULL || us == NULL)
		return;
	CHECK(ctor_ok() == 1, "dlsym + dlerror in the hook's constructor");
	void *m = dlsym(RTLD_DEFAULT, "malloc");
	if (hook_first)
		CHECK(strstr(object_of(m), "libpreload-hook") != NULL,
		      "malloc is the hook's (%s)", object_of(m));
	else
		CHECK(in_module(m), "malloc is the module's (%s)", object_of(m));
	unsigned long before = calls();
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(1 + (size_t)i * 3);
		CHECK(p != NULL && us(p) >= 1 + (size_t)i * 3, "malloc through the hook");
		free(p);
	}
	char *s = strdup("dup");
	CHECK(s != NULL && us(s) >= 4, "strdup");
	free(s);
	if (hook_first)
		CHECK(calls() >= before + 1000, "the hook saw %lu calls", calls() - before);
	printf("hook: %lu calls through the hook, %lu served before dlsym returned\n",
	       calls(), fallbacks());
	/* dlsym(RTLD_NEXT) resolves without allocating in glibc: a few early
	 * requests at most, never a loop. */
	CHECK(fallbacks() <= 8, "%lu requests re-entered the hook", fallbacks());
}

/* ------------------------------------------------------------------------ */

static void *dl_thread(void *arg)
{
	int (*rt)(size_t) = (int (*)(size_t))arg;
	return (void *)(intptr_t)rt(2000);
}

void case_dlopen(const char *path)
{
	CHECK(dlsym(RTLD_DEFAULT, "jp_alloc") == NULL,
	      "libjpsync is already loaded: run this case without the module");
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL, "dlopen(%s): %s", path, h == NULL ? dlerror() : "");
	if (h == NULL)
		return;
	int (*rt)(size_t) = (int (*)(size_t))dlsym(h, "jp_dltest_roundtrip");
	CHECK(rt != NULL, "jp_dltest_roundtrip");
	if (rt == NULL)
		return;
	CHECK(rt(10000) == 0, "allocations through the dlopen'ed library");
	/* A thread created after the dlopen gets the allocator's TLS too. */
	pthread_t t;
	void *res = (void *)1;
	CHECK(pthread_create(&t, NULL, dl_thread, (void *)rt) == 0, "pthread_create");
	pthread_join(t, &res);
	CHECK(res == NULL, "allocations in a thread created after dlopen");
	printf("dlopen: %s loaded with libjpsync.so.1 after start-up\n", path);
}
