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
