/*
 * stats_table.c - the statistics table, as text or JSON
 * (JPSYNC_STATS_FORMAT), and jp_alloc_stats_print; the figures come from
 * alloc_stats.c (jp__stats_gather), where the table also goes out at exit
 * and on JPSYNC_STATS_SIGNAL.  Nothing here allocates.
 */
#include "alloc_init.h"
#include "quarantine.h"
#include "sizeclass.h"
#include "stats.h"
#include "base/os.h"
#include "base/options.h"

#include <jpsync/alloc.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* ---- the table -------------------------------------------------------- */

/*
 * The table is put together on the stack with the library's one string
 * builder (jp__str_add, msg.c) and goes out in one write(2): tables of
 * processes that exit together, appended (O_APPEND) to one file, do not
 * interleave.  The whole of either format fits: the text table is at most
 * the head (~1.5 KiB) and 52 classes of 80 bytes; the JSON object the same
 * head's fields (~1 KiB), a program name of at most 255 bytes escaped (6
 * bytes each at worst) and 52 classes of at most 130 bytes (~9 KiB).
 */
#define TABLE_CAP 12288

static void put(char *b, size_t *len, const char *s)
{
	jp__str_add(b, TABLE_CAP, len, s);
}

/* v right-aligned in width columns. */
static void put_num(char *b, size_t *len, uint64_t v, int width)
{
	char num[24];
	int n;

	jp__fmt_u64(num, v);
	for (n = (int)strlen(num); n < width; n++)
		put(b, len, " ");
	put(b, len, num);
}

/* part/whole as a percentage with one decimal, right-aligned in 6 (pad)
 * or as it is. */
static void put_pct_as(char *b, size_t *len, uint64_t part, uint64_t whole, bool pad)
{
	char num[24], frac[4];
	uint64_t permille;

	if (whole == 0) {
		put(b, len, pad ? "     -" : "-");
		return;
	}
	permille = (uint64_t)((double)part * 1000.0 / (double)whole + 0.5);
	jp__fmt_u64(num, permille / 10);
	frac[0] = '.';
	frac[1] = (char)('0' + permille % 10);
	frac[2] = '%';
	frac[3] = '\0';
	for (int n = (int)strlen(num); pad && n < 3; n++)
		put(b, len, " ");
	put(b, len, num);
	put(b, len, frac);
}

/* A label, then v in bytes right-aligned and in human units. */
static void put_bytes(char *b, size_t *len, const char *label, uint64_t v)
{
	char h[24];

	put(b, len, label);
	put_num(b, len, v, 16);
	put(b, len, " bytes  ");
	put(b, len, jp__fmt_bytes(h, v));
}

/* ns as seconds with three decimals, right-aligned in 16, then " s". */
static void put_secs(char *b, size_t *len, uint64_t ns)
{
	uint64_t ms = ns / 1000000;
	char frac[6];

	put_num(b, len, ms / 1000, 12);
	frac[0] = '.';
	frac[1] = (char)('0' + ms % 1000 / 100);
	frac[2] = (char)('0' + ms % 100 / 10);
	frac[3] = (char)('0' + ms % 10);
	frac[4] = '\0';
	put(b, len, frac);
	put(b, len, " s");
}

static void put_human(char *b, size_t *len, uint64_t v)
{
	char h[24];

	put(b, len, jp__fmt_bytes(h, v));
}

/*
 * The process as the kernel sees it, as mimalloc and time(1) show it: who
 * it is, how long it has run, its CPU time, peak resident set and page
 * faults.  getrusage and clock_gettime do not allocate.
 */
static void put_process(char *b, size_t *len, const struct jp_os_usage *u)
{
	char name[80];

	put(b, len, "  program         ");
	put(b, len, jp__os_program_name(name, sizeof name));
	put(b, len, ", pid ");
	put_num(b, len, (uint64_t)getpid(), 0);
	put(b, len, "\n  elapsed         ");
	put_secs(b, len, jp__os_since_load_ns());
	put(b, len, "  (since the library was loaded)\n  CPU time, user  ");
	put_secs(b, len, u->utime_ns);
	put(b, len, "\n  CPU time, system");
	put_secs(b, len, u->stime_ns);
	put(b, len, "\n");
	put_bytes(b, len, "  peak RSS        ", u->max_rss);
	put(b, len, "\n  page faults     ");
	put_num(b, len, u->minflt, 16);
	put(b, len, " minor, ");
	put_num(b, len, u->majflt, 0);
	put(b, len, " major\n");
}

/* The text table (jp_alloc_stats(3) says what each figure means). */
static void put_text(char *b, size_t *len, const struct jp_alloc_stats *st,
		     const uint64_t *cm, const struct jp_os_usage *u)
{
	/* The summary: one line, in human units. */
	put(b, len, "jpsync allocator statistics (pid ");
	put_num(b, len, (uint64_t)getpid(), 0);
	put(b, len, "): ");
	put_human(b, len, st->in_use);
	put(b, len, " in use (peak ");
	put_human(b, len, st->peak_in_use);
	put(b, len, "), ");
	put_human(b, len, st->mapped);
	put(b, len, " mapped (peak ");
	put_human(b, len, st->peak_mapped);
	put(b, len, "), ");
	put_num(b, len, st->allocs, 0);
	put(b, len, " allocations, ");
	put_pct_as(b, len, st->cache_hits, st->cache_hits + st->cache_misses, false);
	put(b, len, " from thread caches\n");
	put_process(b, len, u);
	/* The details, one labelled figure a line. */
	put_bytes(b, len, "  in use          ", st->in_use);
	put(b, len, "\n");
	put_bytes(b, len, "  in use, peak    ", st->peak_in_use);
	put(b, len, "  (at one moment, thread caches included)\n");
	put_bytes(b, len, "  mapped          ", st->mapped);
	put(b, len, "\n");
	put_bytes(b, len, "  mapped, peak    ", st->peak_mapped);
	put(b, len, "\n");
	put_bytes(b, len, "  in thread caches", st->cached);
	put(b, len, "\n");
	put_bytes(b, len, "  in transit      ", st->in_transit);
	put(b, len, "  (freed, on the chains between threads)\n");
	put_bytes(b, len, "  free in spans   ", st->span_free);
	put(b, len, "  (");
	put_human(b, len, st->orphaned);
	put(b, len, " of these two in shards no thread uses)\n");
	put_bytes(b, len, "  given back      ", st->trimmed);
	put(b, len, "  (to the system, so far)\n");
	put_bytes(b, len, "  decommitted     ", st->decommit_bytes);
	put(b, len, "  in ");
	put_num(b, len, st->decommits, 0);
	put(b, len, st->decommits == 1 ? " madvise call\n" : " madvise calls\n");
	put_bytes(b, len, "  huge blocks     ", st->huge_bytes);
	put(b, len, "  in ");
	put_num(b, len, st->huge_count, 0);
	put(b, len, st->huge_count == 1 ? " block (above 256 KiB)\n" : " blocks (above 256 KiB)\n");
	if (jp__settings.check) {
		/* Check mode's quarantine that fell back to madvise (huge.c). */
		put(b, len, "  check mode      ");
		put_num(b, len, jp__huge_unprotected(), 16);
		put(b, len, "  freed blocks above 256 KiB left accessible (mmap failed)\n");
	}
	put(b, len, "  threads         ");
	put_num(b, len, st->threads, 16);
	put(b, len, "  (with a cache, now)\n  allocations     ");
	put_num(b, len, st->allocs, 16);
	put(b, len, "\n  frees           ");
	put_num(b, len, st->frees, 16);
	put(b, len, "\n  cache hits      ");
	put_num(b, len, st->cache_hits, 16);
	put(b, len, "  ");
	put_pct_as(b, len, st->cache_hits, st->cache_hits + st->cache_misses, false);
	put(b, len, " hit rate, of allocations of up to 256 KiB\n");
	/* Per size class: the columns, labelled. */
	put(b, len, "  class  block size    allocations          frees  blocks in use   hit%\n");
	for (uint32_t c = 0; c < st->nclasses; c++) {
		uint64_t a = st->class_allocs[c], f = st->class_frees[c];

		if (a == 0 && f == 0)
			continue;
		put_num(b, len, c, 7);
		put_num(b, len, st->class_size[c], 12);
		put_num(b, len, a, 15);
		put_num(b, len, f, 15);
		put_num(b, len, a >= f ? a - f : 0, 15);
		put(b, len, " ");
		put_pct_as(b, len, a >= cm[c] ? a - cm[c] : 0, a, true);
		put(b, len, "\n");
	}
}

/* ,"key":v (no comma when first). */
static void put_field(char *b, size_t *len, const char *key, uint64_t v, bool first)
{
	char num[24];

	put(b, len, first ? "\"" : ",\"");
	put(b, len, key);
	put(b, len, "\":");
	put(b, len, jp__fmt_u64(num, v));
}

/* The head of every JSON object: schema, type, program, pid. */
static void put_json_head(char *b, size_t *len, const char *type)
{
	char comm[32];
	const char *name = jp__os_program_bytes(comm, sizeof comm);

	put_field(b, len, "schema", 1, true);
	put(b, len, ",\"type\":\"");
	put(b, len, type);
	put(b, len, "\",\"program\":\"");
	jp__str_add_json(b, TABLE_CAP, len, name, strlen(name), 255);
	put(b, len, "\"");
	put_field(b, len, "pid", (uint64_t)getpid(), false);
}

/* The same figures as one JSON object on one line (JSON Lines); the
 * schema is jpsync(7)'s: keep the two in step, and add fields at the end
 * of the head, before "classes", which stays last. */
static void put_json(char *b, size_t *len, const struct jp_alloc_stats *st,
		     const uint64_t *cm, const struct jp_os_usage *u)
{
	bool first = true;

	put(b, len, "{");
	put_json_head(b, len, "stats");
	put_field(b, len, "elapsed_ns", jp__os_since_load_ns(), false);
	put_field(b, len, "user_ns", u->utime_ns, false);
	put_field(b, len, "system_ns", u->stime_ns, false);
	put_field(b, len, "peak_rss", u->max_rss, false);
	put_field(b, len, "minor_faults", u->minflt, false);
	put_field(b, len, "major_faults", u->majflt, false);
	put_field(b, len, "in_use", st->in_use, false);
	put_field(b, len, "peak_in_use", st->peak_in_use, false);
	put_field(b, len, "mapped", st->mapped, false);
	put_field(b, len, "peak_mapped", st->peak_mapped, false);
	put_field(b, len, "cached", st->cached, false);
	put_field(b, len, "in_transit", st->in_transit, false);
	put_field(b, len, "span_free", st->span_free, false);
	put_field(b, len, "orphaned", st->orphaned, false);
	put_field(b, len, "given_back", st->trimmed, false);
	put_field(b, len, "decommitted", st->decommit_bytes, false);
	put_field(b, len, "decommits", st->decommits, false);
	put_field(b, len, "huge_bytes", st->huge_bytes, false);
	put_field(b, len, "huge_blocks", st->huge_count, false);
	put_field(b, len, "threads", st->threads, false);
	put_field(b, len, "allocations", st->allocs, false);
	put_field(b, len, "frees", st->frees, false);
	put_field(b, len, "cache_hits", st->cache_hits, false);
	put_field(b, len, "cache_misses", st->cache_misses, false);
	if (jp__settings.check)
		put_field(b, len, "check_unprotected", jp__huge_unprotected(), false);
	put(b, len, ",\"classes\":[");
	for (uint32_t c = 0; c < st->nclasses; c++) {
		uint64_t a = st->class_allocs[c], f = st->class_frees[c];

		if (a == 0 && f == 0)
			continue;
		put(b, len, first ? "{" : ",{");
		first = false;
		put_field(b, len, "class", c, true);
		put_field(b, len, "block_size", st->class_size[c], false);
		put_field(b, len, "allocations", a, false);
		put_field(b, len, "frees", f, false);
		put_field(b, len, "misses", cm[c], false);
		put(b, len, "}");
	}
	put(b, len, "]}\n");
}

/* The table, from jp_alloc_stats_print or a signal handler (interrupted):
 * then only a note if the interrupted code holds one of the allocator's
 * locks. */
int jp__stats_print(int fd, bool interrupted, int format)
{
	struct jp_alloc_stats st;
	struct jp_os_usage u;
	uint64_t cm[JP_NCLASSES];
	char b[TABLE_CAP];
	size_t len = 0;

	if (fd < 0)
		return EBADF;
	b[0] = '\0';
	if (!jp__stats_gather(&st, cm, interrupted)) {
		if (format == JP_STATS_JSON) {
			put(b, &len, "{");
			put_json_head(b, &len, "busy");
			put(b, &len, "}\n");
		} else {
			put(b, &len, "jpsync allocator statistics (pid ");
			put_num(b, &len, (uint64_t)getpid(), 0);
			put(b, &len, "): not now, the signal interrupted the allocator "
				     "(send it again)\n");
		}
		return jp__os_write(fd, b, len);
	}
	jp__os_usage(&u);
	if (format == JP_STATS_JSON)
		put_json(b, &len, &st, cm, &u);
	else
		put_text(b, &len, &st, cm, &u);
	return jp__os_write(fd, b, len);
}

/* Text whatever JPSYNC_STATS_FORMAT says: a program that calls it parses
 * what it gets, and the variable is the user's, not the program's. */
JP_EXPORT int jp_alloc_stats_print(int fd)
{
	return jp__stats_print(fd, false, JP_STATS_TEXT);
}

