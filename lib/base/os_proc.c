/*
 * os_proc.c - the OS door (os.h) to the process's own threads and /proc
 * files, for the leak report (lib/alloc/leaks.c): a /proc file read whole,
 * the thread ids of /proc/self/task, a signal to one thread, whether a
 * thread blocks a signal.  By raw system calls, so that nothing here
 * allocates or calls libc's fortifiable read(); apart from os.c to keep
 * each file short.
 */
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

ssize_t jp__os_read_file(const char *path, char *buf, size_t cap, bool *cut)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n = 0;

	*cut = false;
	if (fd < 0)
		return -1;
	/* A /proc file is built read by read: to its end, or to cap. */
	while (got < cap - 1 && (n = syscall(SYS_read, fd, buf + got, cap - 1 - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		got += (size_t)n;
	}
	if (got == cap - 1 && n != 0) {
		char one;

		*cut = syscall(SYS_read, fd, &one, 1) > 0;
	}
	syscall(SYS_close, fd);
	buf[got] = '\0';
	return n < 0 ? -1 : (ssize_t)got;
}

int jp__os_tasks(int *tids, int max)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task",
			      O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[2048];
	long n;
	int count = 0;

	if (fd < 0)
		return -1;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
		for (long at = 0; at < n;) {
			/* struct linux_dirent64: ino 8, off 8, reclen 2,
			 * type 1, then the name. */
			unsigned short reclen;
			const char *name = buf + at + 19;
			int tid = 0;

			memcpy(&reclen, buf + at + 16, sizeof reclen);
			at += reclen;
			if (*name < '0' || *name > '9')
				continue;
			for (; *name >= '0' && *name <= '9'; name++)
				tid = tid * 10 + (*name - '0');
			if (count < max)
				tids[count] = tid;
			count++;
		}
	syscall(SYS_close, fd);
	return n < 0 ? -1 : count;
}

int jp__os_tgkill(int tid, int sig)
{
	return syscall(SYS_tgkill, (int)getpid(), tid, sig) == 0 ? 0 : errno;
}

bool jp__os_task_state(int tid, uint64_t *blocked, bool *zombie)
{
	/* SigBlk comes after Groups:, which may be long. */
	char path[64], num[24], buf[8192];
	const char *s, *st;
	size_t len = 0;
	bool cut;

	jp__str_add(path, sizeof path, &len, "/proc/self/task/");
	jp__str_add(path, sizeof path, &len, jp__fmt_u64(num, (uint64_t)tid));
	jp__str_add(path, sizeof path, &len, "/status");
	if (jp__os_read_file(path, buf, sizeof buf, &cut) < 0 ||
	    (s = strstr(buf, "\nSigBlk:")) == NULL || (st = strstr(buf, "\nState:")) == NULL)
		return false;
	for (st += 7; *st == ' ' || *st == '\t'; st++)
		;
	*zombie = *st == 'Z' || *st == 'X';
	/* A hex mask, most significant digit first. */
	for (s += 8; *s == ' ' || *s == '\t'; s++)
		;
	*blocked = 0;
	for (; (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'); s++)
		*blocked = *blocked << 4 | (uint64_t)(*s <= '9' ? *s - '0' : *s - 'a' + 10);
	return true;
}
