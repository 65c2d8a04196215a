/*
 * os.c - the operating-system layer: futex, mappings, environment,
 * randomness and raw output.  See os.h for the contract.
 */
#include "os.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#ifdef HAVE_SYS_AUXV_H
# include <sys/auxv.h>
#endif

extern char **environ;

/* ---- race detectors --------------------------------------------------- */

bool jp__annotate;

/*
 * At load time, before any thread of the program can use the library: the
 * flag, and the page size cache (so that no two threads of the program
 * race to fill it, which helgrind reported from jp_arena_local).
 */
__attribute__((constructor)) static void os_init(void)
{
	jp__annotate = JP_ON_VALGRIND() || jp__tsan_on();
	jp__os_page_size();
	jp__os_mark_load();
}

/* ---- futex ------------------------------------------------------------ */

/*
 * On 32-bit targets built with a 64-bit time_t (_TIME_BITS=64), struct
 * timespec is the kernel's __kernel_timespec only for futex_time64.
 */
#if defined(SYS_futex_time64) && !defined(__LP64__)
# define JP_SYS_FUTEX_WAIT (sizeof(time_t) > sizeof(long) ? SYS_futex_time64 : SYS_futex)
#else
# define JP_SYS_FUTEX_WAIT SYS_futex
#endif

int jp__futex_wait(const _Atomic uint32_t *word, uint32_t expected,
		   const struct timespec *deadline)
{
	long r;

	/*
	 * FUTEX_WAIT_BITSET takes an absolute timeout, measured on
	 * CLOCK_MONOTONIC unless FUTEX_CLOCK_REALTIME is given: exactly the
	 * deadline of the public API, with no conversion and no drift when a
	 * signal interrupts the wait and the caller waits again.  The kernel
	 * refuses a negative tv_sec or a tv_nsec out of range (EINVAL): park.c
	 * answers those before they get here, and so does this check.
	 */
	if (deadline != NULL &&
	    (deadline->tv_nsec < 0 || deadline->tv_nsec >= 1000000000L))
		return EINVAL;
	if (deadline != NULL && deadline->tv_sec < 0)
		return ETIMEDOUT;
	r = syscall(JP_SYS_FUTEX_WAIT, (const uint32_t *)word,
		    FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected, deadline,
		    NULL, FUTEX_BITSET_MATCH_ANY);
	if (r == 0)
		return 0;
	switch (errno) {
	case ETIMEDOUT:
		return ETIMEDOUT;
	case EAGAIN:	/* *word != expected when the kernel looked */
		return 0;
	case EINTR:	/* a signal: park.c waits again, to the same deadline */
		return EINTR;
	default:
		/*
		 * EFAULT or EINVAL with a valid deadline: the word is not
		 * mapped or not aligned, which no valid object can be.
		 */
		jp__die_ptr("futex wait on an unmapped or misaligned word",
			    (const void *)word);
	}
}

int jp__futex_wake(const _Atomic uint32_t *word, int n)
{
	long r = syscall(SYS_futex, (const uint32_t *)word,
			 FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
	return r < 0 ? 0 : (int)r;
}

/* ---- memory ------------------------------------------------------------ */

int jp__os_map(void **addr, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		*addr = NULL;
		return errno == EAGAIN ? ENOMEM : errno;
	}
	*addr = p;
	return 0;
}

/*
 * Where the next aligned mapping is asked for first: the aligned address
 * just below the last one made.  Linux places mappings top-down, so the
 * range below the last one (whose trimmed head was just unmapped) is
 * usually free, and a hint for a free range is honoured: one mmap instead
 * of an over-sized one and two munmaps.  A hint that lands misaligned or
 * elsewhere costs one munmap more, then the over-map.  Relaxed: a stale
 * hint is only a worse guess.
 */
static _Atomic uintptr_t map_hint;
#define HINT_FLOOR	((uintptr_t)1 << 30)	/* no hint below 1 GiB */

static void hint_below(uintptr_t at, size_t size, size_t align)
{
	size_t span = (size + align - 1) & ~(align - 1);

	atomic_store_explicit(&map_hint, at > span ? at - span : 0, memory_order_relaxed);
}

int jp__os_map_aligned(void **addr, size_t size, size_t align)
{
	size_t page = jp__os_page_size();
	void *p;
	uintptr_t start, aligned, hint;
	size_t over;
	int err;

	if (align <= page)
		return jp__os_map(addr, size);
	if (size > SIZE_MAX - align) {
		*addr = NULL;
		return ENOMEM;
	}
	/* helgrind and drd do not see atomics: a hint is a guess. */
	JP_BENIGN_RACE(&map_hint, sizeof map_hint, "a guess, read and written relaxed");
	hint = atomic_load_explicit(&map_hint, memory_order_relaxed);
	/* Not a low address, and not under valgrind, whose address-space
	 * manager asserts on a hint below its own floor (a program that
	 * mapped a few very large aligned blocks sent the hint down there):
	 * it places every mapping itself anyway. */
	if (hint >= HINT_FLOOR && !JP_ON_VALGRIND()) {
		p = mmap((void *)hint, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED && ((uintptr_t)p & (align - 1)) == 0) {
			hint_below((uintptr_t)p, size, align);
			*addr = p;
			return 0;
		}
		if (p != MAP_FAILED)
			munmap(p, size);
	}
	/* Map more than needed, then trim both ends to the alignment. */
	over = size + align - page;
	err = jp__os_map(&p, over);
	if (err != 0) {
		*addr = NULL;
		return err;
	}
	start = (uintptr_t)p;
	aligned = (start + align - 1) & ~(uintptr_t)(align - 1);
	if (aligned > start)
		munmap(p, aligned - start);
	if (aligned + size < start + over)
		munmap((void *)(aligned + size), start + over - (aligned + size));
	hint_below(aligned, size, align);
	*addr = (void *)aligned;
	return 0;
}

int jp__os_unmap(void *addr, size_t size)
{
	return munmap(addr, size) == 0 ? 0 : errno;
}

int jp__os_decommit(void *addr, size_t size)
{
	return madvise(addr, size, MADV_DONTNEED) == 0 ? 0 : errno;
}

int jp__os_remap(void **addr, size_t old_size, size_t new_size)
{
	void *p = mremap(*addr, old_size, new_size, MREMAP_MAYMOVE);
	if (p == MAP_FAILED)
		return errno == EAGAIN ? ENOMEM : errno;
	*addr = p;
	return 0;
}

size_t jp__os_mem_bytes(void)
{
	struct sysinfo si;
	unsigned long long total;

	if (sysinfo(&si) != 0 || si.mem_unit == 0)
		return SIZE_MAX;
	total = ((unsigned long long)si.totalram + si.totalswap) * si.mem_unit;
	return total > SIZE_MAX ? SIZE_MAX : (size_t)total;
}

/* The first cap - 1 bytes of a /proc file, NUL-terminated, by raw
 * system calls (no stdio, no malloc: the allocator's own paths read
 * them); their count, or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t cap)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = syscall(SYS_read, fd, buf, cap - 1);
	syscall(SYS_close, fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

int jp__os_copy_file(const char *path, int fd)
{
	int in = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	char buf[4096];
	ssize_t n;
	int err = 0;

	if (in < 0)
		return errno;
	while (err == 0 && (n = syscall(SYS_read, in, buf, sizeof buf)) != 0) {
		if (n < 0) {
			if (errno != EINTR)
				err = errno;
			continue;
		}
		err = jp__os_write(fd, buf, (size_t)n);
	}
	syscall(SYS_close, in);
	return err;
}

size_t jp__os_rss(void)
{
	/* /proc/self/statm: size resident shared ... in pages. */
	char buf[128];
	size_t pages = 0;
	const char *s;

	if (read_proc("/proc/self/statm", buf, sizeof buf) <= 0)
		return 0;
	s = strchr(buf, ' ');
	if (s == NULL)
		return 0;
	for (s++; *s >= '0' && *s <= '9'; s++)
		pages = pages * 10 + (size_t)(*s - '0');
	return pages * jp__os_page_size();
}

size_t jp__os_page_size(void)
{
	static size_t page;	/* set at load (os_init), or by the first caller */
	size_t p = __atomic_load_n(&page, __ATOMIC_RELAXED);

	if (jp_unlikely(p == 0)) {
		long v = sysconf(_SC_PAGESIZE);
		p = v > 0 ? (size_t)v : 4096;
		__atomic_store_n(&page, p, __ATOMIC_RELAXED);
	}
	return p;
}

unsigned jp__os_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 && (unsigned long)n < UINT_MAX ? (unsigned)n : 0;
}

/* ---- environment, randomness, output ------------------------------------ */

static bool jp_secure_mode(void)
{
#ifdef HAVE_SYS_AUXV_H
	return getauxval(AT_SECURE) != 0;
#else
	return false;
#endif
}

char **jp__os_environ(void)
{
	return jp_secure_mode() ? NULL : environ;
}

const char *jp__os_object_path(const void *addr)
{
	Dl_info info;

	/* dladdr allocates nothing (it walks the loader's list under its
	 * recursive lock): safe in a constructor and during preload. */
	if (dladdr(addr, &info) == 0 || info.dli_fname == NULL ||
	    info.dli_fname[0] == '\0')
		return NULL;
	return info.dli_fname;
}

const char *jp__os_getenv(const char *name)
{
	char **env = jp__os_environ();
	size_t len = strlen(name);

	if (env == NULL)
		return NULL;
	for (; *env != NULL; env++) {
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return *env + len + 1;
	}
	return NULL;
}

void jp__os_random(void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t got = 0;

	while (got < len) {
		long r = syscall(SYS_getrandom, p + got, len - got, 0x0001 /* GRND_NONBLOCK */);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	if (got < len) {
		/* No entropy available: mix the clock and an address. */
		uint64_t x = jp__os_now_ns() ^ (uintptr_t)&got;
		for (; got < len; got++) {
			x ^= x >> 33;
			x *= 0xff51afd7ed558ccdULL;
			x ^= x >> 29;
			p[got] = (unsigned char)x;
		}
	}
}

int jp__os_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		long r = syscall(SYS_write, fd, p, len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int jp__os_puts(int fd, const char *s)
{
	return jp__os_write(fd, s, strlen(s));
}

uint64_t jp__os_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the process: since when, and what the kernel counts ------------- */

/* CLOCK_MONOTONIC at load, ns; 0 until noted.  relaxed: one value, set
 * once; a reader that sees 0 notes it itself (the CAS keeps the first). */
static _Atomic uint64_t load_ns;

void jp__os_mark_load(void)
{
	uint64_t zero = 0;

	atomic_compare_exchange_strong_explicit(&load_ns, &zero, jp__os_now_ns(),
						memory_order_relaxed, memory_order_relaxed);
}

uint64_t jp__os_since_load_ns(void)
{
	uint64_t now = jp__os_now_ns(), t0;

	jp__os_mark_load();
	t0 = atomic_load_explicit(&load_ns, memory_order_relaxed);
	return now > t0 ? now - t0 : 0;
}

static uint64_t tv_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000u + (uint64_t)tv->tv_usec * 1000u;
}

int jp__os_usage(struct jp_os_usage *u)
{
	struct rusage ru;

	memset(u, 0, sizeof *u);
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return errno;
	u->max_rss = (uint64_t)ru.ru_maxrss * 1024;	/* Linux: KiB */
	u->minflt = (uint64_t)ru.ru_minflt;
	u->majflt = (uint64_t)ru.ru_majflt;
	u->utime_ns = tv_ns(&ru.ru_utime);
	u->stime_ns = tv_ns(&ru.ru_stime);
	return 0;
}

/*
 * argv[0]'s last component (glibc and musl keep it in
 * program_invocation_short_name, set before any constructor): under
 * valgrind /proc/self/comm names the tool, not the program.  An empty
 * argv[0] (execve allows it) falls back to comm (read_proc).
 */
const char *jp__os_program_bytes(char *buf, size_t cap)
{
	const char *name = program_invocation_short_name;
	ssize_t n;

	if (name != NULL && name[0] != '\0')
		return name;
	n = read_proc("/proc/self/comm", buf, cap);
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n <= 0)
		return "?";
	buf[n] = '\0';
	return buf;
}

char *jp__os_program_name(char *buf, size_t cap)
{
	char comm[32];
	const char *name = jp__os_program_bytes(comm, sizeof comm);
	size_t len = 0;

	buf[0] = '\0';
	jp__str_add_shown(buf, cap, &len, name, strlen(name), 64);
	return buf;
}

int jp__os_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

/* ---- alloc: in-place and fixed-destination mremap ----------------------
 * For huge blocks, which must stay 4 MiB-aligned (the allocator finds their
 * header by masking the pointer). */

/*
 * Grow or shrink a mapping where it is; ENOMEM when it cannot grow there.
 * A shrink unmaps the tail, which is what an in-place mremap does, and is
 * also right under qemu-user 7.2 (Debian 12): for a 32-bit program it
 * answers an in-place mremap shrink by reserving the range past the old
 * end, taking the next mapping's pages away from the program.
 */
int jp__os_resize(void *addr, size_t old_size, size_t new_size)
{
	void *p;

	if (new_size < old_size)
		return munmap((char *)addr + new_size, old_size - new_size) == 0 ? 0 : errno;
	p = mremap(addr, old_size, new_size, 0);
	if (p != MAP_FAILED)
		return 0;
	if (errno != EFAULT)
		return errno == EAGAIN ? ENOMEM : errno;
	/* EFAULT: the range is several mappings (pages gathered from others
	 * keep their own), which mremap does not resize.  The same growth:
	 * fresh pages mapped right after it, where nothing is (the kernel
	 * takes a hint whose range is free; valgrind places mappings itself,
	 * so there this stays ENOMEM, as before). */
	p = mmap((char *)addr + old_size, new_size - old_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == (char *)addr + old_size)
		return 0;
	if (p != MAP_FAILED)
		munmap(p, new_size - old_size);	/* somewhere else: not ours to keep */
	return ENOMEM;
}

/* Move a mapping's pages to dest (replacing what is mapped there). */
int jp__os_move(void *old_addr, size_t old_size, size_t new_size, void *dest)
{
	void *p = mremap(old_addr, old_size, new_size,
			 MREMAP_MAYMOVE | MREMAP_FIXED, dest);

	/* EFAULT: several mappings, which mremap moves (Linux 6.17 on) but
	 * does not resize; the caller has dest's new_size bytes mapped, so
	 * the pages moved as they are land at its start all the same. */
	if (p == MAP_FAILED && errno == EFAULT && new_size > old_size)
		p = mremap(old_addr, old_size, old_size, MREMAP_MAYMOVE | MREMAP_FIXED, dest);
	if (p == MAP_FAILED)
		return errno == EAGAIN ? ENOMEM : errno;
	return 0;
}

/* A fresh inaccessible mapping over the range: its pages are gone and any
 * access faults, while the addresses stay ours (check mode's quarantine of
 * freed huge blocks). */
int jp__os_protect_none(void *addr, size_t size)
{
	void *p = mmap(addr, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? errno : 0;
}

/* Make [addr, addr + size) inaccessible (access false) or readable and
 * writable again, its pages kept (the huge cache's mappings). */
int jp__os_protect(void *addr, size_t size, bool access)
{
	return mprotect(addr, size, access ? PROT_READ | PROT_WRITE : PROT_NONE) == 0 ? 0 : errno;
}

/* ---- asymmetric fences (park.c decides whether to use them) ------------ */
/*
 * membarrier(2) with MEMBARRIER_CMD_PRIVATE_EXPEDITED runs a full memory
 * barrier on every CPU that is running a thread of this process.
 */
#include <linux/membarrier.h>

int jp__os_membarrier_init(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
	    !(cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		return ENOSYS;
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) != 0)
		return errno;
	return 0;
}

int jp__os_membarrier(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0 ? 0 : errno;
}

/* ---- alloc2: a private copy of a descriptor (JPSYNC_STATS to stderr) ----
 * Programs such as cat and sort close stderr before the library's exit
 * handler prints the statistics table; the allocator keeps a close-on-exec
 * copy of fd 2, made at start, high up (away from the descriptors a
 * program numbers itself), and checks at exit that it still is that file. */
#include <sys/stat.h>

/* A close-on-exec copy of fd numbered min or more (lower if the limit on
 * descriptors is below min); -1 if fd is not open.  id: what it is. */
int jp__os_dup_high(int fd, int min, uint64_t id[2])
{
	struct stat st;
	int c = -1;

	if (fstat(fd, &st) != 0)
		return -1;
	for (; c < 0 && min >= 3; min /= 4)
		c = fcntl(fd, F_DUPFD_CLOEXEC, min);
	if (c < 0)
		return -1;
	id[0] = (uint64_t)st.st_dev;
	id[1] = (uint64_t)st.st_ino;
	return c;
}

/* 1 when fd is open on the file id describes. */
int jp__os_fd_is(int fd, const uint64_t id[2])
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == id[0] &&
	       (uint64_t)st.st_ino == id[1];
}
