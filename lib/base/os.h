/*
 * os.h - the operating-system layer.  lib/base/os.c is the only file of the
 * library that calls futex, mmap, munmap, madvise, mremap, getenv, sysconf
 * or getrandom.
 *
 * Contract: sizes and addresses given to the mapping calls are multiples of
 * the page size; calls that can fail return 0 or an errno value (never -1
 * with errno).  Nothing here allocates memory with malloc, so everything is
 * safe to call from inside the allocator and before it is initialised.
 * The formatting of messages (msg.c beside os.c) is declared here too: it
 * shares that contract, and every message ends in jp__os_write.
 */
#ifndef JP_OS_H
#define JP_OS_H

#include "jp_internal.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

/* ---- futex (private to the process) ------------------------------------ */

/*
 * Sleep while *word == expected, until woken or until the absolute
 * CLOCK_MONOTONIC deadline (NULL: no deadline).  Returns 0 when woken or
 * when *word was not expected (EAGAIN from the kernel), EINTR when a signal
 * interrupted the sleep, ETIMEDOUT once the deadline has passed (at once
 * for a negative tv_sec), EINVAL for a tv_nsec out of range.  The
 * synchronisation layer calls it only through jp__park_wait (park.h), which
 * waits again after EINTR.
 */
int jp__futex_wait(const _Atomic uint32_t *word, uint32_t expected,
		   const struct timespec *deadline);
/* Wake at most n sleepers on word (INT_MAX: all); returns how many woke. */
int jp__futex_wake(const _Atomic uint32_t *word, int n);

/* ---- memory ---------------------------------------------------------- */

/* Map size bytes of zeroed, readable and writable memory. */
int jp__os_map(void **addr, size_t size);
/* The same, with the mapping aligned to align (a power of two >= page). */
int jp__os_map_aligned(void **addr, size_t size, size_t align);
int jp__os_unmap(void *addr, size_t size);
/* Give the pages back to the OS; they read as zero when touched again. */
int jp__os_decommit(void *addr, size_t size);
/* Grow or shrink a mapping, moving it if needed; *addr is updated. */
int jp__os_remap(void **addr, size_t old_size, size_t new_size);
/* Grow or shrink a mapping where it is (ENOMEM: it cannot grow there). */
int jp__os_resize(void *addr, size_t old_size, size_t new_size);
/* Move a mapping's pages to dest, replacing what is mapped there. */
int jp__os_move(void *old_addr, size_t old_size, size_t new_size, void *dest);
/* Give the pages of [addr, addr + size) back and make it inaccessible (it
 * stays reserved). */
int jp__os_protect_none(void *addr, size_t size);
/* Make the range inaccessible (access false) or readable and writable
 * again, its pages kept. */
int jp__os_protect(void *addr, size_t size, bool access);
/* The machine's memory, RAM and swap, in bytes (SIZE_MAX if unknown): no
 * mapping larger than this can ever be filled. */
size_t jp__os_mem_bytes(void);
/* Resident set size of the process, in bytes (0 if unknown). */
size_t jp__os_rss(void);

size_t jp__os_page_size(void);
/* Online CPUs, 0 when unknown. */
unsigned jp__os_cpu_count(void);

/* ---- the CPU a thread runs on ------------------------------------------ */

#ifdef HAVE_RSEQ_AREA
# include <sys/rseq.h>
#endif

/*
 * The CPU the calling thread runs on, or -1 when it cannot be read cheaply
 * (glibc registered no rseq area: under valgrind, on a kernel before 4.18,
 * with glibc.pthread.rseq=0, or a libc without one).  A hint only: the
 * thread may run elsewhere by the time the caller uses it.  One load from
 * the area the kernel updates whenever the thread is scheduled.
 */
static inline int jp__os_cpu(void)
{
#ifdef HAVE_RSEQ_AREA
	if (jp_likely(__rseq_size != 0)) {
		const struct rseq *r = (const struct rseq *)(const void *)
			((const char *)__builtin_thread_pointer() + __rseq_offset);

		/* relaxed: the kernel writes it; any recent value will do. */
		return (int)__atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED);
	}
#endif
	return -1;
}

/* ---- environment, randomness, output ---------------------------------- */

/*
 * getenv without malloc and without the locale: walks environ.  In a
 * set-uid or set-gid program (AT_SECURE) it returns NULL, as secure_getenv.
 */
const char *jp__os_getenv(const char *name);
/* The environment itself (for the scan for unknown JPSYNC_* names). */
char **jp__os_environ(void);
/* Fill buf with random bytes (getrandom, falling back to time and address). */
void jp__os_random(void *buf, size_t len);
/* Write all of buf to fd, retrying on EINTR; returns 0 or an errno value. */
int jp__os_write(int fd, const void *buf, size_t len);
/* Write a NUL-terminated string. */
int jp__os_puts(int fd, const char *s);
/* ---- "msg.c": numbers and the string builder, for the messages ------- */

/* The reports written at exit (the statistics on stderr, the leak report)
 * and the reports of misuse (jp__die) go to jp__report_fd(): programs such
 * as cat and sort close stderr (close_stdout, an atexit handler) before the
 * library's destructors and the frees of other handlers run.
 * jp__report_keep, at start when such a report is asked for (JPSYNC_STATS
 * on stderr, JPSYNC_CHECK, JPSYNC_LEAKS), keeps a
 * close-on-exec copy of fd 2 (at 1000, or lower under a small limit on
 * open files); jp__report_forget, in a forked child, closes it (the
 * child would hold the parent's stderr open); jp__report_fd gives
 * that copy while it is still the file fd 2 was (a program may have closed
 * it and put another file on its number), else 2: a program that closes
 * stderr and opens /dev/null in its place still gets its report.  The
 * reports of misuse use fd 2 while it is open, and the copy only when it
 * is closed (msg.c). */
void jp__report_keep(void);
void jp__report_forget(void);
int jp__report_fd(void);
/* Format v in hex ("0x..."), into buf of at least 19 bytes; returns buf. */
char *jp__fmt_hex(char *buf, uintptr_t v);
/* Format v in decimal into buf of at least 21 bytes; returns buf. */
char *jp__fmt_u64(char *buf, uint64_t v);
/* v bytes in binary units with one decimal ("512 B", "1.5 KiB", "12.0 MiB"),
 * into buf of at least 24 bytes; returns buf. */
char *jp__fmt_bytes(char *buf, uint64_t v);
/* Append s to the string of *len bytes in buf (cap bytes), cut to fit,
 * NUL-terminated; *len grows by what went in.  The messages of the library
 * (options, check mode) are built with it, on the stack. */
void jp__str_add(char *buf, size_t cap, size_t *len, const char *s);
/* The same for the n bytes at s (NULs among them too), shown: a control
 * character, DEL and a backslash as \xHH (\\ for the backslash), so that
 * bytes from outside (an environment variable, an argument) print as part of
 * one line and cannot drive a terminal; past max bytes of s, "..." ends it. */
void jp__str_add_shown(char *buf, size_t cap, size_t *len, const char *s,
		       size_t n, size_t max);
/* The same for the n bytes at s as the inside of a JSON string (RFC 8259):
 * '"' and '\\' escaped with a backslash, a byte below 0x20 as \n, \t, ...
 * or \u00XX, DEL as \u007f; valid UTF-8 as it is; each byte of an invalid
 * UTF-8 sequence (a stray continuation byte, an overlong form, a surrogate,
 * above U+10FFFF, cut short) as \ufffd, the replacement character.  Past
 * max bytes of s, "..." ends it.  An escape is never cut in two: what does
 * not fit whole is left out. */
void jp__str_add_json(char *buf, size_t cap, size_t *len, const char *s,
		      size_t n, size_t max);
/* The file the loaded object holding addr came from, as the dynamic loader
 * names it (the path it opened), or NULL (the main program, or unknown). */
const char *jp__os_object_path(const void *addr);
/* Monotonic time in nanoseconds. */
uint64_t jp__os_now_ns(void);
/* Nanoseconds since the library was loaded: since its constructor ran, or
 * since the allocator started, whichever came first (a preloaded malloc
 * runs before the constructors). */
uint64_t jp__os_since_load_ns(void);
/* Note the load time, if not yet noted (the allocator's start calls it). */
void jp__os_mark_load(void);

/* What the kernel counts for the whole process (getrusage RUSAGE_SELF). */
struct jp_os_usage {
	uint64_t max_rss;	/* peak resident set, bytes */
	uint64_t minflt;	/* page faults served without I/O */
	uint64_t majflt;	/* page faults that read from disk */
	uint64_t utime_ns;	/* CPU time in user mode, all threads */
	uint64_t stime_ns;	/* CPU time in the kernel, all threads */
};
/* Fill *u (all zero on failure); returns 0 or an errno value. */
int jp__os_usage(struct jp_os_usage *u);
/* The program's name (its argv[0] without the directory, else the
 * kernel's /proc/self/comm), into buf of cap bytes, shown as
 * jp__str_add_shown shows bytes; returns buf. */
char *jp__os_program_name(char *buf, size_t cap);
/* The same name as it is, bytes unshown (NUL-terminated; the kernel's name
 * is read into buf of cap bytes, at least 32): for a formatter that escapes
 * it its own way (jp__str_add_json). */
const char *jp__os_program_bytes(char *buf, size_t cap);
/* Copy the file at path (a /proc file: read to its end) to fd, through
 * raw system calls and a buffer on the stack: 0 or errno. */
int jp__os_copy_file(const char *path, int fd);
/* A close-on-exec copy of fd numbered min or more (lower if the limit on
 * descriptors is below min), -1 if fd is not open; id: what file it is.
 * Whether fd is still the file id says (the allocator's copy of stderr for
 * its statistics at exit). */
int jp__os_dup_high(int fd, int min, uint64_t id[2]);
int jp__os_fd_is(int fd, const uint64_t id[2]);

/* The whole file at path (a /proc file) into buf, NUL-terminated, by raw
 * system calls; its length, or -1 (errno set).  A file longer than
 * cap - 1 bytes is cut there (*cut set). */
ssize_t jp__os_read_file(const char *path, char *buf, size_t cap, bool *cut);
/* The kernel thread ids of this process (/proc/self/task), up to max into
 * tids; how many there are (more than max: some left out), or -1. */
int jp__os_tasks(int *tids, int max);
/* Send sig to thread tid of this process: 0 or errno. */
int jp__os_tgkill(int tid, int sig);

/* The kernel thread id of the caller. */
int jp__os_gettid(void);
/* What /proc/self/task/TID/status says of thread tid of this process: the
 * signals it blocks (SigBlk: bit sig - 1) and whether it is a zombie (a
 * thread that exited, or a main thread that called pthread_exit); false
 * when it cannot be read. */
bool jp__os_task_state(int tid, uint64_t *blocked, bool *zombie);

/* ---- threads held stopped by a helper process (os_trace.c) ------------- */

/* One thread for the helper: the caller sets tid and flags; err is 0
 * when it stopped and regs holds its general registers (nbytes of them,
 * the kernel's NT_PRSTATUS set), with the lowest address its code may
 * use in sp where this target's stack pointer is known (else 0: below it
 * on x86_64, the red zone); otherwise the errno value that refused it
 * (ESRCH: it exited meanwhile; ETIMEDOUT: it did not stop in time). */
#define JP_OS_REGS_BYTES	512
/* A system call the stop interrupted is restarted instead of returning
 * EINTR, where this target's registers tell (x86_64, i386). */
#define JP_OS_TRACE_RESTART	1u
struct jp_os_regs {
	int tid;
	uint32_t flags;
	int err;
	uintptr_t sp;
	uint32_t nbytes;
	uintptr_t regs[JP_OS_REGS_BYTES / sizeof(uintptr_t)];
};
/*
 * Stop threads t[0..n).tid of this process (n at most JP_OS_TRACE_MAX),
 * not the caller, from a helper process that attaches to each with ptrace,
 * as LeakSanitizer does, whatever signals they block; each t[i] says what
 * became of it.  They stay stopped until jp__os_trace_release.  Returns
 * how many stopped; -1 (errno, and every t[i].err) when no helper could
 * run (memory, descriptors, a clone refused, as qemu-user does, or a
 * helper that died or did not answer within a few seconds).  Not
 * async-signal-safe; nothing allocates.
 */
#define JP_OS_TRACE_MAX	1024
int jp__os_trace_stop(struct jp_os_regs *t, unsigned n);
/* Let them go (the helper exits: the kernel detaches it). */
void jp__os_trace_release(void);

/* ---- asymmetric fences (park.h: whether to use them) ------------------ */

/* Register the process for membarrier(2) private expedited: 0, or an errno
 * value (ENOSYS: not supported, then callers use ordinary fences). */
int jp__os_membarrier_init(void);
/* A full memory barrier on every running thread of the process: 0 or errno. */
int jp__os_membarrier(void);

#endif /* JP_OS_H */
