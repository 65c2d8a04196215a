/*
 * leaks_report.c - the leak report's text (leaks.c finds the leaks): the
 * leaked blocks grouped by kind and allocation stack, the direct leaks
 * first, each kind largest group first, in LeakSanitizer's style, then one
 * summary line.  Nothing here allocates (a sort of its own, the message
 * formatter of lib/base), and it runs after the threads were let go.
 */
#include "leaks.h"
#include "base/os.h"
#include "base/stack.h"

#include <errno.h>
#include <stdbool.h>

/* ---- sorting without allocating --------------------------------------- */

static void swap_bytes(unsigned char *a, unsigned char *b, size_t size)
{
	for (size_t i = 0; i < size; i++) {
		unsigned char t = a[i];

		a[i] = b[i];
		b[i] = t;
	}
}

static void sift(unsigned char *base, size_t size, size_t root, size_t n, jp__lk_less less)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && less(base + child * size, base + (child + 1) * size))
			child++;
		if (!less(base + root * size, base + child * size))
			return;
		swap_bytes(base + root * size, base + child * size, size);
	}
}

void jp__leaks_sort(void *v, size_t n, size_t size, jp__lk_less less)
{
	unsigned char *base = v;

	for (size_t i = n / 2; i-- > 0;)
		sift(base, size, i, n, less);
	for (size_t i = n; i-- > 1;) {
		swap_bytes(base, base + i * size, size);
		sift(base, size, 0, i, less);
	}
}

/* ---- the report -------------------------------------------------------- */

static uint32_t indirect(const struct lk_range *b)
{
	return (b->marked & LK_INDIRECT) != 0;
}

static bool group_less(const void *a, const void *b)
{
	const struct lk_group *x = a, *y = b;

	/* Direct first, then largest first: the sort is ascending, so
	 * "less" is "listed earlier". */
	if (x->indirect != y->indirect)
		return x->indirect < y->indirect;
	return x->bytes != y->bytes ? x->bytes > y->bytes : x->site < y->site;
}

static bool site_less(const void *a, const void *b)
{
	const struct lk_range *x = a, *y = b;

	return indirect(x) != indirect(y) ? indirect(x) < indirect(y) : x->site < y->site;
}

static void put_num(char *buf, size_t cap, size_t *len, uint64_t v)
{
	char num[24];

	jp__str_add(buf, cap, len, jp__fmt_u64(num, v));
}

static void put_group(int fd, const struct lk_group *g, bool first, bool *unnamed)
{
	char buf[4096];
	size_t len = 0;
	uintptr_t pc;

	buf[0] = '\0';
	if (first)
		jp__str_add(buf, sizeof buf, &len, "\n");
	jp__str_add(buf, sizeof buf, &len, g->indirect ? "Indirect leak: " : "Direct leak: ");
	put_num(buf, sizeof buf, &len, g->bytes);
	jp__str_add(buf, sizeof buf, &len, " bytes in ");
	put_num(buf, sizeof buf, &len, g->blocks);
	jp__str_add(buf, sizeof buf, &len, g->blocks == 1 ? " block" : " blocks");
	if (jp__stack_depot_get(g->site, &pc, 1) == 0)
		jp__str_add(buf, sizeof buf, &len, ", allocated at: (no stack recorded)\n");
	else {
		jp__str_add(buf, sizeof buf, &len, ", allocated at:\n");
		*unnamed |= jp__put_site(buf, sizeof buf, &len, NULL, g->site);
	}
	jp__str_add(buf, sizeof buf, &len, "\n");
	jp__os_write(fd, buf, len);
}

uint64_t jp__leaks_print(struct lk_range *v, size_t n, struct lk_group *groups,
			 unsigned unscanned, int trace_err)
{
	char buf[512];
	size_t len = 0, ng = 0, nleak = 0;
	uint64_t total = 0, reach = 0, reach_bytes = 0, nind = 0;
	bool unnamed = false;
	int fd = jp__report_fd();	/* one look, for every line */

	for (size_t i = 0; i < n; i++) {
		if (v[i].marked & LK_REACHED) {
			reach++;
			reach_bytes += v[i].hi - v[i].lo;
		} else
			v[nleak++] = v[i];
	}
	jp__leaks_sort(v, nleak, sizeof *v, site_less);
	for (size_t i = 0; i < nleak; i++) {
		if (ng == 0 || groups[ng - 1].site != v[i].site ||
		    groups[ng - 1].indirect != indirect(&v[i]))
			groups[ng++] = (struct lk_group){ 0, 0, v[i].site, indirect(&v[i]) };
		groups[ng - 1].bytes += v[i].hi - v[i].lo;
		groups[ng - 1].blocks++;
		total += v[i].hi - v[i].lo;
		nind += indirect(&v[i]);
	}
	jp__leaks_sort(groups, ng, sizeof *groups, group_less);
	for (size_t g = 0; g < ng; g++)
		put_group(fd, &groups[g], g == 0, &unnamed);
	buf[0] = '\0';
	if (unnamed)
		jp__str_add(buf, sizeof buf, &len, "(for file(+0xoff): addr2line -f -e file"
			    " +0xoff; link with -rdynamic for names)\n");
	if (unscanned != 0) {
		jp__str_add(buf, sizeof buf, &len, "jpsync: leaks: ");
		put_num(buf, sizeof buf, &len, unscanned);
		jp__str_add(buf, sizeof buf, &len, " threads not scanned (");
		jp__str_add(buf, sizeof buf, &len,
			    trace_err == 0 ? "they did not stop within 2 s" :
			    trace_err == EPERM || trace_err == EACCES ?
			    "they block the signal, and ptrace is not permitted here" :
			    trace_err == ETIMEDOUT ?
			    "they block the signal, and did not stop for ptrace within 2.5 s" :
			    "they block the signal, and ptrace failed here");
		jp__str_add(buf, sizeof buf, &len, "): their stacks were read whole, "
			    "while running\n");
	}
	jp__str_add(buf, sizeof buf, &len, "jpsync: leaks: ");
	put_num(buf, sizeof buf, &len, total);
	jp__str_add(buf, sizeof buf, &len, " bytes in ");
	put_num(buf, sizeof buf, &len, nleak);
	jp__str_add(buf, sizeof buf, &len, " blocks (");
	put_num(buf, sizeof buf, &len, nleak - nind);
	jp__str_add(buf, sizeof buf, &len, " direct, ");
	put_num(buf, sizeof buf, &len, nind);
	jp__str_add(buf, sizeof buf, &len, " indirect; ");
	put_num(buf, sizeof buf, &len, reach);
	jp__str_add(buf, sizeof buf, &len, " reachable blocks, ");
	put_num(buf, sizeof buf, &len, reach_bytes);
	jp__str_add(buf, sizeof buf, &len, " bytes, not reported)\n");
	jp__os_write(fd, buf, len);
	return nleak;
}
