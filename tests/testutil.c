/* testutil.c - shared helpers of the CUnit suites (see testutil.h). */
#include "testutil.h"

#define JP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
# if __has_include(<valgrind/valgrind.h>) && __has_include(<valgrind/memcheck.h>)
#  include <valgrind/valgrind.h>
#  include <valgrind/memcheck.h>
#  include <valgrind/drd.h>
#  define HAVE_VG 1
# endif
#endif

int jp_test_run(CU_SuiteInfo *suites)
{
	unsigned failures;

	if (CU_initialize_registry() != CUE_SUCCESS) {
		fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
		return 99;
	}
	if (CU_register_suites(suites) != CUE_SUCCESS) {
		fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return 99;
	}
	/* Unbuffered: CUnit names a case before running it, so the log of a
	 * suite that hangs (stopped by tests/time-limit.sh) or crashes ends
	 * with the case that did. */
	setvbuf(stdout, NULL, _IONBF, 0);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures() + CU_get_number_of_suites_failed() +
		   CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failures == 0 ? 0 : 1;
}

bool jp_test_unregister(CU_TestInfo *tests, CU_TestFunc fn, const char *why)
{
	size_t i = 0;

	while (tests[i].pName != NULL && tests[i].pTestFunc != fn)
		i++;
	if (tests[i].pName == NULL)
		return false;
	printf("not registered here (%s): %s\n", why, tests[i].pName);
	fflush(stdout);	/* before CUnit's own output, also into a pipe */
	do {
		tests[i] = tests[i + 1];
	} while (tests[i++].pName != NULL);
	return true;
}

double jp_test_scale(void)
{
	const char *s = getenv("JPSYNC_TEST_SCALE");
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return 1.0;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !(v > 0) || v > 1000) {
		fprintf(stderr, "JPSYNC_TEST_SCALE='%s' is not a number in (0, 1000]; using 1\n", s);
		return 1.0;
	}
	return v;
}

uint64_t jp_test_scaled(uint64_t n, uint64_t min_n)
{
	double v = (double)n * jp_test_scale();
	uint64_t r = v < 1 ? 1 : (uint64_t)v;
	return r < min_n ? min_n : r;
}

bool jp_test_on_valgrind(void)
{
#ifdef HAVE_VG
	return RUNNING_ON_VALGRIND != 0;
#else
	return getenv("VALGRIND") != NULL;
#endif
}

bool jp_test_on_drd(void)
{
#ifdef HAVE_VG
	/* A drd request: drd's thread id under drd, the default (0) under
	 * any other tool or natively. */
	return RUNNING_ON_VALGRIND != 0 && DRD_GET_VALGRIND_THREADID != 0;
#else
	return false;
#endif
}

bool jp_test_on_memcheck(void)
{
#ifdef HAVE_VG
	int probe = 0;

	/* A memcheck request: 0 for defined memory under memcheck, the
	 * default (1) under any other tool. */
	return RUNNING_ON_VALGRIND != 0 &&
	       VALGRIND_DO_CLIENT_REQUEST_EXPR(1, VG_USERREQ__CHECK_MEM_IS_DEFINED,
					       &probe, sizeof probe, 0, 0, 0) == 0;
#else
	return getenv("VALGRIND") != NULL;
#endif
}

__attribute__((noreturn)) void jp_test_fork_exit(int code)
{
#ifdef HAVE_VG
	if (RUNNING_ON_VALGRIND != 0) {
		if (code == 0 && VALGRIND_COUNT_ERRORS == 0)
			execl("/bin/true", "true", (char *)NULL);
		_exit(code != 0 ? code : 1);
	}
#endif
	_exit(code);
}

/* Which sanitizers this file was built with (the suites' build). */
#if defined(__SANITIZE_THREAD__)
# define TEST_TSAN 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer)
#  define TEST_TSAN 1
# endif
#endif
#if defined(__SANITIZE_ADDRESS__)
# define TEST_ASAN 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define TEST_ASAN 1
# endif
#endif

/* tests/target-exec.sh sets JP_TEST_EMULATOR in the emulated program's
 * environment (a cross build's make check under qemu-user). */
bool jp_test_emulated(void)
{
	const char *e = getenv("JP_TEST_EMULATOR");

	return e != NULL && *e != '\0';
}

/*
 * Under qemu-user without binfmt_misc, the kernel cannot run a program of
 * the emulated architecture: exec the emulator on it instead (the same
 * command tests/target-exec.sh used, from JP_TEST_EMULATOR; the variables
 * it set with -E are in this environment and reach the new program).
 */
int jp_test_execv(const char *path, char *const argv[])
{
	const char *emu = getenv("JP_TEST_EMULATOR");
	char self[4096], cmd[1024], *words[16], *args[64];
	size_t n = 0, a = 0;

	if (emu == NULL || *emu == '\0')
		return execv(path, argv);
	if (strcmp(path, "/proc/self/exe") == 0) {
		/* qemu answers readlink with the emulated program's path; an
		 * exec of /proc/self/exe would start the emulator itself. */
		ssize_t len = readlink(path, self, sizeof self - 1);

		if (len <= 0)
			return -1;
		self[len] = '\0';
		path = self;
	}
	snprintf(cmd, sizeof cmd, "%s", emu);
	for (char *w = strtok(cmd, " "); w != NULL && n < JP_ARRAY_LEN(words);
	     w = strtok(NULL, " "))
		words[n++] = w;
	if (n == 0)
		return execv(path, argv);
	for (size_t i = 0; i < n; i++)
		args[a++] = words[i];
	args[a++] = (char *)path;
	for (size_t i = 1; argv[0] != NULL && argv[i] != NULL && a < JP_ARRAY_LEN(args) - 1; i++)
		args[a++] = argv[i];
	args[a] = NULL;
	return execv(words[0], args);
}

bool jp_test_sanitized(void)
{
#if defined(TEST_TSAN) || defined(TEST_ASAN)
	return true;
#else
	return false;
#endif
}

bool jp_test_tsan(void)
{
#ifdef TEST_TSAN
	return true;
#else
	return false;
#endif
}

/* qemu-user's own report of the emulated program's fatal signal
 * ("qemu: uncaught target signal 6 (Aborted) - core dumped") is the
 * emulator's, not the program's: take it out of what the child wrote. */
static void strip_emulator_lines(char *err)
{
	static const char tag[] = "qemu: uncaught target signal ";
	char *line = err;

	while ((line = strstr(line, tag)) != NULL) {
		char *end = strchr(line, '\n');

		if (line != err && line[-1] != '\n') {
			line += sizeof tag - 1;
			continue;
		}
		end = end != NULL ? end + 1 : line + strlen(line);
		memmove(line, end, strlen(end) + 1);
	}
}

int jp_test_child(void (*fn)(void *), void *arg, struct jp_child_result *res)
{
	int fds[2], st;
	pid_t pid;
	size_t got = 0;

	memset(res, 0, sizeof *res);
	if (pipe(fds) != 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		/* No core files from the deliberate aborts. */
		signal(SIGABRT, SIG_DFL);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		fn(arg);
		fflush(NULL);
		_exit(0);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], res->err + got, sizeof res->err - 1 - got);
		if (n > 0) {
			got += (size_t)n;
			if (got == sizeof res->err - 1) {
				/* Full: drain the rest so the child never blocks. */
				char sink[512];
				while (read(fds[0], sink, sizeof sink) > 0)
					;
				break;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	res->err[got] = '\0';
	close(fds[0]);
	if (jp_test_emulated())
		strip_emulator_lines(res->err);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st)) {
		res->exited = 1;
		res->status = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		res->signaled = 1;
		res->sig = WTERMSIG(st);
	}
	return 0;
}

long jp_test_rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size, rss = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld %ld", &size, &rss) != 2)
		rss = 0;
	fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

void jp_test_deadline_ms(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	/* normalise: ms may be negative (a deadline in the past) */
	while (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
	while (ts->tv_nsec < 0) {
		ts->tv_sec--;
		ts->tv_nsec += 1000000000L;
	}
}
