/*
 * alloc-testutil.h - what the jp_alloc suites (tests/alloc/test-alloc*.c)
 * share: RSS and statistics helpers, sizes scaled for memory cases, and
 * running tests/alloc/alloc-helper (or another program of the build tree)
 * in a child with an environment of its own.
 */
#ifndef JP_ALLOC_TESTUTIL_H
#define JP_ALLOC_TESTUTIL_H

#include <jpsync/alloc.h>

#include "testutil.h"

#include <stdbool.h>
#include <stddef.h>

#define MiB ((size_t)1 << 20)
#define JP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* False under valgrind and the sanitizers: RSS ratios are not asserted. */
bool rss_checks(void);
/* Bytes for a memory test: mib MiB scaled, and smaller again where RSS is
 * not asserted (valgrind, sanitizers: slow, and their shadow distorts RSS). */
size_t mem_size(size_t mib);
/* The resident set size, bytes (0 if unknown). */
size_t rss_now(void);
/* jp_alloc_stats into st; a failure fails the case. */
void stats(struct jp_alloc_stats *st);

/* The process lines of a jp_alloc_stats_print table (program, elapsed,
 * CPU time, peak RSS, page faults), as numbers. */
struct table_process {
	char name[64];
	long pid;
	double elapsed, user, sys;	/* seconds */
	unsigned long long max_rss, minflt, majflt;	/* bytes, counts */
};
/* Read them from table; a line missing or malformed fails the case and
 * returns false. */
bool table_process(const char *table, struct table_process *tp);

/* $top_builddir, or "." */
const char *builddir(void);

/* A program to exec in a child: prog arg1, with env set first. */
struct exec_arg {
	const char *prog;
	const char *arg1;
	const char *env[4];	/* NAME=value to set, NULL-terminated */
};
/* jp_test_child's function for a struct exec_arg: never returns. */
void exec_child(void *p);
/* tests/alloc/alloc-helper MODE in a child with env0 and env1 set (either
 * may be NULL). */
void run_helper(const char *mode, const char *env0, const char *env1,
		struct jp_child_result *res);

#endif
