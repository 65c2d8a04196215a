/*
 * options.c - every JPSYNC_* variable, in one table, parsed once.
 *
 * The parse runs before the allocator is ready (the preload module asks for
 * the options from its first malloc), so nothing here allocates: the
 * environment is walked directly and messages are formatted on the stack.
 */
#include "options.h"
#include "os.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

enum opt_kind {
	OPT_BOOL,	/* 1/yes/on/true, 0/no/off/false */
	OPT_SIZE,	/* integer with K/M/G suffix, in [min, max] */
	OPT_SIZE_OFF,	/* as OPT_SIZE, or "off" (stored as UINT64_MAX) */
	OPT_STATS,	/* boolean, or a file name */
};

struct opt_desc {
	const char *name;	/* without the JPSYNC_ prefix */
	enum opt_kind kind;
	size_t offset;		/* in struct jp_options */
	uint64_t def, min, max;
};

#define OPT(n, k, field, d, lo, hi) \
	{ n, k, offsetof(struct jp_options, field), d, lo, hi }

static const struct opt_desc opt_table[] = {
	OPT("CACHE_N", OPT_SIZE, cache_n, 4096, 1, 4096),
	OPT("CACHE_BYTES", OPT_SIZE, cache_bytes, (uint64_t)4 << 20, 0, (uint64_t)1 << 40),
	OPT("MAG_SIZE", OPT_SIZE, mag_size, 16, 1, 1024),
	OPT("MADVISE_MIN", OPT_SIZE_OFF, madvise_min, 4096, 0, UINT64_MAX - 1),
	OPT("CHECK", OPT_BOOL, check, 0, 0, 1),
	OPT("STATS", OPT_STATS, stats, 0, 0, 0),
	OPT("VERBOSE", OPT_BOOL, verbose, 0, 0, 1),
	OPT("LOCKDEP", OPT_BOOL, lockdep, 0, 0, 1),
};

/*
 * JPSYNC_* names that belong to the test suite and the benchmarks, not to
 * the library: recognised so that they draw no warning.
 */
static const char *const opt_foreign[] = {
	"TEST_SCALE", "BENCH_REPS", "BENCH_QUICK", "BENCH_THREADS",
	"BENCH_SECONDS", "BENCH_PEERS", "BENCH_OUT",
};

static const char prefix[] = "JPSYNC_";
#define PREFIX_LEN (sizeof prefix - 1)

int jp__parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "on", "true" };
	static const char *const no[] = { "0", "no", "off", "false" };

	for (size_t i = 0; i < JP_ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return EINVAL;
}

int jp__parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return EINVAL;	/* overflow */
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0':
		break;
	case 'k': case 'K': mult = 1ULL << 10; p++; break;
	case 'm': case 'M': mult = 1ULL << 20; p++; break;
	case 'g': case 'G': mult = 1ULL << 30; p++; break;
	default:
		return EINVAL;
	}
	/* Accept "4K", "4KB", "4KiB". */
	if (mult != 1 && (*p == 'i' || *p == 'I'))
		p++;
	if (mult != 1 && (*p == 'b' || *p == 'B'))
		p++;
	if (*p != '\0')
		return EINVAL;
	if (v > UINT64_MAX / mult)
		return EINVAL;
	*out = v * mult;
	return 0;
}

/* Append s to the line buffer, keeping room for the terminator. */
static void line_add(char *line, size_t cap, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (n > cap - 1 - *len)
		n = cap - 1 - *len;
	memcpy(line + *len, s, n);
	*len += n;
	line[*len] = '\0';
}

static void warn(int fd, const char *name, size_t name_len, const char *value,
		 const char *why)
{
	char line[320], nm[64];
	size_t len = 0;

	if (fd < 0)
		return;
	if (name_len >= sizeof nm)
		name_len = sizeof nm - 1;
	memcpy(nm, name, name_len);
	nm[name_len] = '\0';
	line_add(line, sizeof line, &len, "jpsync: warning: ");
	line_add(line, sizeof line, &len, nm);
	if (value != NULL) {
		/* A long value is shown cut, so that the reason always fits. */
		char shown[72];
		size_t vlen = strlen(value);
		if (vlen >= sizeof shown) {
			memcpy(shown, value, sizeof shown - 4);
			memcpy(shown + sizeof shown - 4, "...", 4);
		} else {
			memcpy(shown, value, vlen + 1);
		}
		line_add(line, sizeof line, &len, "='");
		line_add(line, sizeof line, &len, shown);
		line_add(line, sizeof line, &len, "'");
	}
	line_add(line, sizeof line, &len, ": ");
	line_add(line, sizeof line, &len, why);
	line_add(line, sizeof line, &len, "\n");
	jp__os_write(fd, line, len);
}

static void set_defaults(struct jp_options *o)
{
	memset(o, 0, sizeof *o);
	for (size_t i = 0; i < JP_ARRAY_SIZE(opt_table); i++) {
		const struct opt_desc *d = &opt_table[i];
		char *field = (char *)o + d->offset;
		switch (d->kind) {
		case OPT_BOOL:
			*(bool *)field = d->def != 0;
			break;
		case OPT_SIZE:
		case OPT_SIZE_OFF:
			*(uint64_t *)field = d->def;
			break;
		case OPT_STATS:
			o->stats = JP_STATS_NONE;
			break;
		}
	}
}

/* Parse one value; returns NULL or the reason it is refused. */
static const char *parse_one(struct jp_options *o, const struct opt_desc *d,
			     const char *value)
{
	char *field = (char *)o + d->offset;
	uint64_t v;
	bool b;

	switch (d->kind) {
	case OPT_BOOL:
		if (jp__parse_bool(value, &b) != 0)
			return "not a boolean (use 1/yes/on or 0/no/off); default kept";
		*(bool *)field = b;
		return NULL;
	case OPT_SIZE_OFF:
		if (strcasecmp(value, "off") == 0) {
			*(uint64_t *)field = UINT64_MAX;
			return NULL;
		}
		/* fall through */
	case OPT_SIZE:
		if (jp__parse_size(value, &v) != 0)
			return d->kind == OPT_SIZE_OFF
			       ? "not a size (a number with optional K/M/G, or off); default kept"
			       : "not a number (a number with optional K/M/G); default kept";
		if (v < d->min || v > d->max)
			return "out of range; default kept";
		*(uint64_t *)field = v;
		return NULL;
	case OPT_STATS:
		if (jp__parse_bool(value, &b) == 0) {
			o->stats = b ? JP_STATS_STDERR : JP_STATS_NONE;
			return NULL;
		}
		if (value[0] == '\0')
			return "empty (use 1, 0 or a file name); default kept";
		if (strlen(value) >= sizeof o->stats_path)
			return "file name too long; default kept";
		strcpy(o->stats_path, value);
		o->stats = JP_STATS_FILE;
		return NULL;
	}
	return "unhandled option kind";
}

int jp__options_parse(struct jp_options *o, char *const *env, int warn_fd)
{
	int warnings = 0;

	set_defaults(o);
	if (env == NULL)
		return 0;
	for (; *env != NULL; env++) {
		const char *entry = *env, *eq, *name;
		size_t name_len;
		const struct opt_desc *d = NULL;
		bool foreign = false;

		if (strncmp(entry, prefix, PREFIX_LEN) != 0)
			continue;
		eq = strchr(entry, '=');
		if (eq == NULL)
			continue;
		name = entry + PREFIX_LEN;
		name_len = (size_t)(eq - name);
		for (size_t i = 0; i < JP_ARRAY_SIZE(opt_table); i++) {
			if (strlen(opt_table[i].name) == name_len &&
			    memcmp(opt_table[i].name, name, name_len) == 0)
				d = &opt_table[i];
		}
		for (size_t i = 0; d == NULL && i < JP_ARRAY_SIZE(opt_foreign); i++) {
			if (strlen(opt_foreign[i]) == name_len &&
			    memcmp(opt_foreign[i], name, name_len) == 0)
				foreign = true;
		}
		if (foreign)
			continue;
		if (d == NULL) {
			warn(warn_fd, entry, (size_t)(eq - entry), NULL,
			     "unknown variable, ignored (see jpsync(7))");
			warnings++;
			continue;
		}
		const char *why = parse_one(o, d, eq + 1);
		if (why != NULL) {
			warn(warn_fd, entry, (size_t)(eq - entry), eq + 1, why);
			warnings++;
		}
	}
	return warnings;
}

void jp__options_print(const struct jp_options *o, int fd)
{
	for (size_t i = 0; i < JP_ARRAY_SIZE(opt_table); i++) {
		const struct opt_desc *d = &opt_table[i];
		const char *field = (const char *)o + d->offset;
		char line[400], num[24];
		size_t len = 0;

		line_add(line, sizeof line, &len, "jpsync: ");
		line_add(line, sizeof line, &len, prefix);
		line_add(line, sizeof line, &len, d->name);
		line_add(line, sizeof line, &len, "=");
		switch (d->kind) {
		case OPT_BOOL:
			line_add(line, sizeof line, &len, *(const bool *)field ? "1" : "0");
			break;
		case OPT_SIZE_OFF:
			if (*(const uint64_t *)field == UINT64_MAX) {
				line_add(line, sizeof line, &len, "off");
				break;
			}
			/* fall through */
		case OPT_SIZE:
			line_add(line, sizeof line, &len,
				 jp__fmt_u64(num, *(const uint64_t *)field));
			break;
		case OPT_STATS:
			line_add(line, sizeof line, &len,
				 o->stats == JP_STATS_NONE ? "0" :
				 o->stats == JP_STATS_STDERR ? "1" : o->stats_path);
			break;
		}
		line_add(line, sizeof line, &len, "\n");
		jp__os_write(fd, line, len);
	}
}

/*
 * The process-wide options.  State: 0 not parsed, 1 being parsed, 2 ready.
 * A thread that finds 1 waits for 2: the parse is short and allocates
 * nothing, so it cannot recurse into itself.
 */
static struct jp_options the_options;
static _Atomic int options_state;

const struct jp_options *jp__options(void)
{
	int s = atomic_load_explicit(&options_state, memory_order_acquire);

	if (jp_likely(s == 2))
		return &the_options;
	s = 0;
	if (atomic_compare_exchange_strong_explicit(&options_state, &s, 1,
						    memory_order_acquire,
						    memory_order_acquire)) {
		jp__options_parse(&the_options, jp__os_environ(), 2);
		if (the_options.verbose)
			jp__options_print(&the_options, 2);
		/* release: the parsed struct is visible to whoever sees 2 */
		atomic_store_explicit(&options_state, 2, memory_order_release);
	} else {
		while (atomic_load_explicit(&options_state, memory_order_acquire) != 2)
			jp_cpu_relax();
	}
	return &the_options;
}
