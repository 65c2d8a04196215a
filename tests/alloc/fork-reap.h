/*
 * fork-reap.h - for a signal handler: fork a child that exits 0 at once
 * and wait for it, with async-signal-safe calls only.  Shared by
 * test-alloc-fork and alloc-start-fork, which fork from a handler that
 * interrupted the allocator.
 */
#ifndef JP_TEST_FORK_REAP_H
#define JP_TEST_FORK_REAP_H

#include <errno.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* 0 when the child was made and exited 0; errno is left as it was. */
static inline int jp_fork_and_reap(void)
{
	int st, saved = errno, bad;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	bad = pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	      WEXITSTATUS(st) != 0;
	errno = saved;
	return bad;
}

#endif
