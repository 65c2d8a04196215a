/*
 * os_trace.c - the OS door (os.h) to threads of this process that a signal
 * cannot stop: a helper process holds them stopped with ptrace and reads
 * their registers, for the leak report (lib/alloc/leaks_stop.c).
 *
 * Why a process: a thread cannot ptrace a thread of its own thread group,
 * so the helper is a child made by a raw clone (no fork handlers run: the
 * program's would not expect a fork at exit), with no exit signal (the
 * program's SIGCHLD handler, if any, hears nothing), which only makes raw
 * system calls and reads the clock (jp__os_now_ns: no lock, no
 * allocation).  It waits for the go on a pipe, so that the parent can
 * name it as its tracer first (Yama's ptrace_scope 1 lets a process trace
 * only its descendants, or a process named with PR_SET_PTRACER);
 * attaches to each thread with PTRACE_SEIZE and stops it with
 * PTRACE_INTERRUPT (which, unlike a signal, no mask holds off); copies its
 * registers (PTRACE_GETREGSET, NT_PRSTATUS) into memory shared with the
 * parent; says it is done on a second pipe; and pauses.  The parent kills
 * it when the scan is over, and the kernel detaches the threads, which go
 * on.  A thread that has not stopped by STOP_MS (in a vfork wait, or
 * uninterruptible) is given up, the others kept; a helper that has not
 * answered within TRACE_WAIT_MS is killed and nothing is stopped.
 * PR_SET_PDEATHSIG ends a helper whose parent dies.  The helper runs with
 * every signal blocked (the parent blocks them around the clone): a
 * tracer is sent SIGCHLD as its tracees stop, and the program's handlers,
 * copied into it, must not run there.
 *
 * A stop interrupts the system call a thread sleeps in, as SIGSTOP does:
 * most are restarted, but epoll_wait, sigtimedwait, semtimedop and a few
 * others return EINTR (signal(7)), which a thread that blocks the
 * caller's signal does not expect from it.  With JP_OS_TRACE_RESTART,
 * where this target's registers say so (x86_64, i386), such a call's
 * EINTR (for the calls that have done nothing yet when they return it:
 * restartable) is turned into the kernel's restart code while it is
 * stopped, so that it runs again when let go.
 *
 * Where ptrace is refused (seccomp, an emulator, a process that is not
 * dumpable, a thread already traced by a debugger), t[i].err says why
 * and the caller does without.  Under Yama's ptrace_scope 1, the tracer
 * exception is cleared afterwards (prctl has no way to read the one the
 * program may have set).
 */
#include "os.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* For the helper to stop every thread (then ETIMEDOUT for all; EPERM
 * when it died, as a seccomp filter that kills at ptrace makes it). */
#define TRACE_WAIT_MS	3000
#define STOP_MS		2500	/* the helper's own deadline, for all */
#define STOP_TRIES	8	/* signal stops let through before giving up */

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER	0x59616d61
#endif
#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP	128
#endif
#define ERESTARTNOINTR	513	/* the kernel's: restart, whatever happens */

static pid_t helper;			/* 0: none */

/* The stack pointer's offset in the NT_PRSTATUS set, where known, and
 * the red zone below it that leaf functions may use without moving it. */
#if defined(__x86_64__)
#define SP_OFFSET	offsetof(struct user_regs_struct, rsp)
#define RED_ZONE	128
#elif defined(__i386__)
#define SP_OFFSET	offsetof(struct user_regs_struct, esp)
#elif defined(__aarch64__)
#define SP_OFFSET	offsetof(struct user_regs_struct, sp)
#endif
#ifndef RED_ZONE
#define RED_ZONE	0
#endif

/* The system call number and return value of a stopped thread, where the
 * set says which (-1: not in a system call). */
#if defined(__x86_64__)
#define SYSNO_OFFSET	offsetof(struct user_regs_struct, orig_rax)
#define RET_OFFSET	offsetof(struct user_regs_struct, rax)
#elif defined(__i386__)
#define SYSNO_OFFSET	offsetof(struct user_regs_struct, orig_eax)
#define RET_OFFSET	offsetof(struct user_regs_struct, eax)
#endif

/* A raw timespec, for raw system calls (long is the kernel's word on
 * every target here, 32-bit ones included). */
struct raw_ts {
	long sec, nsec;
};

static long sys_ptrace(long req, int tid, void *addr, void *data)
{
	return syscall(SYS_ptrace, req, tid, addr, data);
}

/* errno of a failed raw call; EIO when a seccomp filter's trap made it
 * "fail" without one. */
static int raw_err(void)
{
	return errno != 0 ? errno : EIO;
}

#ifdef SYSNO_OFFSET
/* Calls that end in EINTR at a stop before they have done anything, and
 * so can run again (a relative timeout starts over); not close, whose fd
 * is gone by then, nor connect. */
static bool restartable(long sysno)
{
	switch (sysno) {
#ifdef SYS_epoll_wait
	case SYS_epoll_wait:
#endif
#ifdef SYS_epoll_pwait
	case SYS_epoll_pwait:
#endif
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
#ifdef SYS_rt_sigtimedwait
	case SYS_rt_sigtimedwait:
#endif
#ifdef SYS_rt_sigtimedwait_time64
	case SYS_rt_sigtimedwait_time64:
#endif
#ifdef SYS_semop
	case SYS_semop:
#endif
#ifdef SYS_semtimedop
	case SYS_semtimedop:
#endif
#ifdef SYS_semtimedop_time64
	case SYS_semtimedop_time64:
#endif
#ifdef SYS_io_getevents
	case SYS_io_getevents:
#endif
#ifdef SYS_io_pgetevents
	case SYS_io_pgetevents:
#endif
		return true;
	default:
		return false;
	}
}
#endif

/* The thread's call was interrupted by the stop and returns EINTR: make
 * the kernel restart it instead (x86_64, i386), if it is one that can. */
static void restart_eintr(int tid, struct jp_os_regs *r)
{
#ifdef SYSNO_OFFSET
	struct iovec iov = { r->regs, r->nbytes };
	long sysno, ret;

	memcpy(&sysno, (const char *)r->regs + SYSNO_OFFSET, sizeof sysno);
	memcpy(&ret, (const char *)r->regs + RET_OFFSET, sizeof ret);
	if (sysno < 0 || ret != -EINTR || !restartable(sysno))
		return;
	ret = -ERESTARTNOINTR;
	memcpy((char *)r->regs + RET_OFFSET, &ret, sizeof ret);
	sys_ptrace(PTRACE_SETREGSET, tid, (void *)(long)NT_PRSTATUS, &iov);
	/* What is scanned is what it held: the restart code is no pointer. */
#else
	(void)tid;
	(void)r;
#endif
}

/* Wait until tracee tid stops (or end, jp__os_now_ns time, passes); its
 * wait status in *status. */
static int wait_stop(int tid, int *status, uint64_t end)
{
	struct raw_ts ms = { 0, 1000000 };
	long got;

	while ((got = syscall(SYS_wait4, tid, status, __WALL | WNOHANG, NULL)) == 0) {
		if (jp__os_now_ns() >= end)
			return ETIMEDOUT;
		syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ms, NULL);
	}
	if (got != tid)
		return raw_err();
	return WIFSTOPPED(*status) ? 0 : ESRCH;	/* not stopped: it exited */
}

/* In the helper: attach to thread r->tid and ask it to stop. */
static int seize_one(struct jp_os_regs *r)
{
	errno = 0;
	if (sys_ptrace(PTRACE_SEIZE, r->tid, NULL, NULL) != 0 ||
	    sys_ptrace(PTRACE_INTERRUPT, r->tid, NULL, NULL) != 0)
		return raw_err();
	return 0;
}

/* In the helper: wait for seized thread r->tid to stop (by end), and read
 * its registers into r. */
static int stop_one(struct jp_os_regs *r, uint64_t end)
{
	struct iovec iov = { r->regs, sizeof r->regs };
	int status, tid = r->tid, err;

	for (int i = 0;; i++) {
		if ((err = wait_stop(tid, &status, end)) != 0)
			return err;
		if (status >> 16 == PTRACE_EVENT_STOP)
			break;
		/* A signal it was about to take: let it take it. */
		if (i == STOP_TRIES)
			return EAGAIN;
		errno = 0;
		if (sys_ptrace(PTRACE_CONT, tid, NULL, (void *)(long)WSTOPSIG(status)) != 0 ||
		    sys_ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0)
			return raw_err();
	}
	errno = 0;
	if (sys_ptrace(PTRACE_GETREGSET, tid, (void *)(long)NT_PRSTATUS, &iov) != 0)
		return raw_err();
	r->nbytes = (uint32_t)iov.iov_len;
#ifdef SP_OFFSET
	if (iov.iov_len >= SP_OFFSET + sizeof(uintptr_t)) {
		memcpy(&r->sp, (const char *)r->regs + SP_OFFSET, sizeof r->sp);
		r->sp -= RED_ZONE;
	}
#endif
	if (r->flags & JP_OS_TRACE_RESTART)
		restart_eintr(tid, r);
	return 0;
}

static _Noreturn void helper_main(pid_t parent, unsigned n, struct jp_os_regs *shared,
				  const int go[2], const int done[2])
{
	uint64_t end;
	char c;

	/* No core file, even when a seccomp filter kills it at ptrace
	 * (its SIGSYS is forced through the blocked mask). */
	syscall(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0);
	syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	syscall(SYS_close, go[1]);
	syscall(SYS_close, done[0]);
	if (syscall(SYS_getppid) != parent || syscall(SYS_read, go[0], &c, 1) != 1)
		syscall(SYS_exit_group, 1);
	/* All asked first, then waited for: one that cannot stop (in a
	 * vfork wait) holds up no other. */
	for (unsigned i = 0; i < n; i++)
		shared[i].err = seize_one(&shared[i]);
	end = jp__os_now_ns() + (uint64_t)STOP_MS * 1000000;
	for (unsigned i = 0; i < n; i++)
		if (shared[i].err == 0)
			shared[i].err = stop_one(&shared[i], end);
	syscall(SYS_write, done[1], "d", 1);
	for (;;)	/* until the parent kills it, or dies */
		syscall(SYS_ppoll, NULL, 0L, NULL, NULL, 0L);
}

static void close_pair(const int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			syscall(SYS_close, p[i]);
}

/* Nothing stopped: every t[i] says err; returns -1 with errno err. */
static int refused(struct jp_os_regs *t, unsigned n, int err)
{
	for (unsigned i = 0; i < n; i++)
		t[i].err = err;
	errno = err;
	return -1;
}

int jp__os_trace_stop(struct jp_os_regs *t, unsigned n)
{
	size_t size = (size_t)n * sizeof *t;
	struct jp_os_regs *shared;
	struct pollfd pfd;
	struct raw_ts wait_ts = { TRACE_WAIT_MS / 1000, TRACE_WAIT_MS % 1000 * 1000000L };
	sigset_t all, old;
	int go[2] = { -1, -1 }, done[2] = { -1, -1 }, stopped = 0, err;
	pid_t parent = (pid_t)syscall(SYS_getpid);
	long pid, r;
	char c;

	if (n == 0 || n > JP_OS_TRACE_MAX || helper != 0)
		return refused(t, n > JP_OS_TRACE_MAX ? 0 : n, EINVAL);
	/* mmap through libc (mmap2 on 32-bit targets is its business); the
	 * rest raw, as in os_proc.c: no fortifiable read() of libc. */
	shared = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return refused(t, n, errno);
	if (pipe2(go, O_CLOEXEC) != 0 || pipe2(done, O_CLOEXEC) != 0) {
		err = errno;
		close_pair(go);
		munmap(shared, size);
		return refused(t, n, err);
	}
	for (unsigned i = 0; i < n; i++)
		shared[i] = (struct jp_os_regs){ .tid = t[i].tid, .flags = t[i].flags,
						 .err = ESRCH };
	/* Flags and stack 0: a copy of this process (fork's semantics,
	 * without the fork handlers) that sends no signal when it ends;
	 * the same call on every target, whatever its clone's argument
	 * order.  (qemu-user refuses it: then nothing is stopped.)  Every
	 * signal blocked in the copy, for good. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = syscall(SYS_clone, 0L, 0L, 0L, 0L, 0L);
	if (pid == 0)
		helper_main(parent, n, shared, go, done);
	err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		close_pair(go);
		close_pair(done);
		munmap(shared, size);
		return refused(t, n, err);
	}
	helper = (pid_t)pid;
	/* The helper's ends: a helper that dies early (seccomp kills it at
	 * ptrace) is then seen at once, as the end of the pipe. */
	syscall(SYS_close, done[1]);
	done[1] = -1;
	/* EINVAL without Yama: nothing to ask. */
	prctl(PR_SET_PTRACER, pid, 0, 0, 0);
	pfd = (struct pollfd){ .fd = done[0], .events = POLLIN };
	/* Signals held off while it waits (the kernel's 64-bit mask): a
	 * timer's would end the wait. */
	if (syscall(SYS_write, go[1], "g", 1) != 1 ||
	    syscall(SYS_ppoll, &pfd, 1L, &wait_ts, &all, (long)sizeof(uint64_t)) != 1) {
		err = ETIMEDOUT;
	} else if ((r = syscall(SYS_read, done[0], &c, 1)) != 1) {
		err = r == 0 ? EPERM : errno;	/* it died: refused */
	} else {
		err = 0;
		for (unsigned i = 0; i < n; i++)
			stopped += shared[i].err == 0;
		memcpy(t, shared, size);
	}
	close_pair(go);
	close_pair(done);
	munmap(shared, size);
	if (err != 0) {
		jp__os_trace_release();
		return refused(t, n, err);
	}
	return stopped;
}

void jp__os_trace_release(void)
{
	int saved = errno;

	if (helper == 0)
		return;
	syscall(SYS_kill, helper, SIGKILL);
	while (syscall(SYS_wait4, helper, NULL, __WALL, NULL) < 0 && errno == EINTR)
		;
	syscall(SYS_prctl, PR_SET_PTRACER, 0, 0, 0, 0);
	helper = 0;
	errno = saved;
}
