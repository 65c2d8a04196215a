/*
 * jpsync-run - run a program with every allocation on jp_alloc.
 *
 *   jpsync-run [OPTIONS] [--] PROGRAM [ARGS...]
 *
 * Puts the preload module in front of LD_PRELOAD, sets the JPSYNC_* tuning
 * variables its options name, and execs PROGRAM (searched in PATH).  Its
 * options are the rows of the library's option table (lib/base/options.c, linked
 * in statically): names, arguments, ranges, defaults and help come from
 * there, and the values are checked by the library's own parser, so that a
 * typo is a usage error now rather than a warning in the program's output
 * later.
 *
 * This program is deliberately not linked to libjpsync.so.1: it is a plain
 * executable in the build tree too (no libtool wrapper), so that
 * /proc/self/exe tells where it runs from.  The module is looked for, in
 * order:
 *   1. next to the executable, in .libs/: the uninstalled build tree, where
 *      jpsync-run is shim/jpsync-run and the module shim/.libs/;
 *   2. under the same prefix as the executable: when it runs from
 *      <root>BINDIR, <root>PKGLIBDIR (a DESTDIR staging tree, or a tree
 *      moved as a whole);
 *   3. PKGLIBDIR, the configured install location.
 *
 * Exit status: PROGRAM's own once it runs; 2 for a usage error; 125 when the
 * module cannot be found; 126 when PROGRAM cannot be executed, 127 when it
 * is not found (as env(1)).
 */
#include "config.h"

#include "base/options.h"
#include "base/os.h"
#include "run-elf.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PKGLIBDIR
# error "PKGLIBDIR must be defined (the module's install directory)"
#endif
#ifndef BINDIR
# error "BINDIR must be defined (where jpsync-run is installed)"
#endif

#define MODULE_NAME "libjpsync-preload.so"
#define EXIT_USAGE 2
#define EXIT_INTERNAL 125
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127

static const char me[] = "jpsync-run";

/*
 * The options: one per row of the library's option table (lib/base/options.c),
 * which gives their names, arguments, ranges, defaults and help, then
 * jpsync-run's own.  getopt_long returns OPT_BASE + the row for a row.
 */
#define OPT_BASE 256
enum { OPT_PRINT_ENV = OPT_BASE + 64 };
static char *var_value[64];	/* per row: the value to set, or NULL */
static struct option long_options[64 + 4];

static void make_long_options(void)
{
	size_t n = 0;

	for (size_t i = 0; i < jp__option_count; i++) {
		const struct jp_option_desc *d = &jp__option_table[i];

		long_options[n++] = (struct option){
			d->flag,
			d->kind == JP_OPT_BOOL ? no_argument :
			d->kind == JP_OPT_STATS ? optional_argument : required_argument,
			NULL, OPT_BASE + (int)i };
	}
	long_options[n++] = (struct option){ "print-env", no_argument, NULL, OPT_PRINT_ENV };
	long_options[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	long_options[n++] = (struct option){ "version", no_argument, NULL, 'V' };
	long_options[n] = (struct option){ NULL, 0, NULL, 0 };
}

static const char *option_name(int val)
{
	for (const struct option *o = long_options; o->name != NULL; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

/*
 * One option of the help: "  --name=ARG", the text from column 24 (on the
 * next line if the name is longer), wrapped at 79 columns with the
 * continuation lines indented by 26.
 */
static void help_item(FILE *f, const char *name, const char *text)
{
	int col = fprintf(f, "  %s", name);
	int indent = 24;

	while (*text != '\0') {
		size_t w = strcspn(text, " ");

		if (col >= indent && col + 1 + (int)w > 79) {
			fputc('\n', f);
			col = 0;
			indent = 26;
		}
		if (col < indent) {
			col += fprintf(f, "%*s", indent - col, "");
		} else {
			fputc(' ', f);
			col++;
		}
		col += fprintf(f, "%.*s", (int)w, text);
		text += w;
		text += strspn(text, " ");
	}
	fputc('\n', f);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... [--] PROGRAM [ARGUMENT]...\n"
"Run PROGRAM with every allocation (malloc, free, operator new, ...) served\n"
"by jp_alloc, through LD_PRELOAD.  PROGRAM is searched for in PATH.\n"
"\n", me);
	for (size_t i = 0; i < jp__option_count; i++) {
		const struct jp_option_desc *d = &jp__option_table[i];
		char name[64], text[512], range[128];

		if (d->kind == JP_OPT_BOOL)
			snprintf(name, sizeof name, "--%s", d->flag);
		else if (d->kind == JP_OPT_STATS)
			snprintf(name, sizeof name, "--%s[=%s]", d->flag, d->arg);
		else
			snprintf(name, sizeof name, "--%s=%s", d->flag, d->arg);
		jp__option_range(d, range, sizeof range);
		snprintf(text, sizeof text, "%s (%s%sJPSYNC_%s%s)", d->help, range,
			 range[0] != '\0' ? "; " : "", d->name,
			 d->kind == JP_OPT_BOOL ? "=1" : "");
		help_item(f, name, text);
	}
	help_item(f, "--print-env", "print the variables that would be set, as "
		  "NAME=value lines, and exit without running anything");
	help_item(f, "-h, --help", "display this help and exit");
	help_item(f, "-V, --version", "output version information and exit");
	fprintf(f,
"\n"
"SIZE and N take an optional K, M or G suffix (powers of 1024).\n"
"Exit status: that of PROGRAM; 2 for a usage error; 125 if the preload module\n"
"is missing; 126 if PROGRAM cannot be run; 127 if it is not found.\n"
"See jpsync-run(1) and jpsync(7).\n");
}

/* "jpsync-run: " and the message on one line of standard error, a control
 * character of it (from an argument) shown as \xHH, as the library's
 * warnings show them. */
static void vmessage(const char *fmt, va_list ap)
{
	char *one = NULL, *shown = NULL;
	size_t len = 0;
	va_list aq;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n >= 0)
		one = malloc((size_t)n + 1);
	if (one != NULL)
		shown = malloc(4 * (size_t)n + 1);
	if (shown == NULL) {
		fprintf(stderr, "%s: out of memory\n", me);
		free(one);
		return;
	}
	vsnprintf(one, (size_t)n + 1, fmt, ap);
	shown[0] = '\0';
	jp__str_add_shown(shown, 4 * (size_t)n + 1, &len, one, (size_t)n, (size_t)n);
	fprintf(stderr, "%s: %s\n", me, shown);
	free(one);
	free(shown);
}

/* A usage error: one line naming the problem, one pointing at --help. */
__attribute__((format(printf, 1, 2), noreturn))
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", me);
	exit(EXIT_USAGE);
}

__attribute__((format(printf, 2, 3), noreturn))
static void die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap);
	va_end(ap);
	exit(status);
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (d == NULL)
		die(EXIT_INTERNAL, "out of memory");
	return d;
}

static char *xconcat(const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
	char *d = malloc(la + lb + lc + 1);

	if (d == NULL)
		die(EXIT_INTERNAL, "out of memory");
	memcpy(d, a, la);
	memcpy(d + la, b, lb);
	memcpy(d + la + lb, c, lc + 1);
	return d;
}

/*
 * Check value for row i with the library's own parser (the same table,
 * ranges and spellings the program will see), so the two can never
 * disagree, and keep it to set.
 */
static void set_option(size_t i, const char *value)
{
	const struct jp_option_desc *d = &jp__option_table[i];
	struct jp_options o;
	char why[160];
	const char *bad;

	jp__options_parse(&o, NULL, -1);
	bad = jp__option_value(&o, d, value, why, sizeof why);
	if (bad != NULL)
		usage_error("invalid value '%s' for --%s: %s", value, d->flag, bad);
	free(var_value[i]);
	var_value[i] = xstrdup(value);
}

/* Everything main allocated (so that a leak checker sees no leak when
 * jpsync-run returns instead of executing the program). */
static void release(char *module, char *preload)
{
	for (size_t i = 0; i < jp__option_count; i++) {
		free(var_value[i]);
		var_value[i] = NULL;
	}
	free(module);
	free(preload);
}

/* --heap-profile=FILE, and --stats=FILE: checked as it is, then a
 * relative FILE is named from here (the program may change directory
 * before it exits). */
static void set_file(size_t i, const char *arg)
{
	/* static: still reachable for a leak checker when set_option's usage
	 * error exits (tests/fuzz/fuzz-options.c runs main() again and again) */
	static char *value;
	char cwd[PATH_MAX];

	set_option(i, arg);	/* a usage error for what the library refuses */
	if (arg[0] == '/' || arg[0] == '\0')	/* "": none */
		return;
	if (getcwd(cwd, sizeof cwd) == NULL)
		die(EXIT_INTERNAL, "cannot get the current directory: %s", strerror(errno));
	free(value);
	value = xconcat(cwd, strcmp(cwd, "/") == 0 ? "" : "/", arg);
	set_option(i, value);
	free(value);
	value = NULL;
}

/*
 * --stats[=VALUE]: what JPSYNC_STATS=VALUE means, checked by the library's
 * parser as it is: 1/yes/on/true and 0/no/off/false switch the table on and
 * off, a number other than those is refused, anything else is a file, as
 * set_file takes it; a file named like a boolean or a number is written as
 * ./1, which stays a file name once made absolute.
 */
static void set_stats(size_t i, const char *arg)
{
	bool b;

	if (arg == NULL || jp__parse_bool(arg, &b) == 0)
		set_option(i, arg == NULL ? "1" : arg);
	else
		set_file(i, arg);
}

static bool is_file(const char *path)
{
	return access(path, R_OK) == 0;
}

/* dir with its last component removed (in place); "/" stays "/". */
static void strip_last(char *dir)
{
	char *slash = strrchr(dir, '/');

	if (slash == NULL)
		dir[0] = '\0';
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
}

/*
 * --stats=FILE: make sure the program's processes can write it, before they
 * run, so that a file that cannot be written is one warning here rather
 * than one per process at exit; then the program runs without statistics.
 * Without %p every process appends its table to FILE: empty it now.  With
 * %p each writes its own: its directory must be writable.
 */
static void stats_file_check(size_t i)
{
	const char *v = var_value[i];
	bool per_process = false;
	int err = 0;

	if (v == NULL || v[0] != '/')
		return;		/* not a file: standard error, or off */
	for (const char *p = v; *p != '\0'; p++)
		if (p[0] == '%' && (p[1] == 'p' || p[1] == '%')) {
			per_process |= p[1] == 'p';
			p++;
		}
	if (per_process) {
		char *dir = xstrdup(v);

		strip_last(dir);
		if (access(dir[0] != '\0' ? dir : "/", W_OK | X_OK) != 0)
			err = errno;
		free(dir);
	} else {
		int fd = open(v, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0)
			err = errno;
		else
			close(fd);
	}
	if (err != 0) {
		fprintf(stderr, "%s: warning: cannot write the statistics to %s: %s; "
			"running without --stats\n", me, v, strerror(err));
		free(var_value[i]);
		var_value[i] = NULL;
	}
}

/*
 * Where the module is: a malloc'ed path, or NULL with the places tried in
 * tried[].  The uninstalled module needs nothing more: libtool links it with
 * a run path to the uninstalled libjpsync.so.1 (lib/.libs), and relinks it
 * without one when it is installed.
 */
static char *find_module(char *tried, size_t tried_cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *path;

	tried[0] = '\0';
	if (n > 0) {
		exe[n] = '\0';
		strip_last(exe);	/* the directory jpsync-run runs from */

		path = xconcat(exe, "/.libs/", MODULE_NAME);
		if (is_file(path))
			return path;
		snprintf(tried + strlen(tried), tried_cap - strlen(tried), "%s", path);
		free(path);

		/* <root>BINDIR -> <root>PKGLIBDIR */
		size_t dl = strlen(exe), bl = strlen(BINDIR);
		if (dl > bl && strcmp(exe + dl - bl, BINDIR) == 0) {
			exe[dl - bl] = '\0';
			path = xconcat(exe, PKGLIBDIR "/", MODULE_NAME);
			if (is_file(path))
				return path;
			snprintf(tried + strlen(tried), tried_cap - strlen(tried), ", %s", path);
			free(path);
		}
	}
	path = xstrdup(PKGLIBDIR "/" MODULE_NAME);
	if (is_file(path))
		return path;
	snprintf(tried + strlen(tried), tried_cap - strlen(tried), "%s%s",
		 tried[0] != '\0' ? ", " : "", path);
	free(path);
	return NULL;
}

/* LD_PRELOAD with the module first; an existing first entry equal to the
 * module (jpsync-run under jpsync-run) is not repeated. */
static char *preload_value(const char *module)
{
	const char *old = getenv("LD_PRELOAD");
	size_t ml = strlen(module);

	if (old == NULL || old[0] == '\0')
		return xstrdup(module);
	if (strncmp(old, module, ml) == 0 &&
	    (old[ml] == '\0' || old[ml] == ':' || old[ml] == ' '))
		return xstrdup(old);
	return xconcat(module, ":", old);
}

static void print_env(const char *preload)
{
	printf("LD_PRELOAD=%s\n", preload);
	for (size_t i = 0; i < jp__option_count; i++)
		if (var_value[i] != NULL)
			printf("JPSYNC_%s=%s\n", jp__option_table[i].name, var_value[i]);
	if (fflush(stdout) != 0 || ferror(stdout))
		die(1, "write error: %s", strerror(errno));
}

/* ---- --stats=FILE: run PROGRAM as a child, then sum up its processes ---- */

/*
 * With --stats=FILE (one file, no %p) jpsync-run does not exec PROGRAM: it
 * forks, runs PROGRAM in the child, waits, and appends to FILE one summary
 * of the tables PROGRAM's processes wrote there (one line per process and
 * a total, or one JSON object of "type": "summary").  Meanwhile it passes
 * on the signals a supervisor sends it (below), and at the end it exits
 * with PROGRAM's status, or kills itself with PROGRAM's signal, so that a
 * shell sees what it would have seen without jpsync-run.
 */
static volatile sig_atomic_t child_pid;

/* The signals passed on to PROGRAM; the statistics signal is added. */
static int forwarded[8] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, 0 };

/*
 * A signal sent to jpsync-run (kill PID) goes on to PROGRAM.  One the
 * terminal sends (^C, ^\, a hangup: si_code SI_KERNEL) went to the whole
 * foreground process group, PROGRAM included, and is not sent again: it
 * would arrive twice (and print two tables for --stats-signal).
 */
static void forward(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	(void)uc;
	if (child_pid > 0 && (si == NULL || si->si_code != SI_KERNEL))
		kill((pid_t)child_pid, sig);
	errno = saved;
}

struct proc_sum {
	long pid;
	char *program;		/* as the table shows it */
	bool program_json;	/* escaped for JSON already */
	unsigned long long allocs, peak_in_use, peak_rss, elapsed_ns;
};

static unsigned long long num_after(const char *s, const char *key, const char *end)
{
	const char *p = strstr(s, key);

	if (p == NULL || (end != NULL && p >= end))
		return 0;
	p += strlen(key);
	while (*p == ' ')
		p++;
	return strtoull(p, NULL, 10);
}

/* The table of pid in sums[] (a new entry if none): a process that printed
 * several (--stats-signal) is summed up by its last. */
static struct proc_sum *sum_of(struct proc_sum **sums, size_t *n, size_t *cap, long pid)
{
	for (size_t i = 0; i < *n; i++)
		if ((*sums)[i].pid == pid) {
			free((*sums)[i].program);
			(*sums)[i].program = NULL;
			return &(*sums)[i];
		}
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*sums = realloc(*sums, *cap * sizeof **sums);
		if (*sums == NULL)
			die(EXIT_INTERNAL, "out of memory");
	}
	memset(&(*sums)[*n], 0, sizeof **sums);
	(*sums)[*n].pid = pid;
	return &(*sums)[(*n)++];
}

static char *xstrndup(const char *s, size_t n)
{
	char *d = strndup(s, n);

	if (d == NULL)
		die(EXIT_INTERNAL, "out of memory");
	return d;
}

/* Read the tables in text (the lines of jp_alloc_stats(3)'s table) and in
 * JSON (objects of "type": "stats") from text, in place. */
static size_t read_tables(char *text, struct proc_sum **sums)
{
	static const char head[] = "jpsync allocator statistics (pid ";
	static const char json[] = "{\"schema\":1,\"type\":\"stats\",";
	struct proc_sum *cur = NULL;
	size_t n = 0, cap = 0;

	*sums = NULL;
	for (char *line = text, *next; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		if (strncmp(line, head, sizeof head - 1) == 0) {
			cur = NULL;
			if (strstr(line, "): not now") == NULL)
				cur = sum_of(sums, &n, &cap, strtol(line + sizeof head - 1, NULL, 10));
		} else if (strncmp(line, json, sizeof json - 1) == 0) {
			const char *end = strstr(line, ",\"classes\":");
			const char *name = strstr(line, "\"program\":\"");
			const char *q;
			struct proc_sum *p;

			cur = NULL;
			if (end == NULL || name == NULL)
				continue;
			p = sum_of(sums, &n, &cap, (long)num_after(line, "\"pid\":", end));
			name += strlen("\"program\":\"");
			for (q = name; *q != '\0' && *q != '"'; q++)
				if (*q == '\\' && q[1] != '\0')
					q++;
			p->program = xstrndup(name, (size_t)(q - name));
			p->program_json = true;
			p->elapsed_ns = num_after(line, "\"elapsed_ns\":", end);
			p->peak_rss = num_after(line, "\"peak_rss\":", end);
			p->peak_in_use = num_after(line, "\"peak_in_use\":", end);
			p->allocs = num_after(line, "\"allocations\":", end);
		} else if (cur != NULL && strncmp(line, "  ", 2) == 0) {
			if (strncmp(line, "  program         ", 18) == 0) {
				const char *comma = NULL;

				for (const char *c = line + 18; (c = strstr(c, ", pid ")) != NULL; c++)
					comma = c;
				if (comma != NULL)
					cur->program = xstrndup(line + 18, (size_t)(comma - line - 18));
			} else if (strncmp(line, "  elapsed ", 10) == 0) {
				char *dot;
				unsigned long long sec = strtoull(line + 10, &dot, 10);

				cur->elapsed_ns = sec * 1000000000ULL +
					(*dot == '.' ? strtoull(dot + 1, NULL, 10) * 1000000ULL : 0);
			} else if (strncmp(line, "  peak RSS ", 11) == 0)
				cur->peak_rss = num_after(line, "  peak RSS", NULL);
			else if (strncmp(line, "  in use, peak ", 15) == 0)
				cur->peak_in_use = num_after(line, "  in use, peak", NULL);
			else if (strncmp(line, "  allocations ", 14) == 0)
				cur->allocs = num_after(line, "  allocations", NULL);
		} else
			cur = NULL;
	}
	return n;
}

/* A program name in a JSON string: as it is when it came from JSON, else
 * escaped (it came from a text table). */
static void put_name_json(FILE *f, const struct proc_sum *p)
{
	const char *name = p->program != NULL ? p->program : "?";
	size_t cap = 6 * strlen(name) + 8, len = 0;
	char *esc;

	if (p->program_json) {
		fputs(name, f);
		return;
	}
	esc = malloc(cap);
	if (esc == NULL)
		die(EXIT_INTERNAL, "out of memory");
	esc[0] = '\0';
	jp__str_add_json(esc, cap, &len, name, strlen(name), strlen(name));
	fputs(esc, f);
	free(esc);
}

/* Append the summary of the tables in path, in one write. */
static void append_summary(const char *path, bool json, unsigned long long wall_ns)
{
	struct proc_sum *sums, total = { 0 };
	char *text = NULL, *out = NULL;
	size_t n, textlen = 0, outlen = 0;
	FILE *in = fopen(path, "re"), *f;
	int fd;

	if (in == NULL) {
		fprintf(stderr, "%s: warning: cannot read the statistics in %s: %s; "
			"no summary\n", me, path, strerror(errno));
		return;
	}
	f = open_memstream(&text, &textlen);
	if (f == NULL)
		die(EXIT_INTERNAL, "out of memory");
	for (int c; (c = getc(in)) != EOF;)
		putc(c, f);
	fclose(in);
	fclose(f);
	n = read_tables(text, &sums);

	f = open_memstream(&out, &outlen);
	if (f == NULL)
		die(EXIT_INTERNAL, "out of memory");
	if (json)
		fprintf(f, "{\"schema\":1,\"type\":\"summary\",\"processes\":[");
	for (size_t i = 0; i < n; i++) {
		const struct proc_sum *p = &sums[i];

		total.allocs += p->allocs;
		total.peak_in_use += p->peak_in_use;
		total.peak_rss += p->peak_rss;
		if (json) {
			fprintf(f, "%s{\"pid\":%ld,\"program\":\"", i ? "," : "", p->pid);
			put_name_json(f, p);
			fprintf(f, "\",\"allocations\":%llu,\"peak_in_use\":%llu,"
				"\"peak_rss\":%llu,\"elapsed_ns\":%llu}", p->allocs,
				p->peak_in_use, p->peak_rss, p->elapsed_ns);
		} else
			fprintf(f, "jpsync summary: pid %ld: %llu allocations, peak in use "
				"%llu bytes, peak RSS %llu bytes, elapsed %llu.%03llu s, "
				"program %s\n", p->pid, p->allocs, p->peak_in_use,
				p->peak_rss, p->elapsed_ns / 1000000000ULL,
				p->elapsed_ns / 1000000ULL % 1000ULL,
				p->program != NULL ? p->program : "?");
	}
	if (json)
		fprintf(f, "],\"total\":{\"processes\":%zu,\"allocations\":%llu,"
			"\"peak_in_use\":%llu,\"peak_rss\":%llu,\"elapsed_ns\":%llu}}\n",
			n, total.allocs, total.peak_in_use, total.peak_rss, wall_ns);
	else
		fprintf(f, "jpsync summary: total of %zu process%s: %llu allocations, "
			"peak in use %llu bytes, peak RSS %llu bytes (sums), "
			"elapsed %llu.%03llu s\n", n, n == 1 ? "" : "es", total.allocs,
			total.peak_in_use, total.peak_rss, wall_ns / 1000000000ULL,
			wall_ns / 1000000ULL % 1000ULL);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		free(sums[i].program);
	free(sums);
	free(text);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0 || jp__os_write(fd, out, outlen) != 0)
		fprintf(stderr, "%s: warning: cannot append the summary to %s: %s\n",
			me, path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(out);
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/*
 * Run argv in a child, pass signals on, append the summary to path, and
 * end as the child ended.  Returns only an exit status for main.
 */
static int run_child(char **argv, const char *path, bool json, int stats_sig)
{
	unsigned long long t0 = now_ns();
	sigset_t all, old;
	int pipefd[2], err = 0, status = 0;
	ssize_t got;
	pid_t pid;

	if (stats_sig != 0) {
		size_t k = 0;

		while (forwarded[k] != 0 && forwarded[k] != stats_sig)
			k++;
		if (forwarded[k] == 0 && k + 1 < sizeof forwarded / sizeof *forwarded)
			forwarded[k] = stats_sig;
	}
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		die(EXIT_INTERNAL, "pipe: %s", strerror(errno));
	/* No signal between the fork and the handlers: the child starts with
	 * the dispositions jpsync-run was given. */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid < 0)
		die(EXIT_INTERNAL, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(pipefd[0]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[0], argv);
		err = errno;
		if (write(pipefd[1], &err, sizeof err) < 0)
			err = errno;
		_exit(err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
	}
	close(pipefd[1]);
	child_pid = pid;
	for (size_t k = 0; forwarded[k] != 0; k++) {
		struct sigaction sa, was;

		/* a signal jpsync-run was told to ignore stays ignored */
		if (sigaction(forwarded[k], NULL, &was) == 0 && was.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = forward;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(forwarded[k], &sa, NULL);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	while ((got = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR)
		;
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die(EXIT_INTERNAL, "waitpid: %s", strerror(errno));
	child_pid = 0;
	if (got == (ssize_t)sizeof err) {
		fprintf(stderr, "%s: '%s': %s\n", me, argv[0], strerror(err));
		return err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
	}
	append_summary(path, json, now_ns() - t0);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit none = { 0, 0 };
		sigset_t one;

		/* The same death: no handler, no second core file. */
		signal(sig, SIG_DFL);
		setrlimit(RLIMIT_CORE, &none);
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		kill(getpid(), sig);
		return 128 + sig;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_INTERNAL;
}

/* The file the summary goes to: --stats=FILE without %p; else NULL. */
static const char *summary_file(void)
{
	for (size_t i = 0; i < jp__option_count; i++) {
		const char *v = var_value[i];

		if (jp__option_table[i].kind != JP_OPT_STATS || v == NULL || v[0] != '/')
			continue;
		for (const char *p = v; *p != '\0'; p++)
			if (p[0] == '%' && (p[1] == 'p' || p[1] == '%'))
				return NULL;
		return v;
	}
	return NULL;
}

/* Whether the tables are JSON: --stats-format, else the variable. */
static bool summary_json(void)
{
	const char *v = getenv("JPSYNC_STATS_FORMAT");

	for (size_t i = 0; i < jp__option_count; i++)
		if (jp__option_table[i].kind == JP_OPT_FORMAT && var_value[i] != NULL)
			v = var_value[i];
	return v != NULL && strcasecmp(v, "json") == 0;
}

int main(int argc, char **argv)
{
	bool print_only = false;
	char tried[3 * PATH_MAX + 16];
	int c;

	if (jp__option_count > 64)
		die(EXIT_INTERNAL, "more than 64 options in the table");
	make_long_options();
	opterr = 0;	/* our own messages, named jpsync-run whatever argv[0] is */
	/* "+": stop at the first non-option, which is PROGRAM; ':' reports a
	 * missing argument apart from an unknown option; -h and -V are
	 * --help and --version, GNU's short forms. */
	while ((c = getopt_long(argc, argv, "+:hV", long_options, NULL)) != -1) {
		if (c >= OPT_BASE && c < OPT_BASE + (int)jp__option_count) {
			size_t i = (size_t)(c - OPT_BASE);

			if (jp__option_table[i].kind == JP_OPT_STATS)
				set_stats(i, optarg);
			else if (jp__option_table[i].kind == JP_OPT_FILE)
				set_file(i, optarg);
			else
				set_option(i, jp__option_table[i].kind == JP_OPT_BOOL ?
					   "1" : optarg);
			continue;
		}
		switch (c) {
		case OPT_PRINT_ENV:
			print_only = true;
			break;
		case 'h':
			usage(stdout);
			if (fflush(stdout) != 0 || ferror(stdout))
				die(1, "write error: %s", strerror(errno));
			return 0;
		case 'V':
			printf("%s (%s) %s\n", me, PACKAGE_NAME, PACKAGE_VERSION);
			if (fflush(stdout) != 0 || ferror(stdout))
				die(1, "write error: %s", strerror(errno));
			return 0;
		case ':':
			usage_error("option '%s' requires an argument", argv[optind - 1]);
		default:
			/* '?': an unknown option, an ambiguous abbreviation, or an
			 * argument given to an option that takes none (a long
			 * one: --help=x sets optopt to 'h', as -h would). */
			if (optopt != 0 && strncmp(argv[optind - 1], "--", 2) == 0)
				usage_error("option '--%s' takes no argument",
					    option_name(optopt));
			if (optopt != 0 && optopt < 256)
				usage_error("invalid option -- '%c'", optopt);
			usage_error("unrecognized option '%s'", argv[optind - 1]);
		}
	}
	if (!print_only && optind >= argc)
		usage_error("missing PROGRAM to run");

	/* static: still reachable for a leak checker when die() exits */
	static char *module, *preload;

	module = find_module(tried, sizeof tried);
	if (module == NULL)
		die(EXIT_INTERNAL, "cannot find the preload module %s (looked for %s)",
		    MODULE_NAME, tried);
	/* ld.so splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(module, ": \t") != NULL)
		die(EXIT_INTERNAL, "the module's path '%s' contains a space or a colon, "
		    "which LD_PRELOAD cannot carry", module);
	preload = preload_value(module);

	if (print_only) {
		print_env(preload);
		release(module, preload);
		return 0;
	}

	for (size_t i = 0; i < jp__option_count; i++)
		if (jp__option_table[i].kind == JP_OPT_STATS)
			stats_file_check(i);
	if (setenv("LD_PRELOAD", preload, 1) != 0)
		die(EXIT_INTERNAL, "cannot set LD_PRELOAD: %s", strerror(errno));
	for (size_t i = 0; i < jp__option_count; i++) {
		char name[64];

		if (var_value[i] == NULL)
			continue;
		snprintf(name, sizeof name, "JPSYNC_%s", jp__option_table[i].name);
		if (setenv(name, var_value[i], 1) != 0)
			die(EXIT_INTERNAL, "cannot set %s: %s", name, strerror(errno));
	}

	/* Run anyway: the program works, without what was asked for. */
	if (run_elf_static(argv[optind]))
		fprintf(stderr, "%s: warning: '%s' is statically linked: LD_PRELOAD cannot "
			"give it jp_alloc, and the JPSYNC_ settings do nothing in it\n",
			me, argv[optind]);
	const char *sum_path = summary_file();
	if (sum_path != NULL) {
		struct jp_options o;
		int rc;

		jp__options_parse(&o, environ, -1);
		rc = run_child(&argv[optind], sum_path, summary_json(), o.stats_signal);
		release(module, preload);
		return rc;
	}
	execvp(argv[optind], &argv[optind]);
	int err = errno;
	fprintf(stderr, "%s: '%s': %s\n", me, argv[optind], strerror(err));
	release(module, preload);
	return err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}
