/*
 * preload-options.c - the options corpus as the environment of a process
 * started with the preload module, where the parse runs from the first
 * malloc, before the allocator is ready (make check; no libFuzzer).
 *
 *   replay-options-preload [FILE]...
 *
 * For each input of tests/fuzz/corpus/options/ (or each FILE) that is an
 * environment (modes 0 and 1 of options-input.h), start options-child (a
 * program that allocates and exits 0, not linked to libjpsync) with that
 * environment and LD_PRELOAD=shim/.libs/libjpsync-preload.so, and check
 * that it exits 0, within 10 s, with exactly one "jpsync: warning:" line
 * on its standard error for each entry that jp__options_parse() rejects.
 * Left out of the hostile environment: LD_* and GLIBC_TUNABLES (they would
 * change what is loaded, not what the library parses), and a JPSYNC_STATS
 * or a JPSYNC_HEAP_PROFILE naming a file (the child would write it).
 *
 * Skipped (77) under valgrind, in sanitizer builds (their runtimes replace
 * malloc themselves) and under an emulator (it cannot exec the child).
 */
#include "config.h"

#include "options-input.h"
#include "base/options.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char module[4096], child[4096];
static int failed;

static int read_file(const char *path, unsigned char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 8192;

	*len = 0;
	*buf = NULL;
	if (f == NULL)
		return -1;
	*buf = malloc(cap);
	while (*buf != NULL) {
		size_t got = fread(*buf + *len, 1, cap - *len, f);

		*len += got;
		if (got == 0)
			break;
		if (*len == cap)
			*buf = realloc(*buf, cap *= 2);
	}
	fclose(f);
	return *buf != NULL ? 0 : -1;
}

static bool dropped(const char *e)
{
	struct jp_options o;
	char why[160];

	if (strncmp(e, "LD_", 3) == 0 || strncmp(e, "GLIBC_TUNABLES=", 15) == 0)
		return true;
	for (size_t i = 0; i < jp__option_count; i++) {
		const struct jp_option_desc *d = &jp__option_table[i];
		size_t n = strlen(d->name);
		const char *v = e + 7 + n + 1;

		if ((d->kind != JP_OPT_STATS && d->kind != JP_OPT_FILE) ||
		    strncmp(e, "JPSYNC_", 7) != 0 || strncmp(e + 7, d->name, n) != 0 ||
		    e[7 + n] != '=')
			continue;
		/* a file the child would write: dropped when accepted */
		jp__options_parse(&o, NULL, -1);
		if (jp__option_value(&o, d, v, why, sizeof why) != NULL)
			return false;
		return d->kind == JP_OPT_STATS ? o.stats == JP_STATS_FILE : *v != '\0';
	}
	return false;
}

static void run_one(const char *path)
{
	unsigned char *data;
	size_t len, ne = 0, got = 0, cap = 1 << 16, lines = 0;
	struct fzo_input in;
	struct jp_options o;
	char **env, *err, pre[4200];
	int fds[2], status, expected;
	pid_t pid;

	if (read_file(path, &data, &len) != 0) {
		printf("FAIL: %s: cannot read: %s\n", path, strerror(errno));
		failed = 1;
		return;
	}
	if (fzo_decode(&in, data, len) != 0 || (in.mode != FZO_ENV && in.mode != FZO_VALUES)) {
		fzo_free(&in);
		free(data);
		return;		/* jpsync-run's arguments: not an environment */
	}
	env = calloc(in.n + 2, sizeof *env);
	err = malloc(cap);
	if (env == NULL || err == NULL) {
		printf("FAIL: out of memory\n");
		exit(99);
	}
	snprintf(pre, sizeof pre, "LD_PRELOAD=%s", module);
	env[ne++] = pre;
	for (size_t k = 0; k < in.n; k++)
		if (!dropped(in.s[k]))
			env[ne++] = in.s[k];
	env[ne] = NULL;
	expected = jp__options_parse(&o, env, -1);

	if (pipe(fds) != 0) {
		printf("FAIL: pipe: %s\n", strerror(errno));
		exit(99);
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { child, NULL };

		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		alarm(10);	/* a hang is a failure, not a stuck make check */
		execve(child, argv, env);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t r;

		if (got == cap - 1)
			err = realloc(err, cap *= 2);
		if (err == NULL) {
			printf("FAIL: out of memory\n");
			exit(99);
		}
		r = read(fds[0], err + got, cap - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fds[0]);
	err[got] = '\0';
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		printf("FAIL: %s: fork or wait: %s\n", path, strerror(errno));
		exit(99);
	}
	for (const char *p = err; (p = strstr(p, "jpsync: warning:")) != NULL; p++)
		if (p == err || p[-1] == '\n')
			lines++;
	printf("%s: %zu entries, %d rejected, %zu warning lines, ", path, ne - 1,
	       expected, lines);
	if (WIFEXITED(status))
		printf("exit %d\n", WEXITSTATUS(status));
	else
		printf("signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || lines != (size_t)expected) {
		printf("FAIL: %s: expected exit 0 and %d warning lines; its stderr:\n%s\n",
		       path, expected, err);
		failed = 1;
	}
	free(err);
	free(env);
	fzo_free(&in);
	free(data);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir"), *build = getenv("top_builddir");
	char dir[4096];
	size_t ran = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (jp_test_on_valgrind() || jp_test_sanitized()) {
		printf("SKIP: valgrind and the sanitizer runtimes replace malloc themselves\n");
		return 77;
	}
	if (jp_test_emulated()) {
		printf("SKIP: under an emulator, which cannot exec the child\n");
		return 77;
	}
	if (build == NULL || *build == '\0')
		build = ".";
	snprintf(module, sizeof module, "%s/shim/.libs/libjpsync-preload.so", build);
	snprintf(child, sizeof child, "%s/tests/fuzz/options-child", build);
	if (access(module, R_OK) != 0 || access(child, X_OK) != 0) {
		printf("FAIL: %s or %s is not built\n", module, child);
		return 99;
	}
	if (argc > 1) {
		for (int i = 1; i < argc; i++, ran++)
			run_one(argv[i]);
	} else {
		DIR *d;
		struct dirent *e;
		char *names[1024];
		size_t n = 0;

		snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/options",
			 top != NULL && *top != '\0' ? top : FUZZ_SRCDIR);
		d = opendir(dir);
		if (d == NULL) {
			printf("FAIL: %s: %s\n", dir, strerror(errno));
			return 99;
		}
		while ((e = readdir(d)) != NULL && n < 1024)
			if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name)) != NULL)
				n++;
		closedir(d);
		qsort(names, n, sizeof *names, by_name);
		for (size_t i = 0; i < n; i++, ran++) {
			char path[8192];

			snprintf(path, sizeof path, "%s/%s", dir, names[i]);
			run_one(path);
			free(names[i]);
		}
	}
	if (ran == 0) {
		printf("FAIL: no input\n");
		return 99;
	}
	return failed;
}
