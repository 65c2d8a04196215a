/*
 * alloc-testutil.c - what the jp_alloc suites share (alloc-testutil.h).
 */
#include "alloc-testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool rss_checks(void)
{
	return !jp_test_on_valgrind() && !jp_test_sanitized();
}

/* Bytes for a memory test: scaled, and smaller again where RSS is not
 * asserted (valgrind, sanitizers: slow, and their shadow distorts RSS). */
size_t mem_size(size_t mib)
{
	size_t n = (size_t)jp_test_scaled(mib, 8) * MiB;

	return rss_checks() ? n : n / 4;
}

size_t rss_now(void)
{
	char buf[128];
	ssize_t n;
	unsigned long size = 0, res = 0;
	int fd = open("/proc/self/statm", O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu", &size, &res) != 2)
		return 0;
	return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

void stats(struct jp_alloc_stats *st)
{
	CU_ASSERT_EQUAL_FATAL(jp_alloc_stats(st, sizeof *st), 0);
}

/* The text after "\n" label in table, or NULL (the case fails). */
static const char *table_line(const char *table, const char *label)
{
	char want[64];
	const char *at;

	snprintf(want, sizeof want, "\n%s", label);
	at = strstr(table, want);
	if (at == NULL) {
		printf("\nno line \"%s\" in the table:\n%s\n", label, table);
		CU_FAIL("a line of the table is missing");
		return NULL;
	}
	return at + strlen(want);
}

bool table_process(const char *table, struct table_process *tp)
{
	const char *s;
	int n = 0;

	memset(tp, 0, sizeof *tp);
	if ((s = table_line(table, "  program         ")) != NULL)
		n += sscanf(s, "%63[^,\n], pid %ld\n", tp->name, &tp->pid);
	if ((s = table_line(table, "  elapsed         ")) != NULL)
		n += sscanf(s, "%lf s  (since the library was loaded)\n", &tp->elapsed);
	if ((s = table_line(table, "  CPU time, user  ")) != NULL)
		n += sscanf(s, "%lf s\n", &tp->user);
	if ((s = table_line(table, "  CPU time, system")) != NULL)
		n += sscanf(s, "%lf s\n", &tp->sys);
	if ((s = table_line(table, "  peak RSS        ")) != NULL)
		n += sscanf(s, "%llu bytes", &tp->max_rss);
	if ((s = table_line(table, "  page faults     ")) != NULL)
		n += sscanf(s, "%llu minor, %llu major", &tp->minflt, &tp->majflt);
	CU_ASSERT_EQUAL(n, 8);
	return n == 8;
}

static char helper_path[4096];

const char *builddir(void)
{
	const char *b = getenv("top_builddir");

	return b != NULL ? b : ".";
}

void exec_child(void *p)
{
	struct exec_arg *e = p;

	for (int i = 0; e->env[i] != NULL; i++)
		putenv((char *)e->env[i]);
	jp_test_execv(e->prog, (char *[]){ (char *)e->prog, (char *)e->arg1, NULL });
	fprintf(stderr, "exec %s: %s\n", e->prog, strerror(errno));
	_exit(126);
}

void run_helper(const char *mode, const char *env0, const char *env1,
		struct jp_child_result *res)
{
	struct exec_arg e = { helper_path, mode, { env0, env1, NULL } };

	snprintf(helper_path, sizeof helper_path, "%s/tests/alloc/alloc-helper", builddir());
	CU_ASSERT_EQUAL_FATAL(jp_test_child(exec_child, &e, res), 0);
}
