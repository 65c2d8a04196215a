/*
 * leaks.c - JPSYNC_LEAKS: at exit, the live blocks that nothing reaches any
 * more, grouped by the stack that allocated them (leaks.h has the words).
 *
 * Leak mode is check mode (check.c): every live block has a header with a
 * LIVE tag and the stack id of its allocation, so that a walk of the heap
 * can tell live blocks from free ones and say where each came from.
 *
 * At exit (a destructor of low priority: it runs after the statistics and
 * the heap profile of this library):
 *   1. stop the other threads (leaks_stop.c): each one's registers and
 *      stack pointer are kept in a slot while it sleeps until the scan is
 *      over (in a signal handler, or, when it blocks the signal, held by a
 *      ptrace helper); one that stops neither way is reported as not
 *      scanned (no ptrace here, or stuck);
 *   2. list the live blocks: the registry (segment.c) names every segment
 *      and every huge block; each segment's spans are walked block by block
 *      (jp__check_live).  The blocks are sorted by address;
 *   3. roots: every private writable mapping of /proc/self/maps, without
 *      the allocator's segments and huge blocks and this scan's own memory;
 *      of a mapping of a file, only the bytes of the loaded objects'
 *      writable segments (dl_iterate_phdr, asked before the threads stop:
 *      it takes the loader's lock): the rest of the page after an object's
 *      data holds bytes of the file, and a word there that looked like a
 *      pointer into a block kept a leak "reachable" on i386;
 *      a mapping that holds a thread's stack pointer is scanned from there
 *      to its end only (below it lies dead data: a stale word there kept a
 *      leak "reachable" on i386); the stopped threads' slots are in a
 *      mapping of their own, which is scanned like the others;
 *   4. every aligned word of a root that points into a live block marks it,
 *      and marked blocks are scanned the same way through a work list;
 *   5. the leaks (unmarked blocks) are told direct or indirect
 *      (classify: leaks.h has the words);
 *   6. the threads are let go, and the leaks are grouped by kind and
 *      stack id and printed (leaks_report.c).
 * Nothing here allocates: every table is mapped through the OS door.
 */
#include "alloc_init.h"
#include "check.h"
#include "segment.h"
#include "huge.h"
#include "leaks.h"
#include "base/os.h"
#include "base/options.h"
#include "base/stack.h"

#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LEAKS_MAPS	((size_t)4 << 20)	/* /proc/self/maps, at most */

/* The scan's tables (one mapping, left out of the roots). */
static struct lk_range *blocks, *excl;
static size_t nblocks, nexcl, cap_blocks, cap_excl;
static uint32_t *work;
static size_t nwork;

/* The loaded objects' writable segments (LEAKS_SEGS at most; nsegs 0 when
 * dl_iterate_phdr gave none: a file's mapping is then scanned whole). */
#define LEAKS_SEGS	4096
static struct lk_range *segs;
static size_t nsegs;

static int add_segs(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (unsigned i = 0; i < info->dlpi_phnum && nsegs < LEAKS_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) != 0 && ph->p_memsz != 0) {
			segs[nsegs].lo = info->dlpi_addr + ph->p_vaddr;
			segs[nsegs].hi = segs[nsegs].lo + ph->p_memsz;
			nsegs++;
		}
	}
	return 0;
}

static void find_segs(void)
{
	void *m;

	nsegs = 0;
	if (jp__os_map(&m, LEAKS_SEGS * sizeof *segs) != 0)
		return;
	segs = m;
	dl_iterate_phdr(add_segs, NULL);
}

static bool range_less(const void *a, const void *b)
{
	return ((const struct lk_range *)a)->lo < ((const struct lk_range *)b)->lo;
}

/* ---- the live blocks -------------------------------------------------- */

static void add_block(uintptr_t user, size_t n, uint32_t site)
{
	if (nblocks < cap_blocks)
		blocks[nblocks] = (struct lk_range){ user, user + (n != 0 ? n : 1), site, 0 };
	nblocks++;
}

static void add_excl(uintptr_t lo, size_t len)
{
	if (nexcl < cap_excl)
		excl[nexcl] = (struct lk_range){ lo, lo + len, 0, 0 };
	nexcl++;
}

static void walk_segment(struct jp_segment *seg)
{
	if (seg->magic != JP_SEG_MAGIC)
		return;
	add_excl((uintptr_t)seg, JP_SEG_SIZE);
	for (unsigned i = 1; i < JP_NSLICES; i++) {
		const struct jp_span *s = seg->slice_span[i];
		uintptr_t start, user;
		size_t n;
		uint32_t site;

		if (s == NULL || s == &jp__no_span || s->slice != i || s->bsize == 0 ||
		    s->limit == 0)
			continue;
		start = jp__span_start(s);
		for (uint32_t k = 0; k < s->nblocks; k++)
			if (jp__check_live((const unsigned char *)(start + (uintptr_t)k * s->bsize),
					   s->bsize, &user, &n, &site))
				add_block(user, n, site);
	}
}

static void walk_huge(const struct jp_huge *h)
{
	if (h->magic != JP_HUGE_MAGIC)
		return;
	add_excl((uintptr_t)h->base, h->map_size);
	add_block((uintptr_t)jp__huge_user(h), h->req, h->alloc_site);
}

/* Every segment and huge block, through the registry (a chunk's byte says
 * what starts there). */
static void walk_heap(void)
{
	nblocks = nexcl = 0;
	for (size_t c = 0; c < JP_REG_N; c += 8) {
		uint64_t w;

		/* Eight bytes at a time: the registry is mostly zero. */
		memcpy(&w, &jp__registry[c], sizeof w);
		if (w == 0)
			continue;
		for (size_t j = c; j < c + 8; j++) {
			uintptr_t a = (uintptr_t)j << JP_SEG_SHIFT;

			switch (jp__registry[j]) {
			case JP_REG_SMALL:
				walk_segment((struct jp_segment *)a);
				break;
			case JP_REG_HUGE:
				walk_huge((const struct jp_huge *)a);
				break;
			case JP_REG_HUGE_PREV:
				walk_huge((const struct jp_huge *)(a - JP_SEG_SIZE));
				break;
			default:
				break;
			}
		}
	}
}

/* ---- the scan --------------------------------------------------------- */

/* The live block a word points into, or NULL. */
static struct lk_range *block_at(uintptr_t w)
{
	size_t lo = 0, hi = nblocks;

	if (nblocks == 0 || w < blocks[0].lo)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (blocks[mid].lo <= w)
			lo = mid;
		else
			hi = mid;
	}
	return w < blocks[lo].hi ? &blocks[lo] : NULL;
}

/* The first aligned word at or above lo: a range's words are read from
 * there while a whole word fits below its end. */
static uintptr_t first_word(uintptr_t lo)
{
	return (lo + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1);
}

static void scan_words(uintptr_t lo, uintptr_t hi)
{
	for (uintptr_t p = first_word(lo); p + sizeof(uintptr_t) <= hi; p += sizeof(uintptr_t)) {
		struct lk_range *b = block_at(*(const uintptr_t *)p);

		if (b != NULL && !b->marked) {
			b->marked = LK_REACHED;
			work[nwork++] = (uint32_t)(b - blocks);
		}
	}
}

/* A root, less the ranges left out (sorted, not overlapping). */
static void scan_root(uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < nexcl && lo < hi; i++) {
		if (excl[i].hi <= lo)
			continue;
		if (excl[i].lo >= hi)
			break;
		if (excl[i].lo > lo)
			scan_words(lo, excl[i].lo);
		lo = excl[i].hi;
	}
	if (lo < hi)
		scan_words(lo, hi);
}

static void propagate(void)
{
	while (nwork > 0) {
		const struct lk_range *b = &blocks[work[--nwork]];

		scan_words(b->lo, b->hi);
	}
}

/*
 * The leaks' kinds.  First every leak that another leak points into is
 * indirect.  Then what each direct leak reaches through leaks is covered.
 * What is left is reached only through cycles of leaks: in address order,
 * each block not covered yet is made direct and what it reaches covered;
 * a block made direct earlier that this one's new blocks point into is
 * indirect again (the walk does not go through blocks covered before, so
 * an earlier lead reached only through those stays direct, as in
 * memcheck).  So each leaked structure shows one direct leak at least,
 * and a block is direct only when no leak points into it or it leads a
 * cycle.  Each block is pushed on the work list once, and read at most
 * twice.
 */
static void point_into(const struct lk_range *b)
{
	for (uintptr_t p = first_word(b->lo); p + sizeof(uintptr_t) <= b->hi; p += sizeof(uintptr_t)) {
		struct lk_range *t = block_at(*(const uintptr_t *)p);

		if (t != NULL && t != b && (t->marked & LK_REACHED) == 0)
			t->marked |= LK_INDIRECT;
	}
}

static void cover(struct lk_range *root)
{
	root->marked = LK_COVERED;	/* direct */
	work[nwork++] = (uint32_t)(root - blocks);
	while (nwork > 0) {
		const struct lk_range *b = &blocks[work[--nwork]];

		for (uintptr_t p = first_word(b->lo); p + sizeof(uintptr_t) <= b->hi;
		     p += sizeof(uintptr_t)) {
			struct lk_range *t = block_at(*(const uintptr_t *)p);

			if (t == NULL || t == root || (t->marked & LK_REACHED) != 0)
				continue;
			if ((t->marked & LK_COVERED) == 0)
				work[nwork++] = (uint32_t)(t - blocks);
			/* Pointed into by a leak: indirect (it was already,
			 * unless an earlier cycle's lead). */
			t->marked = LK_COVERED | LK_INDIRECT;
		}
	}
}

static void classify(void)
{
	for (size_t i = 0; i < nblocks; i++)
		if ((blocks[i].marked & LK_REACHED) == 0)
			point_into(&blocks[i]);
	for (size_t i = 0; i < nblocks; i++)
		if (blocks[i].marked == 0)
			cover(&blocks[i]);
	for (size_t i = 0; i < nblocks; i++)
		if ((blocks[i].marked & (LK_REACHED | LK_COVERED)) == 0)
			cover(&blocks[i]);
}

static uintptr_t hex(const char **s)
{
	uintptr_t v = 0;

	for (;; (*s)++) {
		char c = **s;

		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* The lowest stack pointer in [lo, hi) among the threads (this one
 * included, at sp), or hi when none is there. */
static uintptr_t stack_start(uintptr_t lo, uintptr_t hi, uintptr_t sp, unsigned nslots)
{
	uintptr_t best = sp >= lo && sp < hi ? sp : hi;

	for (unsigned i = 0; i < nslots; i++) {
		uintptr_t t = jp__leaks_slots[i].sp;

		if (atomic_load_explicit(&jp__leaks_slots[i].ready, memory_order_acquire) &&
		    t >= lo && t < hi && t < best)
			best = t;
	}
	return best;
}

/* The inode field of a maps line, s at the space after its range. */
static unsigned long maps_inode(const char *s)
{
	unsigned long v = 0;

	for (int field = 0; field < 3; field++) {	/* perms, offset, dev */
		while (*s == ' ')
			s++;
		while (*s != ' ' && *s != '\n' && *s != '\0')
			s++;
	}
	while (*s == ' ')
		s++;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (unsigned long)(*s++ - '0');
	return v;
}

/* A mapping of a file: the writable segments within [lo, hi) only. */
static void scan_file(uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < nsegs; i++) {
		uintptr_t a = segs[i].lo > lo ? segs[i].lo : lo;
		uintptr_t b = segs[i].hi < hi ? segs[i].hi : hi;

		if (a < b)
			scan_root(a, b);
	}
}

/* Every private writable mapping of maps (its text), a thread's stack from
 * its stack pointer up.  Not inlined: this frame is below the caller's,
 * where its registers were spilled, so that its stack is scanned from
 * below them. */
static __attribute__((noinline)) void scan_maps(char *maps, unsigned nslots)
{
	volatile uintptr_t here = 0;
	uintptr_t sp = (uintptr_t)&here;

	for (char *line = maps; *line != '\0';) {
		const char *s = line;
		char *nl = strchr(line, '\n');
		uintptr_t lo = hex(&s), hi, from;

		hi = *s == '-' ? (s++, hex(&s)) : 0;
		line = nl != NULL ? nl + 1 : line + strlen(line);
		/* "lo-hi rw-p ...": readable, writable, private. */
		if (*s != ' ' || s[1] != 'r' || s[2] != 'w' || s[4] != 'p' || hi <= lo)
			continue;
		if (nsegs != 0 && maps_inode(s) != 0) {
			scan_file(lo, hi);
			continue;
		}
		from = stack_start(lo, hi, sp, nslots);
		scan_root(from < hi ? from : lo, hi);
	}
}

/* The scan proper, with this thread's callee-saved registers on its stack
 * (__builtin_unwind_init spills them) below sp. */
static __attribute__((noinline)) uint64_t scan(char *maps, unsigned nslots,
					       unsigned unscanned, int trace_err)
{
	void *mem;
	size_t size;
	uint64_t leaked = 0;

	__builtin_unwind_init();
	/* Count, map the tables, then fill them: the first walk tells the
	 * sizes (each block and each left-out range once). */
	cap_blocks = cap_excl = 0;
	walk_heap();
	cap_blocks = nblocks;
	cap_excl = nexcl + 4;
	size = cap_blocks * (sizeof *blocks + sizeof *work + sizeof(struct lk_group)) +
	       cap_excl * sizeof *excl + 64;
	size = (size + jp__os_page_size() - 1) & ~(jp__os_page_size() - 1);
	if (jp__os_map(&mem, size) != 0) {
		jp__os_puts(jp__report_fd(), "jpsync: leaks: no memory for the scan; no report\n");
		return 0;
	}
	blocks = mem;
	excl = (struct lk_range *)(blocks + cap_blocks);
	work = (uint32_t *)(excl + cap_excl);
	walk_heap();
	if (nblocks > cap_blocks)
		nblocks = cap_blocks;	/* a thread that did not stop allocated */
	if (nexcl > cap_excl - 4)
		nexcl = cap_excl - 4;
	if (segs != NULL)
		add_excl((uintptr_t)segs, LEAKS_SEGS * sizeof *segs);
	add_excl((uintptr_t)mem, size);
	/* Bytes, not pointers: 64 MiB of words not worth reading. */
	add_excl((uintptr_t)jp__registry, JP_REG_N);
	add_excl((uintptr_t)maps, LEAKS_MAPS);
	jp__leaks_sort(blocks, nblocks, sizeof *blocks, range_less);
	jp__leaks_sort(excl, nexcl, sizeof *excl, range_less);
	nwork = 0;
	scan_maps(maps, nslots);
	propagate();
	classify();
	/* The verdicts are in this scan's tables: the threads may run on
	 * while the report names the frames (dladdr takes the loader's
	 * lock, which a stopped thread might hold). */
	jp__leaks_release();
	/* The groups after the work list, 16-byte aligned (the 64 bytes
	 * of slack above): a 64-bit field, and copies of the struct the
	 * compiler may do with aligned vector stores. */
	leaked = jp__leaks_print(blocks, nblocks,
				 (struct lk_group *)(((uintptr_t)(work + cap_blocks) + 15) &
						     ~(uintptr_t)15), unscanned, trace_err);
	jp__os_unmap(mem, size);
	return leaked;
}

int jp__leaks_report(void)
{
	unsigned sent, got, tried, traced;
	void *maps = NULL;
	bool cut = false;
	uint64_t leaked = 0;
	int trace_err;

	find_segs();
	sent = jp__leaks_stop();
	got = sent != 0 ? jp__leaks_wait(sent) : 0;
	traced = jp__leaks_trace(&tried, &trace_err);
	if (jp__os_map(&maps, LEAKS_MAPS) != 0 ||
	    jp__os_read_file("/proc/self/maps", maps, LEAKS_MAPS, &cut) < 0)
		jp__os_puts(jp__report_fd(), "jpsync: leaks: cannot read /proc/self/maps; no report\n");
	else
		leaked = scan(maps, jp__leaks_nslots(), sent - got + tried - traced,
			      trace_err);
	if (cut)
		jp__os_puts(jp__report_fd(), "jpsync: leaks: /proc/self/maps cut at 4 MiB: some roots "
			       "were not scanned\n");
	if (maps != NULL)
		jp__os_unmap(maps, LEAKS_MAPS);
	if (segs != NULL)
		jp__os_unmap(segs, LEAKS_SEGS * sizeof *segs);
	jp__leaks_release();
	return leaked != 0 ? (int)jp__options()->leaks_exitcode : 0;
}

/* After this library's other destructors (priority 101 runs last of
 * them): the statistics and the heap profile are written first. */
__attribute__((destructor(101))) static void leaks_at_exit(void)
{
	int code;

	if (!jp__settings.leaks)
		return;
	code = jp__leaks_report();
	if (code != 0) {
		/* The program's buffered output, which exit would flush
		 * after the destructors. */
		fflush(NULL);
		_exit(code);
	}
}
