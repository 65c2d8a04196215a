/*
 * testutil.h - what the CUnit suites share.
 *
 * jp_test_run() registers the suites, runs them in CUnit's basic mode
 * (which prints CUnit's summary) and returns the exit status.
 * jp_test_scaled() scales a stress size by JPSYNC_TEST_SCALE (default 1, may
 * be fractional: 0.05 for the valgrind runs).  jp_test_child() runs a
 * function in a forked child and captures its stderr and how it ended, for
 * the cases that must abort.  jp_test_unregister() leaves out, before
 * jp_test_run(), a case that cannot run in this build or under this tool,
 * so that CUnit neither runs nor counts it: a case that returned early would
 * be reported as passed.
 */
#ifndef JP_TESTUTIL_H
#define JP_TESTUTIL_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int jp_test_run(CU_SuiteInfo *suites);

/* Remove the case that runs fn from tests (a CU_TEST_INFO_NULL-terminated
 * array; the later cases move up) and print on stdout
 * "not registered here (why): <case name>".  Call it before jp_test_run().
 * Returns false, printing nothing, if no case runs fn. */
bool jp_test_unregister(CU_TestInfo *tests, CU_TestFunc fn, const char *why);

/* 2^k as a size_t, or SIZE_MAX where size_t is narrower (32-bit targets):
 * a size too large on every width, without an undefined shift. */
#define JP_TEST_BIG(k) \
	((size_t)((UINT64_C(1) << (k)) > SIZE_MAX ? SIZE_MAX : (UINT64_C(1) << (k))))

double jp_test_scale(void);
/* n scaled by JPSYNC_TEST_SCALE, at least min_n. */
uint64_t jp_test_scaled(uint64_t n, uint64_t min_n);

/* True under valgrind; true in a -fsanitize build. */
bool jp_test_on_valgrind(void);
/* True under valgrind's memcheck (not helgrind or drd): the allocator keeps
 * no caches there. */
bool jp_test_on_memcheck(void);
/* True under valgrind's drd. */
bool jp_test_on_drd(void);
bool jp_test_sanitized(void);
/* True in a -fsanitize=thread build. */
bool jp_test_tsan(void);
/* True when run under an emulator (qemu-user, a cross build's make check):
 * it cannot exec a program of the emulated architecture (no binfmt_misc),
 * and the emulator's own address space and threads are the process's. */
bool jp_test_emulated(void);
/* execv(path, argv), through the emulator when emulated (path may be
 * /proc/self/exe).  Returns only on failure, -1 with errno. */
int jp_test_execv(const char *path, char *const argv[]);

struct jp_child_result {
	int exited;		/* 1 if it exited, then status is the exit code */
	int status;
	int signaled;		/* 1 if killed by a signal, then sig is set */
	int sig;
	char err[8192];		/* what it wrote to stderr (truncated) */
};

/* Run fn(arg) in a child process; 0, or -1 if fork failed. */
int jp_test_child(void (*fn)(void *), void *arg, struct jp_child_result *res);

/* End a child forked from a threaded process, with status code.  Under
 * valgrind a status of 0 with no error reported in the child execs
 * /bin/true instead: the blocks that the parent's other threads held at
 * the fork are lost in the child by construction, and the leak check at
 * exit would make valgrind's status 1 (an exec skips it).  Any other
 * child exits as _exit(code), a non-zero code where valgrind found an
 * error. */
__attribute__((noreturn)) void jp_test_fork_exit(int code);	/* C++ too */

/* The resident set size of the process, KiB (0 if unknown). */
long jp_test_rss_kb(void);

/* The absolute CLOCK_MONOTONIC time ms milliseconds from now. */
struct timespec;
void jp_test_deadline_ms(struct timespec *ts, long ms);

#endif
