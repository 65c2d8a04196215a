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
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#define OPT(n, f, a, k, by, field, d, lo, hi, h) \
	{ n, f, a, k, by, offsetof(struct jp_options, field), d, lo, hi, h }

const struct jp_option_desc jp__option_table[] = {
	OPT("CACHE_N", "cache", "N", JP_OPT_SIZE, false, cache_n, 4096, 1, 4096,
	    "the most blocks a thread's cache may grow to per size class"),
	OPT("CACHE_BYTES", "cache-bytes", "SIZE", JP_OPT_SIZE, true, cache_bytes,
	    (uint64_t)4 << 20, 0, (uint64_t)1 << 40,
	    "how much all threads' caches together may grow above their "
	    "starting size; 0 keeps them at their start"),
	OPT("MAG_SIZE", "magazine", "N", JP_OPT_SIZE, false, mag_size, 16, 1, 1024,
	    "blocks per refill of a thread's cache"),
	OPT("MADVISE_MIN", "madvise-min", "SIZE", JP_OPT_SIZE_OFF, true, madvise_min,
	    4096, 0, UINT64_MAX - 1,
	    "smallest free run of pages given back to the OS with madvise, "
	    "e.g. 4096, 64K, or off"),
	OPT("CHECK", "check", NULL, JP_OPT_BOOL, false, check, 0, 0, 1,
	    "check every block for overflows and underflows, and every free for "
	    "double frees, foreign pointers and writes into freed blocks; "
	    "abort on a jp_mutex unlocked, or a jp_cond waited on, by a thread "
	    "that does not hold the mutex, and on a jp_rwlock unlocked by a "
	    "thread that holds neither of its locks"),
	OPT("STATS", "stats", "FILE", JP_OPT_STATS, false, stats, 0, 0, 0,
	    "print the allocator's statistics when PROGRAM exits, on standard "
	    "error (=1, yes, on) or into FILE; =0, no, off: not at all; a file "
	    "named like these or a number: ./FILE"),
	OPT("STATS_SIGNAL", "stats-signal", "SIG", JP_OPT_SIGNAL, false, stats_signal,
	    0, 0, 0,
	    "print the statistics each time PROGRAM receives signal SIG (a name "
	    "such as USR2, or a number), where --stats prints them (standard "
	    "error by default); off by default; a handler PROGRAM installs for "
	    "SIG replaces it"),
	/* default 0: JP_STATS_TEXT (a number: tests/check-man.sh reads it) */
	OPT("STATS_FORMAT", "stats-format", "FORMAT", JP_OPT_FORMAT, false, stats_format,
	    0, 0, 0,
	    "the statistics as a table (text, the default) or as one JSON "
	    "object a line (json), whose fields jpsync(7) lists"),
	OPT("HEAP_PROFILE", "heap-profile", "FILE", JP_OPT_FILE, false, heap_profile,
	    0, 0, 0,
	    "sample allocations and write heap profiles that google-pprof reads: "
	    "FILE.<pid>.heap at exit, FILE.<pid>.<seq>.heap on --stats-signal "
	    "and at each --heap-profile-interval"),
	OPT("HEAP_PROFILE_RATE", "heap-profile-rate", "SIZE", JP_OPT_SIZE, true,
	    heap_profile_rate, (uint64_t)512 << 10, 1, (uint64_t)1 << 30,
	    "one sample per SIZE bytes allocated, on average"),
	OPT("HEAP_PROFILE_INTERVAL", "heap-profile-interval", "SIZE", JP_OPT_SIZE, true,
	    heap_profile_interval, 0, 0, (uint64_t)1 << 40,
	    "also write a profile each time the bytes in use grow by SIZE above "
	    "the last such profile's; 0: only at exit and on the signal"),
	OPT("LEAKS", "leaks", NULL, JP_OPT_BOOL, false, leaks, 0, 0, 1,
	    "report at exit the blocks no longer reachable from the program's "
	    "data, stacks and registers, grouped by where they were allocated "
	    "(turns on --check's block headers)"),
	OPT("LEAKS_EXITCODE", "leaks-exitcode", "N", JP_OPT_SIZE, false, leaks_exitcode,
	    23, 0, 255,
	    "the exit status when leaks are found; 0 keeps the program's own"),
	OPT("VERBOSE", "verbose", NULL, JP_OPT_BOOL, false, verbose, 0, 0, 1,
	    "print the library's version and path, then the options in force, "
	    "at start"),
	OPT("LOCKDEP", "lockdep", NULL, JP_OPT_BOOL, false, lockdep, 0, 0, 1,
	    "report lock-order inversions of jp_mutex"),
};
const size_t jp__option_count = JP_ARRAY_SIZE(jp__option_table);
#define opt_table jp__option_table

/*
 * JPSYNC_* names that belong to the test suite and the benchmarks, not to
 * the library: recognised so that they draw no warning.
 */
static const char *const opt_foreign[] = {
	"TEST_SCALE", "TEST_TIMEOUT", "BENCH_REPS", "BENCH_QUICK", "BENCH_THREADS",
	"BENCH_SECONDS", "BENCH_PEERS", "BENCH_OUT",
};

/* The signals a program may be asked to print its statistics on: those
 * that can be caught and that no fault raises (SEGV, BUS, FPE, ILL, TRAP
 * and ABRT end the program; KILL and STOP cannot be caught). */
static const struct {
	const char *name;
	int sig;
} sig_names[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT },
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "PIPE", SIGPIPE },
	{ "ALRM", SIGALRM }, { "TERM", SIGTERM }, { "CHLD", SIGCHLD },
	{ "CONT", SIGCONT }, { "TSTP", SIGTSTP }, { "TTIN", SIGTTIN },
	{ "TTOU", SIGTTOU }, { "URG", SIGURG }, { "XCPU", SIGXCPU },
	{ "XFSZ", SIGXFSZ }, { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF },
	{ "WINCH", SIGWINCH }, { "IO", SIGIO }, { "POLL", SIGPOLL },
	{ "PWR", SIGPWR }, { "SYS", SIGSYS },
#ifdef SIGSTKFLT
	{ "STKFLT", SIGSTKFLT },
#endif
};

/* A number: 1 to 31 but for the signals above that cannot be or must not
 * be caught, or SIGRTMIN to SIGRTMAX (32 and 33 are glibc's own). */
static bool sig_number_ok(uint64_t v)
{
	static const int refused[] = { SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE,
				       SIGILL, SIGTRAP, SIGABRT };

	for (size_t i = 0; i < JP_ARRAY_SIZE(refused); i++)
		if (v == (uint64_t)refused[i])
			return false;
	return (v >= 1 && v < 32) ||
	       (v >= (uint64_t)SIGRTMIN && v <= (uint64_t)SIGRTMAX);
}

int jp__parse_signal(const char *s, int *out)
{
	uint64_t v = 0;

	if (strcasecmp(s, "off") == 0 || strcmp(s, "0") == 0) {
		*out = 0;
		return 0;
	}
	/* "SIG" goes before a name only: SIG1 is neither (jpsync(7)). */
	bool sig = strncasecmp(s, "SIG", 3) == 0;

	if (sig)
		s += 3;
	for (size_t i = 0; i < JP_ARRAY_SIZE(sig_names); i++)
		if (strcasecmp(s, sig_names[i].name) == 0) {
			*out = sig_names[i].sig;
			return 0;
		}
	if (sig || s[0] < '0' || s[0] > '9')
		return EINVAL;
	for (; *s >= '0' && *s <= '9' && v < 1000; s++)
		v = v * 10 + (uint64_t)(*s - '0');
	if (*s != '\0' || !sig_number_ok(v))
		return EINVAL;
	*out = (int)v;
	return 0;
}

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

/* Warnings show at most this much of a name and of a value (then "..."),
 * each byte outside printable ASCII as \xHH: the reason always fits, and a
 * hostile value is one line that cannot drive the terminal. */
#define WARN_NAME_MAX 60
#define WARN_VALUE_MAX 68

static void warn(int fd, const char *name, size_t name_len, const char *value,
		 const char *why)
{
	/* 17 + 4 * (60 + 68) + 9 + the reason (< 160) + 16 */
	char line[768];
	size_t len = 0;

	if (fd < 0)
		return;
	jp__str_add(line, sizeof line, &len, "jpsync: warning: ");
	jp__str_add_shown(line, sizeof line, &len, name, name_len, WARN_NAME_MAX);
	if (value != NULL) {
		jp__str_add(line, sizeof line, &len, "='");
		jp__str_add_shown(line, sizeof line, &len, value, strlen(value),
				  WARN_VALUE_MAX);
		jp__str_add(line, sizeof line, &len, "'");
	}
	jp__str_add(line, sizeof line, &len, ": ");
	jp__str_add(line, sizeof line, &len, why);
	if (value != NULL)
		jp__str_add(line, sizeof line, &len, "; default kept");
	jp__str_add(line, sizeof line, &len, "\n");
	jp__os_write(fd, line, len);
}

static void set_defaults(struct jp_options *o)
{
	memset(o, 0, sizeof *o);
	for (size_t i = 0; i < JP_ARRAY_SIZE(opt_table); i++) {
		const struct jp_option_desc *d = &opt_table[i];
		char *field = (char *)o + d->offset;
		switch (d->kind) {
		case JP_OPT_BOOL:
			*(bool *)field = d->def != 0;
			break;
		case JP_OPT_SIZE:
		case JP_OPT_SIZE_OFF:
			*(uint64_t *)field = d->def;
			break;
		case JP_OPT_STATS:
			o->stats = JP_STATS_NONE;
			break;
		case JP_OPT_SIGNAL:
			*(int *)field = 0;
			break;
		case JP_OPT_FORMAT:
			*(int *)field = (int)d->def;
			break;
		case JP_OPT_FILE:
			field[0] = '\0';
			break;
		}
	}
}

/* v as the parser reads it: "4M" for 4 MiB when d is in bytes and v a
 * whole number of K, M or G, else decimal. */
static void size_add(char *line, size_t cap, size_t *len,
		     const struct jp_option_desc *d, uint64_t v)
{
	static const char suffix[] = "KMG";
	char num[24];
	int k = 0;

	while (d->bytes && k < 3 && v != 0 && v % 1024 == 0) {
		v /= 1024;
		k++;
	}
	jp__str_add(line, cap, len, jp__fmt_u64(num, v));
	if (k > 0) {
		char sfx[2] = { suffix[k - 1], '\0' };

		jp__str_add(line, cap, len, sfx);
	}
}

char *jp__option_range(const struct jp_option_desc *d, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	switch (d->kind) {
	case JP_OPT_BOOL:
	case JP_OPT_STATS:
	case JP_OPT_SIGNAL:
	case JP_OPT_FILE:
		break;
	case JP_OPT_FORMAT:
		jp__str_add(buf, cap, &len, "text or json; default text");
		break;
	case JP_OPT_SIZE_OFF:
		jp__str_add(buf, cap, &len, "a size or off; default ");
		size_add(buf, cap, &len, d, d->def);
		break;
	case JP_OPT_SIZE:
		size_add(buf, cap, &len, d, d->min);
		jp__str_add(buf, cap, &len, " to ");
		size_add(buf, cap, &len, d, d->max);
		jp__str_add(buf, cap, &len, "; default ");
		size_add(buf, cap, &len, d, d->def);
		break;
	}
	return buf;
}

/* A reason with the accepted range: "<what> (<min> to <max>)". */
static const char *why_range(const struct jp_option_desc *d, const char *what,
			     char *why, size_t cap)
{
	size_t len = 0;

	why[0] = '\0';
	jp__str_add(why, cap, &len, what);
	jp__str_add(why, cap, &len, " (");
	size_add(why, cap, &len, d, d->min);
	jp__str_add(why, cap, &len, " to ");
	size_add(why, cap, &len, d, d->max);
	jp__str_add(why, cap, &len, d->bytes ? ", with an optional K, M or G suffix)"
				       : ")");
	return why;
}

/* An optional sign and decimal digits only. */
static bool is_number(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

const char *jp__option_value(struct jp_options *o, const struct jp_option_desc *d,
			     const char *value, char *why, size_t cap)
{
	char *field = (char *)o + d->offset;
	uint64_t v;
	bool b;

	switch (d->kind) {
	case JP_OPT_BOOL:
		if (jp__parse_bool(value, &b) != 0)
			return "not a boolean (use 1/yes/on or 0/no/off)";
		*(bool *)field = b;
		return NULL;
	case JP_OPT_SIZE_OFF:
		if (strcasecmp(value, "off") == 0) {
			*(uint64_t *)field = UINT64_MAX;
			return NULL;
		}
		if (jp__parse_size(value, &v) != 0)
			return "not a size (a number with an optional K, M or G suffix, or off)";
		*(uint64_t *)field = v;
		return NULL;
	case JP_OPT_SIZE:
		if (jp__parse_size(value, &v) != 0)
			return why_range(d, "not a number", why, cap);
		if (v < d->min || v > d->max)
			return why_range(d, "out of range", why, cap);
		*(uint64_t *)field = v;
		return NULL;
	case JP_OPT_STATS:
		if (jp__parse_bool(value, &b) == 0) {
			o->stats = b ? JP_STATS_STDERR : JP_STATS_NONE;
			return NULL;
		}
		if (value[0] == '\0')
			return "empty (use 1, 0 or a file name)";
		/* A number other than 1 and 0 is a mistake more often than a
		 * file name ("--stats=2", "JPSYNC_STATS=-1"): refused, with
		 * the spelling of such a file. */
		if (is_number(value)) {
			size_t len = 0;

			why[0] = '\0';
			jp__str_add(why, cap, &len, "neither 1/yes/on, 0/no/off nor a file "
				    "name (a file of that name: ./");
			jp__str_add_shown(why, cap, &len, value, strlen(value), 24);
			jp__str_add(why, cap, &len, ")");
			return why;
		}
		if (strlen(value) >= sizeof o->stats_path)
			return "file name too long (at most PATH_MAX - 1 bytes)";
		/* it is printed (JPSYNC_VERBOSE, jpsync-run --print-env) one
		 * variable a line */
		for (const char *p = value; *p != '\0'; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return "a control character in the file name";
		memcpy(o->stats_path, value, strlen(value) + 1);	/* fits: checked above */
		o->stats = JP_STATS_FILE;
		return NULL;
	case JP_OPT_SIGNAL:
		if (jp__parse_signal(value, (int *)field) != 0)
			return "not a signal that can be caught (a name such as USR2 "
			       "or HUP, a number, or off)";
		return NULL;
	case JP_OPT_FORMAT:
		if (strcasecmp(value, "text") == 0)
			*(int *)field = JP_STATS_TEXT;
		else if (strcasecmp(value, "json") == 0)
			*(int *)field = JP_STATS_JSON;
		else
			return "not a statistics format (text or json)";
		return NULL;
	case JP_OPT_FILE:
		/* empty: none (as jp__options_print shows none) */
		if (strlen(value) >= JP_STATS_PATH_MAX)
			return "file name too long (at most PATH_MAX - 1 bytes)";
		for (const char *p = value; *p != '\0'; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return "a control character in the file name";
		memcpy(field, value, strlen(value) + 1);	/* fits: checked above */
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
		const struct jp_option_desc *d = NULL;
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
		char reason[160];
		const char *why = jp__option_value(o, d, eq + 1, reason, sizeof reason);
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
		const struct jp_option_desc *d = &opt_table[i];
		const char *field = (const char *)o + d->offset;
		/* the longest value is a stats path */
		char line[JP_STATS_PATH_MAX + 64], num[24];
		size_t len = 0;

		jp__str_add(line, sizeof line, &len, "jpsync: ");
		jp__str_add(line, sizeof line, &len, prefix);
		jp__str_add(line, sizeof line, &len, d->name);
		jp__str_add(line, sizeof line, &len, "=");
		switch (d->kind) {
		case JP_OPT_BOOL:
			jp__str_add(line, sizeof line, &len, *(const bool *)field ? "1" : "0");
			break;
		case JP_OPT_SIZE_OFF:
			if (*(const uint64_t *)field == UINT64_MAX) {
				jp__str_add(line, sizeof line, &len, "off");
				break;
			}
			/* fall through */
		case JP_OPT_SIZE:
			jp__str_add(line, sizeof line, &len,
				 jp__fmt_u64(num, *(const uint64_t *)field));
			break;
		case JP_OPT_STATS:
			jp__str_add(line, sizeof line, &len,
				 o->stats == JP_STATS_NONE ? "0" :
				 o->stats == JP_STATS_STDERR ? "1" : o->stats_path);
			break;
		case JP_OPT_SIGNAL:
			jp__str_add(line, sizeof line, &len,
				 jp__fmt_u64(num, (uint64_t)*(const int *)field));
			break;
		case JP_OPT_FORMAT:
			jp__str_add(line, sizeof line, &len,
				 *(const int *)field == JP_STATS_JSON ? "json" : "text");
			break;
		case JP_OPT_FILE:
			jp__str_add(line, sizeof line, &len, field);
			break;
		}
		jp__str_add(line, sizeof line, &len, "\n");
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
		/* JPSYNC_VERBOSE prints them at load (version.c), however
		 * early the first malloc comes. */
		jp__options_parse(&the_options, jp__os_environ(), 2);
		/* release: the parsed struct is visible to whoever sees 2 */
		atomic_store_explicit(&options_state, 2, memory_order_release);
	} else {
		while (atomic_load_explicit(&options_state, memory_order_acquire) != 2)
			jp_cpu_relax();
	}
	return &the_options;
}
