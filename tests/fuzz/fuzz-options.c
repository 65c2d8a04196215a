/*
 * fuzz-options.c - the option table (lib/base/options.c) and jpsync-run's
 * arguments (shim/jpsync-run.c) against a model of what jpsync(7) and
 * jpsync-run(1) say they accept.
 *
 * The input (options-input.h) is a whole environment, a value for every
 * JPSYNC_* variable, or jpsync-run's arguments.  Checked:
 *   - jp__options_parse() never crashes or reads out of bounds (ASan,
 *     UBSan);
 *   - the model (written here from the pages, not from the parser) rejects
 *     exactly the entries the parser warns about, and the values it accepts
 *     are the ones the parser stores;
 *   - every rejected entry gives exactly one warning: one line, in order,
 *     naming the variable, with no control character but its newline
 *     (a hostile value cannot add lines or drive the terminal);
 *   - what the parser accepted round-trips: jp__options_print(), read back
 *     by jp__options_parse() without a warning, gives the same options;
 *   - jpsync-run (its main() compiled in here, with exit() coming back here
 *     and the module "found" so that --print-env prints what it would set)
 *     exits 0 or 2; a usage error is one line and the pointer to --help;
 *     an option whose value the model rejects is a usage error; what
 *     --print-env prints is what the options said, and parses back without
 *     a warning.
 */
#include "config.h"

#include "fuzz.h"
#include "options-input.h"
#include "base/options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- jpsync-run's main(), compiled in ------------------------------------ */
/* exit() returns here, stdout and stderr are captured, the module is always
 * found (access() says yes: nothing is opened, checked or executed, since
 * --print-env comes first). */
static jmp_buf run_jmp;
static int run_status;
static FILE *run_out, *run_err;

static _Noreturn void run_exit(int status)
{
	run_status = status;
	longjmp(run_jmp, 1);
}

static int run_access(const char *path, int mode)
{
	(void)path;
	(void)mode;
	return 0;
}

int jpsync_run_main(int argc, char **argv);
#define main jpsync_run_main
#define exit run_exit
#define access run_access
#undef stdout
#undef stderr
#define stdout run_out
#define stderr run_err
#define printf(...) fprintf(run_out, __VA_ARGS__)
#define PKGLIBDIR "/nonexistent/lib/jpsync"
#define BINDIR "/nonexistent/bin"
#include "../../shim/jpsync-run.c"
#undef main
#undef exit
#undef access
#undef stdout
#undef stderr
#undef printf

/* jpsync-run's main() on argv: its exit status. */
static int run_main(int argc, char **argv)
{
	optind = 0;	/* getopt starts again */
	if (setjmp(run_jmp) == 0)
		run_status = jpsync_run_main(argc, argv);
	return run_status;
}

/* ---- the model ------------------------------------------------------------ */
/* jpsync(7): booleans 1/yes/on/true and 0/no/off/false, any case. */
static int m_bool(const char *s)
{
	static const char *const word[] = { "1", "yes", "on", "true",
					    "0", "no", "off", "false" };

	for (int i = 0; i < 8; i++) {
		size_t k = 0;

		while (s[k] != '\0' && word[i][k] != '\0' &&
		       (s[k] | 0x20) == word[i][k] && s[k] >= '0')
			k++;
		if (s[k] == '\0' && word[i][k] == '\0')
			return i < 4;
	}
	return -1;
}

/* A decimal number with an optional K, M or G suffix (and i, B after it:
 * 4K, 4KB, 4KiB), that fits 64 bits. */
static bool m_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return false;
	/* Overflow-checked in 64 bits: no __int128 on 32-bit targets. */
	for (; *p >= '0' && *p <= '9'; p++)
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
			return false;
	switch (*p) {
	case 'k': case 'K': mult = 1 << 10; break;
	case 'm': case 'M': mult = 1 << 20; break;
	case 'g': case 'G': mult = 1 << 30; break;
	}
	if (mult != 1) {
		p++;
		if (*p == 'i' || *p == 'I')
			p++;
		if (*p == 'b' || *p == 'B')
			p++;
	}
	if (*p != '\0' || __builtin_mul_overflow(v, mult, &v))
		return false;
	*out = v;
	return true;
}

/* A signal as JPSYNC_STATS_SIGNAL takes it: off or 0; a number from 1 to
 * 31 but KILL, STOP and the faults, or SIGRTMIN to SIGRTMAX; the C
 * library's abbreviation of such a signal (sigabbrev_np), "IO" for POLL,
 * with or without "SIG", in any case.  -1: refused. */
static int m_signal(const char *s)
{
	static const int refused[] = { SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE,
				       SIGILL, SIGTRAP, SIGABRT };
	char *end;
	unsigned long v;

	if (strcasecmp(s, "off") == 0 || strcmp(s, "0") == 0)
		return 0;
	if (s[0] >= '0' && s[0] <= '9') {
		errno = 0;
		v = strtoul(s, &end, 10);
		if (*end != '\0' || errno != 0 || v > 1000)
			return -1;
	} else {
		if (strncasecmp(s, "SIG", 3) == 0)
			s += 3;
		v = 0;
		for (int n = 1; n < 32; n++) {
			const char *a = sigabbrev_np(n);

			if ((a != NULL && strcasecmp(s, a) == 0) ||
			    (n == SIGIO && strcasecmp(s, "IO") == 0))
				v = (unsigned long)n;
		}
		if (v == 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
		if (v == (unsigned long)refused[i])
			return -1;
	if ((v >= 1 && v < 32) || (v >= (unsigned long)SIGRTMIN && v <= (unsigned long)SIGRTMAX))
		return (int)v;
	return -1;
}

/* Whether row d accepts value, and if so its effect on *m. */
static bool m_accept(struct jp_options *m, const struct jp_option_desc *d,
		     const char *value)
{
	char *field = (char *)m + d->offset;
	uint64_t v;
	int b = m_bool(value);

	switch (d->kind) {
	case JP_OPT_BOOL:
		if (b < 0)
			return false;
		*(bool *)field = b;
		return true;
	case JP_OPT_SIZE_OFF:
		if (strcasecmp(value, "off") == 0)
			v = UINT64_MAX;
		else if (!m_size(value, &v))
			return false;
		*(uint64_t *)field = v;
		return true;
	case JP_OPT_SIZE:
		if (!m_size(value, &v) || v < d->min || v > d->max)
			return false;
		*(uint64_t *)field = v;
		return true;
	case JP_OPT_STATS:
		if (b >= 0) {
			m->stats = b ? JP_STATS_STDERR : JP_STATS_NONE;
			return true;
		}
		/* a file name: not empty, not a number (an optional sign and
		 * digits), shorter than PATH_MAX bytes, and no control
		 * character (it would not print as one line) */
		if (value[0] == '\0' || strlen(value) >= sizeof m->stats_path)
			return false;
		{
			const char *q = value + (value[0] == '-' || value[0] == '+');

			if (*q != '\0' && strspn(q, "0123456789") == strlen(q))
				return false;
		}
		for (const char *p = value; *p != '\0'; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return false;
		strcpy(m->stats_path, value);
		m->stats = JP_STATS_FILE;
		return true;
	case JP_OPT_SIGNAL:
		if ((b = m_signal(value)) < 0)
			return false;
		*(int *)field = b;
		return true;
	case JP_OPT_FORMAT:
		/* jpsync(7): text or json, in any case */
		if (strcasecmp(value, "text") == 0)
			*(int *)field = 0;
		else if (strcasecmp(value, "json") == 0)
			*(int *)field = 1;
		else
			return false;
		return true;
	case JP_OPT_FILE:
		/* a file name shorter than PATH_MAX bytes, no control
		 * character; empty: none */
		if (strlen(value) >= JP_STATS_PATH_MAX)
			return false;
		for (const char *p = value; *p != '\0'; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return false;
		strcpy(field, value);
		return true;
	}
	fz_fail("row %s: unknown kind %d", d->name, (int)d->kind);
}

/* Whether --stats=VALUE names a file (jpsync-run(1)): not empty, not a
 * boolean (that switches the table) and not a number (refused). */
static bool m_stats_file(const char *value)
{
	const char *q = value + (value[0] == '-' || value[0] == '+');

	return value[0] != '\0' && m_bool(value) < 0 &&
	       (*q == '\0' || strspn(q, "0123456789") != strlen(q));
}

/* The test suite's and the benchmarks' variables: no warning (options.c). */
static bool m_foreign(const char *name, size_t len)
{
	static const char *const foreign[] = {
		"TEST_SCALE", "TEST_TIMEOUT", "BENCH_REPS", "BENCH_QUICK", "BENCH_THREADS",
		"BENCH_SECONDS", "BENCH_PEERS", "BENCH_OUT",
	};

	for (size_t i = 0; i < sizeof foreign / sizeof *foreign; i++)
		if (strlen(foreign[i]) == len && memcmp(foreign[i], name, len) == 0)
			return true;
	return false;
}

static const struct jp_option_desc *m_row(const char *name, size_t len)
{
	for (size_t i = 0; i < jp__option_count; i++)
		if (strlen(jp__option_table[i].name) == len &&
		    memcmp(jp__option_table[i].name, name, len) == 0)
			return &jp__option_table[i];
	return NULL;
}

/* Every row of a and b holds the same value. */
static void same_options(const struct jp_options *a, const struct jp_options *b,
			 const char *what)
{
	for (size_t i = 0; i < jp__option_count; i++) {
		const struct jp_option_desc *d = &jp__option_table[i];
		const char *fa = (const char *)a + d->offset;
		const char *fb = (const char *)b + d->offset;

		switch (d->kind) {
		case JP_OPT_BOOL:
			FZ_CHECK(*(const bool *)fa == *(const bool *)fb,
				 "%s: JPSYNC_%s is %d, not %d", what, d->name,
				 *(const bool *)fb, *(const bool *)fa);
			break;
		case JP_OPT_SIZE:
		case JP_OPT_SIZE_OFF:
			FZ_CHECK(*(const uint64_t *)fa == *(const uint64_t *)fb,
				 "%s: JPSYNC_%s is %llu, not %llu", what, d->name,
				 (unsigned long long)*(const uint64_t *)fb,
				 (unsigned long long)*(const uint64_t *)fa);
			break;
		case JP_OPT_STATS:
			FZ_CHECK(a->stats == b->stats && (a->stats != JP_STATS_FILE ||
				 strcmp(a->stats_path, b->stats_path) == 0),
				 "%s: JPSYNC_%s differs ('%s' %d, '%s' %d)", what, d->name,
				 b->stats_path, (int)b->stats, a->stats_path, (int)a->stats);
			break;
		case JP_OPT_SIGNAL:
		case JP_OPT_FORMAT:
			FZ_CHECK(*(const int *)fa == *(const int *)fb,
				 "%s: JPSYNC_%s is %d, not %d", what, d->name,
				 *(const int *)fb, *(const int *)fa);
			break;
		case JP_OPT_FILE:
			FZ_CHECK(strcmp(fa, fb) == 0, "%s: JPSYNC_%s is '%s', not '%s'",
				 what, d->name, fb, fa);
			break;
		}
	}
}

/* ---- the warning sink ----------------------------------------------------- */
static int sink = -1;
static char *sunk;
static size_t sunk_len, sunk_cap;

static void sink_reset(void)
{
	FZ_CHECK(ftruncate(sink, 0) == 0 && lseek(sink, 0, SEEK_SET) == 0,
		 "cannot empty the warning sink: %s", strerror(errno));
}

/* What was written to the sink since its reset, NUL-terminated, in sunk. */
static void sink_read(void)
{
	off_t end = lseek(sink, 0, SEEK_CUR);

	FZ_CHECK(end >= 0, "lseek: %s", strerror(errno));
	if ((size_t)end + 1 > sunk_cap) {
		sunk_cap = (size_t)end + 1;
		sunk = realloc(sunk, sunk_cap);
		FZ_CHECK(sunk != NULL, "out of memory");
	}
	sunk_len = 0;
	while (sunk_len < (size_t)end) {
		ssize_t got = pread(sink, sunk + sunk_len, (size_t)end - sunk_len,
				    (off_t)sunk_len);
		FZ_CHECK(got > 0, "pread: %s", got < 0 ? strerror(errno) : "short");
		sunk_len += (size_t)got;
	}
	sunk[sunk_len] = '\0';
}

/* The lines of text (len bytes): each ends with a newline and holds no
 * other control character; returns how many, their starts in line[]. */
static size_t split_lines(char *text, size_t len, char **line, size_t max,
			  const char *what)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (i == 0 || text[i - 1] == '\0') {
			FZ_CHECK(n < max, "%s: more than %zu lines", what, max);
			line[n++] = text + i;
		}
		FZ_CHECK(c != '\0', "%s: a NUL byte at %zu", what, i);
		FZ_CHECK(c >= 0x20 && c != 0x7f ? true : c == '\n',
			 "%s: control character 0x%02x in line %zu: '%.*s'", what, c, n,
			 (int)(text + i - line[n - 1]), line[n - 1]);
		if (c == '\n')
			text[i] = '\0';
	}
	FZ_CHECK(len == 0 || text[len - 1] == '\0', "%s: the last line has no newline", what);
	return n;
}

/* ---- the environment -------------------------------------------------------- */
#define MAX_LINES (2 * FZO_MAX_PIECES + 8)

/* Print o with the table's own formatter and parse that back: no warning,
 * the same options. */
static void round_trip(const struct jp_options *o, const char *what)
{
	char *line[MAX_LINES + 1], *env[MAX_LINES + 1];
	struct jp_options again;
	size_t n;
	int w;

	sink_reset();
	jp__options_print(o, sink);
	sink_read();
	n = split_lines(sunk, sunk_len, line, MAX_LINES, "jp__options_print");
	FZ_CHECK(n == jp__option_count, "jp__options_print: %zu lines for %zu rows",
		 n, jp__option_count);
	for (size_t i = 0; i < n; i++) {
		FZ_CHECK(strncmp(line[i], "jpsync: JPSYNC_", 15) == 0,
			 "jp__options_print: line '%s'", line[i]);
		env[i] = line[i] + 8;
	}
	env[n] = NULL;
	sink_reset();
	w = jp__options_parse(&again, env, sink);
	sink_read();
	FZ_CHECK(w == 0, "%s: printed options draw %d warnings: %s", what, w, sunk);
	same_options(o, &again, what);
}

static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ||
		    s[i] == '\\')
			return false;	/* shown escaped */
	return true;
}

static void check_env(char *const *env)
{
	struct jp_options o, m;
	char *line[MAX_LINES + 1];
	const char *bad[FZO_MAX_PIECES * 2 + 4];
	size_t nbad = 0, n;
	int w;

	jp__options_parse(&m, NULL, -1);	/* the defaults */
	for (char *const *e = env; *e != NULL; e++) {
		const char *eq, *name = *e + 7;
		const struct jp_option_desc *d;

		if (strncmp(*e, "JPSYNC_", 7) != 0 || (eq = strchr(*e, '=')) == NULL)
			continue;
		d = m_row(name, (size_t)(eq - name));
		if (d == NULL ? !m_foreign(name, (size_t)(eq - name)) :
		    !m_accept(&m, d, eq + 1))
			bad[nbad++] = *e;
	}

	sink_reset();
	w = jp__options_parse(&o, env, sink);
	sink_read();
	FZ_TRACE("%d warnings:\n%s", w, sunk);
	FZ_CHECK(w >= 0 && (size_t)w == nbad,
		 "%d warnings for %zu rejected entries (first '%s'): %s",
		 w, nbad, nbad > 0 ? bad[0] : "", sunk);
	n = split_lines(sunk, sunk_len, line, MAX_LINES, "the warnings");
	FZ_CHECK(n == nbad, "%zu warning lines for %zu rejected entries", n, nbad);
	for (size_t k = 0; k < n; k++) {
		size_t nl = (size_t)(strchr(bad[k], '=') - bad[k]);

		FZ_CHECK(strncmp(line[k], "jpsync: warning: ", 17) == 0,
			 "warning '%s'", line[k]);
		/* it names the variable (a short, printable name as it is) */
		if (nl < 48 && printable(bad[k], nl))
			FZ_CHECK(strncmp(line[k] + 17, bad[k], nl) == 0 &&
				 (line[k][17 + nl] == '=' || line[k][17 + nl] == ':'),
				 "warning '%s' for '%.*s'", line[k], (int)nl, bad[k]);
	}
	same_options(&m, &o, "the options parsed");
	round_trip(&o, "round trip");
}

/* ---- jpsync-run ---------------------------------------------------------------- */
static char cwd[PATH_MAX];

static void run_reset(void)
{
	for (size_t i = 0; i < jp__option_count; i++) {
		free(var_value[i]);
		var_value[i] = NULL;
	}
}

static void check_run(char **args, size_t nargs)
{
	char **argv = calloc(nargs + 3, sizeof *argv);
	char *out = NULL, *err = NULL, *line[MAX_LINES + 1], *env[MAX_LINES + 1];
	char *last[64] = { NULL };	/* per row: the value the options give */
	size_t outn = 0, errn = 0, n;
	bool scanned = true, reject = false;
	char *joined = NULL;
	struct jp_options m;

	FZ_CHECK(argv != NULL, "out of memory");
	argv[0] = "jpsync-run";
	argv[1] = "--print-env";
	memcpy(argv + 2, args, nargs * sizeof *argv);

	/* The model: the options up to PROGRAM, as long as each is a whole
	 * option name (an abbreviation ends the scan). */
	jp__options_parse(&m, NULL, -1);
	for (size_t k = 2; k < nargs + 2; k++) {
		const char *a = argv[k], *eq;
		const struct jp_option_desc *d = NULL;
		const char *value = NULL;
		size_t nl;

		if (strcmp(a, "--") == 0 || a[0] != '-' || a[1] == '\0')
			break;
		if (a[1] != '-') {
			scanned = false;
			break;
		}
		eq = strchr(a, '=');
		nl = eq != NULL ? (size_t)(eq - a - 2) : strlen(a + 2);
		for (size_t i = 0; i < jp__option_count; i++)
			if (strlen(jp__option_table[i].flag) == nl &&
			    memcmp(jp__option_table[i].flag, a + 2, nl) == 0)
				d = &jp__option_table[i];
		if (d == NULL || (d->kind == JP_OPT_BOOL && eq != NULL)) {
			scanned = false;	/* other options, errors */
			break;
		}
		if (d->kind == JP_OPT_BOOL)
			value = "1";
		else if (eq != NULL)
			value = eq + 1;
		else if (d->kind == JP_OPT_STATS)
			value = "1";
		else if (k + 1 < nargs + 2)
			value = argv[++k];
		else {
			scanned = false;	/* missing argument */
			break;
		}
		joined = malloc(strlen(cwd) + strlen(value) + 2);
		FZ_CHECK(joined != NULL, "out of memory");
		if (((d->kind == JP_OPT_STATS && eq != NULL && m_stats_file(value)) ||
		     (d->kind == JP_OPT_FILE && value[0] != '\0')) &&
		    value[0] != '/')	/* a relative FILE: from the current directory */
			sprintf(joined, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", value);
		else
			strcpy(joined, value);
		if (!m_accept(&m, d, joined)) {
			free(joined);
			reject = true;
			break;
		}
		free(last[d - jp__option_table]);
		last[d - jp__option_table] = joined;
	}

	run_out = open_memstream(&out, &outn);
	run_err = open_memstream(&err, &errn);
	FZ_CHECK(run_out != NULL && run_err != NULL, "open_memstream: %s", strerror(errno));
	run_main((int)nargs + 2, argv);
	fclose(run_out);
	fclose(run_err);
	run_reset();
	FZ_TRACE("jpsync-run: status %d, out:\n%s\nerr:\n%s", run_status, out, err);

	if (reject)
		FZ_CHECK(run_status == 2, "jpsync-run: a value the model rejects, "
			 "status %d: %s", run_status, out);
	if (run_status == 2) {
		n = split_lines(err, errn, line, MAX_LINES, "jpsync-run's usage error");
		FZ_CHECK(n == 2 && strncmp(line[0], "jpsync-run: ", 12) == 0 &&
			 strcmp(line[1], "Try 'jpsync-run --help' for more information.") == 0,
			 "jpsync-run: a usage error of %zu lines: '%s'...", n, n ? line[0] : "");
		FZ_CHECK(outn == 0, "jpsync-run: a usage error and output '%s'", out);
	} else {
		FZ_CHECK(run_status == 0, "jpsync-run: exit status %d: %s", run_status, err);
		FZ_CHECK(errn == 0, "jpsync-run: status 0, and on stderr '%s'", err);
	}
	if (run_status == 0 && strncmp(out, "LD_PRELOAD=", 11) == 0) {
		/* --print-env: what it prints is a valid environment, the one the
		 * options asked for */
		size_t ne = 0;
		struct jp_options o;
		int w;

		n = split_lines(out, outn, line, MAX_LINES, "jpsync-run --print-env");
		for (size_t k = 1; k < n; k++) {
			char *eq = strchr(line[k], '=');
			const struct jp_option_desc *d;

			FZ_CHECK(strncmp(line[k], "JPSYNC_", 7) == 0 && eq != NULL &&
				 (d = m_row(line[k] + 7, (size_t)(eq - line[k] - 7))) != NULL,
				 "jpsync-run --print-env: line '%s'", line[k]);
			if (scanned && last[d - jp__option_table] != NULL)
				FZ_CHECK(strcmp(eq + 1, last[d - jp__option_table]) == 0,
					 "jpsync-run --print-env: '%s', the options said '%s'",
					 line[k], last[d - jp__option_table]);
			env[ne++] = line[k];
		}
		env[ne] = NULL;
		if (scanned) {
			size_t asked = 0;

			for (size_t i = 0; i < jp__option_count; i++)
				asked += last[i] != NULL;
			FZ_CHECK(asked == ne, "jpsync-run --print-env: %zu variables for "
				 "%zu options", ne, asked);
		}
		sink_reset();
		w = jp__options_parse(&o, env, sink);
		sink_read();
		FZ_CHECK(w == 0, "jpsync-run --print-env: %d warnings: %s", w, sunk);
		if (scanned)
			same_options(&m, &o, "jpsync-run --print-env");
		round_trip(&o, "jpsync-run --print-env, round trip");
	}
	for (size_t i = 0; i < 64; i++)
		free(last[i]);
	free(out);
	free(err);
	free(argv);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_target = "options";
	sink = memfd_create("fuzz-options-warnings", MFD_CLOEXEC);
	if (sink < 0) {
		printf("replay: options: skipped: memfd_create: %s\n", strerror(errno));
		return 77;
	}
	if (getcwd(cwd, sizeof cwd) == NULL) {
		printf("replay: options: skipped: getcwd: %s\n", strerror(errno));
		return 77;
	}
	return fz_single_thread();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fzo_input in;

	if (fzo_decode(&in, data, size) != 0)
		return 0;
	FZ_TRACE("mode %d, %zu strings", in.mode, in.n);
	if (in.mode == FZO_ENV || in.mode == FZO_VALUES)
		check_env(in.s);
	else
		check_run(in.s, in.n);
	fzo_free(&in);
	return 0;
}
