/*
 * run-elf.c - jpsync-run's look at a program's file (run-elf.h): its ELF
 * header and program headers, read with pread, in the file's own byte
 * order, so that a statically linked program, which LD_PRELOAD cannot
 * reach, is named before it runs on its own allocator.
 */
#include "config.h"

#include "run-elf.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ET_EXEC_	2
#define ET_DYN_		3
#define PT_DYNAMIC_	2
#define PT_INTERP_	3
#define DT_SONAME_	14
#define PHNUM_MAX	4096	/* more is a damaged header */
#define DYN_MAX		4096	/* dynamic entries read at most */

/* The n-byte unsigned number at p, big-endian when big. */
static uint64_t rd(const unsigned char *p, unsigned n, bool big)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[big ? i : n - 1 - i];
	return v;
}

/* Whether path names an executable regular file. */
static bool runnable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The file execvp runs for name, into buf (cap bytes); false if none.
 * As execvp: a name with a slash is a path; else each entry of PATH
 * (unset: execvp's default) in turn, an empty entry being the current
 * directory. */
static bool resolve(const char *name, char *buf, size_t cap)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/') != NULL)
		return snprintf(buf, cap, "%s", name) < (int)cap && runnable(buf);
	if (path == NULL)
		path = "/bin:/usr/bin";
	for (;;) {
		const char *end = strchr(path, ':');
		size_t len = end != NULL ? (size_t)(end - path) : strlen(path);
		int n = len == 0 ? snprintf(buf, cap, "%s", name) :
			snprintf(buf, cap, "%.*s/%s", (int)len, path, name);

		if (n > 0 && (size_t)n < cap && runnable(buf))
			return true;
		if (end == NULL)
			return false;
		path = end + 1;
	}
}

/* Whether the dynamic section at off (size bytes) of the ELF file at fd
 * has a DT_SONAME entry. */
static bool has_soname(int fd, uint64_t off, uint64_t size, bool wide, bool big)
{
	unsigned w = wide ? 8 : 4;
	unsigned char d[16];

	for (uint64_t i = 0; i < DYN_MAX && (i + 1) * 2 * w <= size; i++) {
		uint64_t tag;

		if (pread(fd, d, 2 * w, (off_t)(off + i * 2 * w)) != (ssize_t)(2 * w))
			return false;
		tag = rd(d, w, big);
		if (tag == DT_SONAME_)
			return true;
		if (tag == 0)		/* DT_NULL */
			return false;
	}
	return false;
}

/*
 * The ELF file at fd: static (true) as run_elf_static says.  A file with
 * PT_INTERP is started by the dynamic loader.  Without it: an ET_EXEC is
 * static; an ET_DYN is a static PIE (gcc -static-pie; Debian's ldconfig),
 * unless it names itself in DT_SONAME: a shared object run as a program,
 * such as the dynamic loader (ld.so PROGRAM honours LD_PRELOAD).
 */
static bool elf_static(int fd)
{
	unsigned char eh[64], ph[56];
	bool big, wide;
	uint64_t type, phoff, phentsize, phnum, dyn_off = 0, dyn_size = 0;

	if (pread(fd, eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
	    memcmp(eh, "\177ELF", 4) != 0 || (eh[4] != 1 && eh[4] != 2) ||
	    (eh[5] != 1 && eh[5] != 2))
		return false;
	wide = eh[4] == 2;
	big = eh[5] == 2;
	type = rd(eh + 16, 2, big);
	if (type != ET_EXEC_ && type != ET_DYN_)
		return false;
	phoff = wide ? rd(eh + 32, 8, big) : rd(eh + 28, 4, big);
	phentsize = rd(eh + (wide ? 54 : 42), 2, big);
	phnum = rd(eh + (wide ? 56 : 44), 2, big);
	if (phnum == 0 || phnum > PHNUM_MAX || phentsize < (wide ? 56u : 32u) ||
	    phoff > (uint64_t)LLONG_MAX / 2)
		return false;
	for (uint64_t i = 0; i < phnum; i++) {
		uint64_t pt;

		if (pread(fd, ph, wide ? 56 : 32, (off_t)(phoff + i * phentsize)) !=
		    (ssize_t)(wide ? 56 : 32))
			return false;
		pt = rd(ph, 4, big);
		if (pt == PT_INTERP_)
			return false;
		if (pt == PT_DYNAMIC_) {
			/* p_offset and p_filesz */
			dyn_off = wide ? rd(ph + 8, 8, big) : rd(ph + 4, 4, big);
			dyn_size = wide ? rd(ph + 32, 8, big) : rd(ph + 16, 4, big);
		}
	}
	return type == ET_EXEC_ || dyn_size == 0 ||
	       !has_soname(fd, dyn_off, dyn_size, wide, big);
}

bool run_elf_static(const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	bool is_static;
	int fd;

	/* O_NONBLOCK: a FIFO put there since runnable() looked must not
	 * block the open (execvp then fails on it). */
	if (!resolve(name, path, sizeof path) ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return false;
	is_static = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && elf_static(fd);
	close(fd);
	return is_static;
}
