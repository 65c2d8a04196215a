/*
 * test-alloc-misuse-classes.c - what the checks catch: one small program per
 * class of heap misuse, each run in a child in the default mode and under
 * JPSYNC_CHECK=1, and the result of each (caught, with the message that
 * names the class; a fault at the access; not caught) asserted exactly as
 * the table below says.  The same table is README.md's "What the checks
 * catch" (under "Debugging modes"): the last case reads the README and
 * fails where a cell says something else, so that the two cannot drift.
 *
 * The program is its own child: "test-alloc-misuse-classes CASE" runs one
 * case and exits 0 when nothing stopped it (a finding aborts).  The mode is
 * the environment the child is started with (options are read once per
 * process), so each child is an exec of this program.
 */
#define _GNU_SOURCE
#include <jpsync/alloc.h>

#include "testutil.h"
#include "alloc-testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the misuse, one function per class ---------------------------------
 *
 * Each reads as a program would be written, with exactly one wrong line
 * (marked "the bug"), then goes on as a program would: frees what it has,
 * allocates again.  hide() keeps the compiler from seeing the bug (the size
 * of a block is known to it through jp_alloc's alloc_size attribute, and
 * _FORTIFY_SOURCE would abort before the allocator sees anything).
 */

#define SMALL	64		/* a class of the thread caches (up to 32 KiB) */
#define MEDIUM	100000		/* class 112 KiB: above 32 KiB, never cached */
#define LARGE	MiB		/* above 256 KiB: the huge path (huge.c) */

static void *hide(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static const char text[128] =
	"The quick brown fox jumps over the lazy dog; the five boxing wizards jump quickly.";

static void underflow(size_t n)
{
	char *a = jp_alloc(n), *b = jp_alloc(n);

	memcpy(b, text, 16);
	((char *)hide(b))[-1] = 'x';			/* the bug */
	jp_free(b);
	jp_free(a);
	jp_free(jp_alloc(n));
	jp_free(jp_alloc(n));
}

static void underflow_small(void)
{
	underflow(SMALL);
}

static void underflow_medium(void)
{
	underflow(MEDIUM);
}

static void underflow_large(void)
{
	underflow(LARGE);
}

static void overflow_memcpy(size_t n)
{
	char *a = jp_alloc(n), *b = jp_alloc(n);

	memcpy(b, text, 16);
	memcpy((char *)hide(a) + n - 32, text, 64);	/* the bug: 32 bytes past */
	jp_free(a);
	jp_free(b);
	a = jp_alloc(n);
	b = jp_alloc(n);
	jp_free(a);
	jp_free(b);
}

static void overflow_memcpy_small(void)
{
	overflow_memcpy(SMALL);
}

static void overflow_memcpy_medium(void)
{
	overflow_memcpy(MEDIUM);
}

static void overflow_large(void)
{
	char *p = jp_alloc(LARGE);

	memset(hide(p), 'A', LARGE + 32);		/* the bug */
	jp_free(p);
	jp_free(jp_alloc(LARGE));
}

static void write_after_free(size_t n)
{
	char *p = jp_alloc(n);

	memcpy(p, text, 64);
	jp_free(p);
	memcpy(hide(p), text + 32, 32);			/* the bug */
	jp_free(jp_alloc(n));
	jp_free(jp_alloc(n));
}

static void write_after_free_small(void)
{
	write_after_free(SMALL);
}

static void write_after_free_large(void)
{
	write_after_free(LARGE);
}

static void zero_fill_after_free_large(void)
{
	char *p = jp_alloc(LARGE);

	memcpy(p, text, 64);
	jp_free(p);
	memset(hide(p), 0, LARGE);			/* the bug */
	jp_free(jp_alloc(LARGE));
}

static void use_after_reuse_large(void)
{
	char *p = jp_alloc(LARGE), *q;

	memcpy(p, text, 64);
	jp_free(p);
	q = jp_alloc(LARGE);
	memcpy(q, text, 64);
	memcpy(hide(p), text + 64, 32);			/* the bug: p, not q */
	jp_free(q);
}

static void double_free(void)
{
	char *p = jp_alloc(SMALL);

	jp_free(p);
	jp_free(hide(p));				/* the bug */
}

static void double_free_later(void)
{
	char *p = jp_alloc(SMALL), *q[8];

	for (int i = 0; i < 8; i++)
		q[i] = jp_alloc(SMALL);
	jp_free(p);
	for (int i = 0; i < 8; i++)
		jp_free(q[i]);
	jp_free(hide(p));				/* the bug */
}

static void free_interior(void)
{
	char *p = jp_alloc(SMALL);

	jp_free((char *)hide(p) + 16);			/* the bug */
	jp_free(p);
}

static const char a_static[64] = "not a block";

static void free_static(void)
{
	jp_free(hide((void *)a_static));		/* the bug */
}

static void free_stack(void)
{
	char local[64];

	memcpy(local, text, sizeof local);
	jp_free(hide(local));				/* the bug */
}

static void free_sized_larger(void)
{
	char *p = jp_alloc(SMALL);

	jp_free_sized(p, 2 * SMALL);			/* the bug */
	jp_free(jp_alloc(SMALL));
}

static void free_sized_smaller(void)
{
	char *p = jp_alloc(SMALL);

	jp_free_sized(p, SMALL / 2);			/* the bug */
	jp_free(jp_alloc(SMALL));
}

static void realloc_freed(void)
{
	char *p = jp_alloc(SMALL), *q;

	memcpy(p, text, SMALL);
	jp_free(p);
	q = jp_realloc(hide(p), 2 * SMALL);		/* the bug */
	jp_free(q);
}

/* ---- the table ----------------------------------------------------------- */

enum outcome {
	MISSED,		/* exit 0, nothing on standard error */
	CAUGHT,		/* SIGABRT, "jpsync: <what> of 0x..." first */
	FAULT,		/* SIGSEGV at the access, nothing on standard error */
};

struct expect {
	enum outcome outcome;
	const char *what;	/* CAUGHT: the class as the library names it */
};

struct misuse {
	const char *name;	/* the README row's first cell */
	void (*fn)(void);
	struct expect dflt, check;
	/* Check mode misses a class that it must catch: the README cell is
	 * marked (bold), and the test expects today's result. */
	bool check_gap;
};

#define M		{ MISSED, NULL }
#define C(what)		{ CAUGHT, what }
#define F		{ FAULT, NULL }
#define WIF		"write into the free block"
#define WAF		"write after free"
#define UND		"underflow before the start"
#define OVF		"overflow past the end"
#define DF		"double free"
#define UAF		"use after free"
#define INV		"invalid free"
#define INVS		"invalid free_sized (size larger than the block)"
#define INVSC		"invalid free_sized"	/* check mode: any other size */

static const struct misuse table[] = {
	{ "1-byte underflow, small block (64 B)", underflow_small, M, C(UND), false },
	{ "1-byte underflow, medium block (100000 B)", underflow_medium, M, C(UND), false },
	{ "1-byte underflow, huge block (1 MiB)", underflow_large, C(UND), C(UND), false },
	{ "32-byte overflow by memcpy, small block", overflow_memcpy_small, M, C(OVF), false },
	{ "32-byte overflow by memcpy, medium block", overflow_memcpy_medium, M, C(OVF), false },
	{ "32-byte overflow of a 1 MiB block", overflow_large, F, C(OVF), false },
	{ "write after free, small block", write_after_free_small, C(WIF), C(WAF), false },
	{ "write after free, 1 MiB block", write_after_free_large, F, C(UAF), false },
	{ "zero-fill after free, 1 MiB block", zero_fill_after_free_large, F, C(UAF), false },
	{ "write through a freed 1 MiB block after its reuse", use_after_reuse_large, M, C(UAF), false },
	{ "double free, immediate", double_free, C(DF), C(DF), false },
	{ "double free, after other frees", double_free_later, C(DF), C(DF), false },
	{ "free of an interior pointer", free_interior, C(INV), C(INV), false },
	{ "free of a static", free_static, C(INV), C(INV), false },
	{ "free of a stack address", free_stack, C(INV), C(INV), false },
	{ "free_sized with a larger size", free_sized_larger, C(INVS), C(INVSC), false },
	{ "free_sized with a smaller size", free_sized_smaller, M, C(INVSC), false },
	{ "realloc of a freed block", realloc_freed, C(DF), C(DF), false },
};

/* The README's words for an outcome. */
static void cell(const struct expect *e, bool gap, char *buf, size_t n)
{
	const char *fmt = gap ? "**%s**" : "%s";
	char s[128];

	switch (e->outcome) {
	case MISSED:
		snprintf(s, sizeof s, "not caught");
		break;
	case CAUGHT:
		snprintf(s, sizeof s, "caught: %s", e->what);
		break;
	case FAULT:
		snprintf(s, sizeof s, "faults at the access");
		break;
	}
	snprintf(buf, n, fmt, s);
}

/* ---- running a case in a child ------------------------------------------- */

static char self[4096];

struct run_arg {
	const char *name;
	bool check;
};

static void exec_case(void *p)
{
	struct run_arg *r = p;

	unsetenv("JPSYNC_CHECK");
	if (r->check)
		setenv("JPSYNC_CHECK", "1", 1);
	jp_test_execv(self, (char *[]){ self, (char *)r->name, NULL });
	fprintf(stderr, "exec %s: %s\n", self, strerror(errno));
	_exit(126);
}

static bool as_expected(const struct expect *e, const struct jp_child_result *res)
{
	char want[160];

	switch (e->outcome) {
	case MISSED:
		return res->exited && res->status == 0 && res->err[0] == '\0';
	case FAULT:
		return res->signaled && res->sig == SIGSEGV && res->err[0] == '\0';
	case CAUGHT:
		snprintf(want, sizeof want, "jpsync: %s of 0x", e->what);
		return res->signaled && res->sig == SIGABRT &&
		       strncmp(res->err, want, strlen(want)) == 0;
	}
	return false;
}

static void run_one(const struct misuse *m, bool check)
{
	struct run_arg r = { m->name, check };
	const struct expect *e = check ? &m->check : &m->dflt;
	struct jp_child_result res;
	char want[160];

	CU_ASSERT_EQUAL_FATAL(jp_test_child(exec_case, &r, &res), 0);
	if (as_expected(e, &res)) {
		CU_PASS("as the table says");
		return;
	}
	cell(e, false, want, sizeof want);
	printf("\n  %s, %s mode: wanted \"%s\"; got %s %d, stderr:\n%s\n", m->name,
	       check ? "check" : "default", want, res.exited ? "exit" : "signal",
	       res.exited ? res.status : res.sig, res.err);
	CU_FAIL("the result differs from the table");
}

static void test_classes(void)
{
	for (size_t i = 0; i < JP_ARRAY_LEN(table); i++) {
		run_one(&table[i], false);
		run_one(&table[i], true);
	}
}

/* ---- README.md agrees ------------------------------------------------------ */

/* Trim s in place: leading and trailing blanks. */
static char *trim(char *s)
{
	char *e;

	while (*s == ' ')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* Split a table row "| a | b | c |" into at most n cells; their count. */
static int cells(char *row, char **c, int n)
{
	int k = 0;
	char *s = strchr(row, '|');

	while (s != NULL && k < n) {
		char *e = strchr(s + 1, '|');

		if (e == NULL)
			break;
		*e = '\0';
		c[k++] = trim(s + 1);
		s = e;
	}
	return k;
}

static void test_readme(void)
{
	const char *top = getenv("top_srcdir");
	char path[4096], line[2048], *c[4], want[160];
	bool in = false, seen[JP_ARRAY_LEN(table)] = { false };
	int rows = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/README.md", top != NULL ? top : ".");
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "### What the checks catch", 25) == 0) {
			in = true;
			continue;
		}
		if (!in)
			continue;
		if (line[0] == '#')
			break;
		if (line[0] != '|' || strncmp(line, "| ---", 5) == 0 ||
		    strncmp(line, "| misuse |", 10) == 0)
			continue;
		if (cells(line, c, 4) != 4) {
			printf("\n  README: a row without 4 cells: %s\n", line);
			CU_FAIL("README: a malformed row");
			continue;
		}
		rows++;
		size_t i = 0;

		while (i < JP_ARRAY_LEN(table) && strcmp(table[i].name, c[0]) != 0)
			i++;
		if (i == JP_ARRAY_LEN(table)) {
			printf("\n  README: a row the test has no case for: %s\n", c[0]);
			CU_FAIL("README: a class without a case");
			continue;
		}
		seen[i] = true;
		cell(&table[i].dflt, false, want, sizeof want);
		if (strcmp(c[1], want) != 0) {
			printf("\n  README, %s, default mode: \"%s\", the test: \"%s\"\n",
			       c[0], c[1], want);
			CU_FAIL("README: a default-mode cell differs from the test");
		}
		cell(&table[i].check, table[i].check_gap, want, sizeof want);
		if (strcmp(c[2], want) != 0) {
			printf("\n  README, %s, check mode: \"%s\", the test: \"%s\"\n",
			       c[0], c[2], want);
			CU_FAIL("README: a check-mode cell differs from the test");
		}
		/* The cost is said exactly where the default mode misses. */
		if ((table[i].dflt.outcome == MISSED) != (strcmp(c[3], "") != 0)) {
			printf("\n  README, %s: the cost cell \"%s\" (wanted %s)\n", c[0],
			       c[3], table[i].dflt.outcome == MISSED ? "a cost" : "empty");
			CU_FAIL("README: a cost cell where the default mode catches, or none where it misses");
		}
	}
	fclose(f);
	CU_ASSERT(in);
	CU_ASSERT_EQUAL(rows, (int)JP_ARRAY_LEN(table));
	for (size_t i = 0; i < JP_ARRAY_LEN(table); i++)
		if (!seen[i]) {
			printf("\n  README: no row for %s\n", table[i].name);
			CU_FAIL("README: a case without a row");
		}
}

static CU_TestInfo tests[] = {
	{ "each class, default and check mode, as the table says", test_classes },
	{ "README's table is the test's table", test_readme },
	{ NULL, NULL },
};

static CU_SuiteInfo suites[] = {
	{ "alloc-misuse-classes", NULL, NULL, NULL, NULL, tests },
	CU_SUITE_INFO_NULL,
};

int main(int argc, char **argv)
{
	if (argc == 2) {
		/* A fault is the result, not a report: the sanitizer runtimes
		 * would catch SIGSEGV and print their own. */
		signal(SIGSEGV, SIG_DFL);
		for (size_t i = 0; i < JP_ARRAY_LEN(table); i++)
			if (strcmp(argv[1], table[i].name) == 0) {
				table[i].fn();
				_exit(0);	/* nothing stopped it */
			}
		fprintf(stderr, "%s: no case \"%s\"\n", argv[0], argv[1]);
		return 2;
	}
	snprintf(self, sizeof self, "%s/tests/alloc/test-alloc-misuse-classes", builddir());
	return jp_test_run(suites);
}
