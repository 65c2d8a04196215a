/*
 * alloc-bench.c - allocator throughput and peak RSS, one workload per run.
 *
 * The program calls plain malloc/free/realloc; the allocator under test is
 * chosen by whoever runs it (LD_PRELOAD of jpsync's preload module or of a
 * peer, nothing for glibc).  tests/bench/alloc-bench.sh runs it for every
 * implementation, interleaved, and collects the result lines.
 *
 *   alloc-bench -w WORKLOAD [-t THREADS] [-n OPS] [-s SCALE]
 *
 * Workloads (an "op" is one allocation call: malloc or realloc):
 *   balanced     the reference benchmark of the design (003): 80, 48, 256
 *                and 128-byte objects filled with memset, kept in a slot
 *                array and replaced at random, plus a 1-32 KiB block churn
 *                (one page-touching large allocation per 8 small ones)
 *   alloc-heavy  rounds of 4096 80-byte blocks allocated and memset, then
 *                all freed at once (stresses the refill and flush paths)
 *   small        tight malloc/free pairs of 16-256 bytes
 *   xthread      producers allocate batches of 16-512-byte blocks, hand
 *                them through a mutex/condvar queue to consumers, which
 *                free them (every free is a remote free)
 *   larson       each thread replaces random slots (16-512 bytes) of the
 *                array it holds and every 1024 ops swaps that array with a
 *                random one of a shared pool, so it frees blocks that other
 *                threads allocated
 *   realloc      chains of realloc growth from 16 bytes to 256 KiB, four
 *                chains interleaved per thread, new bytes filled each step
 *
 * The shapes of mimalloc-bench where jpsync trailed in 1.1, each written
 * after the program it stands for:
 *   sized        larson-sized: random slots of 1024 (16-512 bytes)
 *                replaced, allocated with C++ operator new and freed with
 *                sized operator delete(p, n), resolved at run time
 *   unsized      the same with plain operator delete(p): sized against
 *                unsized free in one allocator
 *   xsizes       xmalloc-test -s -1: half the threads produce batches of
 *                1024 blocks of 19 sizes from 8 bytes to 4 KiB (each size
 *                equally often, so most blocks are small), the first 128
 *                bytes written; one shared queue hands them to the other
 *                half, which free them
 *   falseshare   cache-scratch: the main thread allocates one 8-byte block
 *                per thread, side by side; each thread frees the one it is
 *                given, then allocates 8-byte blocks, writes (and reads
 *                back) each one 64 times over and frees it.  An allocator that hands a
 *                thread the block it freed puts the threads' blocks on one
 *                cache line (passive false sharing)
 *   shortmixed   cfrac, espresso: a window of 64 live blocks of 16 bytes to
 *                1 KiB (log-uniform: as many 16-31 as 512-1023), filled,
 *                a random one replaced per op
 *
 * Work is fixed in total (OPS, default per workload, times SCALE) and split
 * evenly between the threads, so a run takes about as long at 300 threads
 * as at 1 and shows how throughput scales on the machine's cores.  All
 * threads start together behind a barrier and wait for each other at the end
 * (so every thread's cache is alive at once when peak RSS is taken); the
 * time is measured between the two barriers.
 *
 * Every block is filled with a pattern when allocated and checked before it
 * is freed; a mismatch (two live blocks overlapping, a block handed out
 * twice, contents lost by realloc) or a NULL from malloc prints
 * "alloc-bench: CHECK FAILED: ..." and exits 1.
 *
 * Output, one line on stdout:
 *   alloc-bench: workload=W threads=T ops=N seconds=S ops_per_sec=R
 *     peak_rss_kb=K [delete=LIBRARY] malloc=LIBRARY
 * where LIBRARY is the object that defines the malloc this process uses
 * (and for sized and unsized the operator delete it calls), so the driver
 * can tell that an LD_PRELOAD took effect.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "alloc-bench.h"

/* ------------------------------------------------------------------ main */

struct worker {
	struct bench *b;
	unsigned id;
	pthread_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct bench *b = wk->b;

	if (b->w->prepare != NULL)
		b->w->prepare(b, wk->id);
	pthread_barrier_wait(&b->ready);
	pthread_barrier_wait(&b->start);
	b->w->run(b, wk->id);
	pthread_barrier_wait(&b->end);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: alloc-bench -w WORKLOAD [-t THREADS] [-n OPS] [-s SCALE]\n"
		"workloads:");
	for (size_t i = 0; i < alloc_bench_nworkloads; i++)
		fprintf(f, " %s", alloc_bench_workloads[i].name);
	fprintf(f, "\nOPS is the total number of allocations (default per workload),\n"
		"scaled by SCALE (default 1); it is split between the THREADS.\n");
}

static const char *malloc_provider(void)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "malloc");

	if (sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL &&
	    info.dli_fname[0] != '\0')
		return info.dli_fname;
	return "unknown";
}

int main(int argc, char **argv)
{
	struct bench b;
	const char *wname = NULL;
	unsigned long threads = 1;
	double scale = 1.0;
	uint64_t ops = 0;
	struct worker *wk;
	pthread_attr_t attr;
	struct rusage ru;
	double t0, t1;
	int c;

	memset(&b, 0, sizeof b);
	while ((c = getopt(argc, argv, "w:t:n:s:h")) != -1) {
		char *end;

		switch (c) {
		case 'w':
			wname = optarg;
			break;
		case 't':
			errno = 0;
			threads = strtoul(optarg, &end, 10);
			if (errno || *end || threads < 1 || threads > 4096) {
				fprintf(stderr, "alloc-bench: bad thread count '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			errno = 0;
			ops = strtoull(optarg, &end, 10);
			if (errno || *end || ops < 1) {
				fprintf(stderr, "alloc-bench: bad op count '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			scale = strtod(optarg, &end);
			if (*end || !(scale > 0) || scale > 1e6) {
				fprintf(stderr, "alloc-bench: bad scale '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (wname == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < alloc_bench_nworkloads; i++)
		if (strcmp(alloc_bench_workloads[i].name, wname) == 0)
			b.w = &alloc_bench_workloads[i];
	if (b.w == NULL) {
		fprintf(stderr, "alloc-bench: unknown workload '%s'\n", wname);
		usage(stderr);
		return 2;
	}

	b.threads = (unsigned)threads;
	b.ops = ops != 0 ? ops : (uint64_t)(b.w->default_ops * scale);
	if (b.w->setup != NULL && b.w->setup(&b) != 0)
		return 1;
	if (b.ops < b.threads)
		b.ops = b.threads;
	if (b.ops_unit == 0)
		b.ops_unit = b.threads;
	if (b.ops < b.ops_unit)
		b.ops = b.ops_unit;
	b.ops -= b.ops % b.ops_unit;

	pthread_barrier_init(&b.ready, NULL, b.threads + 1);
	pthread_barrier_init(&b.start, NULL, b.threads + 1);
	pthread_barrier_init(&b.end, NULL, b.threads + 1);
	wk = xmalloc(b.threads * sizeof *wk);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512 * 1024);
	for (unsigned i = 0; i < b.threads; i++) {
		int e;

		wk[i].b = &b;
		wk[i].id = i;
		e = pthread_create(&wk[i].tid, &attr, worker_main, &wk[i]);
		if (e != 0) {
			fprintf(stderr, "alloc-bench: pthread_create: %s\n", strerror(e));
			return 1;
		}
	}
	pthread_attr_destroy(&attr);
	pthread_barrier_wait(&b.ready);
	t0 = now();
	pthread_barrier_wait(&b.start);
	pthread_barrier_wait(&b.end);
	t1 = now();
	for (unsigned i = 0; i < b.threads; i++)
		pthread_join(wk[i].tid, NULL);

	if (b.w->teardown != NULL)
		b.w->teardown(&b);
	free(wk);

	getrusage(RUSAGE_SELF, &ru);
	printf("alloc-bench: workload=%s threads=%lu ops=%" PRIu64
	       " seconds=%.6f ops_per_sec=%.0f peak_rss_kb=%ld%s%s malloc=%s\n",
	       b.w->name, threads, b.ops, t1 - t0,
	       t1 > t0 ? (double)b.ops / (t1 - t0) : 0.0, ru.ru_maxrss,
	       b.delete_provider != NULL ? " delete=" : "",
	       b.delete_provider != NULL ? b.delete_provider : "",
	       malloc_provider());
	return 0;
}
