/*
 * jpsync-run - run a program with every allocation on jp_alloc.
 *
 *   jpsync-run [OPTIONS] [--] PROGRAM [ARGS...]
 *
 * Puts the preload module in front of LD_PRELOAD, sets the JPSYNC_* tuning
 * variables its options name, and execs PROGRAM (searched in PATH).  The
 * values are checked here with the library's own parser (lib/options.c is
 * linked in statically), so that a typo is a usage error now rather than a
 * warning in the program's output later.
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

#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The variables to set, in the order they are printed. */
enum var { V_CACHE, V_CACHE_BYTES, V_MAG, V_MADVISE, V_CHECK, V_STATS, V_VERBOSE,
	   V_LOCKDEP, V_COUNT };
static const char *const var_name[V_COUNT] = {
	"JPSYNC_CACHE_N", "JPSYNC_CACHE_BYTES", "JPSYNC_MAG_SIZE",
	"JPSYNC_MADVISE_MIN", "JPSYNC_CHECK", "JPSYNC_STATS", "JPSYNC_VERBOSE",
	"JPSYNC_LOCKDEP",
};
static char *var_value[V_COUNT];

enum { OPT_CACHE = 256, OPT_CACHE_BYTES, OPT_MAG, OPT_MADVISE, OPT_CHECK, OPT_STATS, OPT_VERBOSE,
       OPT_LOCKDEP, OPT_PRINT_ENV, OPT_HELP, OPT_VERSION };

static const struct option long_options[] = {
	{ "cache", required_argument, NULL, OPT_CACHE },
	{ "cache-bytes", required_argument, NULL, OPT_CACHE_BYTES },
	{ "magazine", required_argument, NULL, OPT_MAG },
	{ "madvise-min", required_argument, NULL, OPT_MADVISE },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "stats", optional_argument, NULL, OPT_STATS },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "lockdep", no_argument, NULL, OPT_LOCKDEP },
	{ "print-env", no_argument, NULL, OPT_PRINT_ENV },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static const char *option_name(int val)
{
	for (const struct option *o = long_options; o->name != NULL; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... [--] PROGRAM [ARGUMENT]...\n"
"Run PROGRAM with every allocation (malloc, free, operator new, ...) served\n"
"by jp_alloc, through LD_PRELOAD.  PROGRAM is searched for in PATH.\n"
"\n"
"  --cache=N             the most blocks a thread's cache may grow to per size\n"
"                          class, 1 to 4096 (JPSYNC_CACHE_N; default 4096)\n"
"  --cache-bytes=SIZE    how much all threads' caches together may grow above\n"
"                          their starting size, 0 to 1024G; 0 keeps them at\n"
"                          their start (JPSYNC_CACHE_BYTES; default 4M)\n"
"  --magazine=N          blocks per refill of a thread's cache, 1 to 1024\n"
"                          (JPSYNC_MAG_SIZE; default 16)\n"
"  --madvise-min=SIZE    smallest free block given back to the OS with\n"
"                          madvise, e.g. 4096, 64K, or off\n"
"                          (JPSYNC_MADVISE_MIN; default 4096)\n"
"  --check               check every free for double frees, foreign pointers\n"
"                          and writes into freed blocks (JPSYNC_CHECK=1)\n"
"  --stats[=FILE]        print the allocator's statistics when PROGRAM exits,\n"
"                          on standard error or into FILE (JPSYNC_STATS)\n"
"  --verbose             print the options in force at start (JPSYNC_VERBOSE=1)\n"
"  --lockdep             report lock-order inversions of jp_mutex\n"
"                          (JPSYNC_LOCKDEP=1)\n"
"  --print-env           print the variables that would be set, as NAME=value\n"
"                          lines, and exit without running anything\n"
"  --help                display this help and exit\n"
"  --version             output version information and exit\n"
"\n"
"SIZE and N take an optional K, M or G suffix (powers of 1024).\n"
"Exit status: that of PROGRAM; 2 for a usage error; 125 if the preload module\n"
"is missing; 126 if PROGRAM cannot be run; 127 if it is not found.\n"
"See jpsync-run(1) and jpsync(7).\n", me);
}

/* A usage error: one line naming the problem, one pointing at --help. */
__attribute__((format(printf, 1, 2), noreturn))
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", me);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", me);
	exit(EXIT_USAGE);
}

__attribute__((format(printf, 2, 3), noreturn))
static void die(int status, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", me);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
 * Is value acceptable for variable v?  Asked of the library's own parser
 * (the same table, ranges and spellings the program will see), so the two
 * can never disagree.
 */
static bool valid_for(enum var v, const char *value)
{
	struct jp_options o;
	char *entry = xconcat(var_name[v], "=", value);
	char *env[] = { entry, NULL };
	int warnings = jp__options_parse(&o, env, -1);

	free(entry);
	return warnings == 0;
}

static void set_size_option(enum var v, const char *opt, const char *arg,
			    const char *what)
{
	if (!valid_for(v, arg))
		usage_error("invalid value '%s' for --%s: %s", arg, opt, what);
	free(var_value[v]);
	var_value[v] = xstrdup(arg);
}

static void set_flag(enum var v)
{
	free(var_value[v]);
	var_value[v] = xstrdup("1");
}

/* Everything main allocated (so that a leak checker sees no leak when
 * jpsync-run returns instead of executing the program). */
static void release(char *module, char *preload)
{
	for (int v = 0; v < V_COUNT; v++)
		free(var_value[v]);
	free(module);
	free(preload);
}

static void set_stats(const char *arg)
{
	char *value;

	if (arg == NULL) {
		value = xstrdup("1");
	} else if (arg[0] == '\0') {
		usage_error("invalid value '' for --stats: an empty file name");
	} else if (arg[0] == '/') {
		value = xstrdup(arg);
	} else {
		/* The program may change directory before it exits: name the file
		 * from here.  An absolute name also cannot be mistaken for one of
		 * the boolean spellings ("1", "off", ...). */
		char cwd[PATH_MAX];
		if (getcwd(cwd, sizeof cwd) == NULL)
			die(EXIT_INTERNAL, "cannot get the current directory: %s",
			    strerror(errno));
		value = xconcat(cwd, strcmp(cwd, "/") == 0 ? "" : "/", arg);
	}
	if (!valid_for(V_STATS, value))
		usage_error("invalid value '%s' for --stats: the file name is too long "
			    "(at most %d bytes as an absolute path)", arg,
			    JP_STATS_PATH_MAX - 1);
	free(var_value[V_STATS]);
	var_value[V_STATS] = value;
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
	for (int v = 0; v < V_COUNT; v++)
		if (var_value[v] != NULL)
			printf("%s=%s\n", var_name[v], var_value[v]);
	if (fflush(stdout) != 0 || ferror(stdout))
		die(1, "write error: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	bool print_only = false;
	char tried[3 * PATH_MAX + 16];
	int c;

	opterr = 0;	/* our own messages, named jpsync-run whatever argv[0] is */
	/* "+": stop at the first non-option, which is PROGRAM; ':' reports a
	 * missing argument apart from an unknown option. */
	while ((c = getopt_long(argc, argv, "+:", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_CACHE:
			set_size_option(V_CACHE, "cache", optarg,
					"a number from 1 to 4096 is expected");
			break;
		case OPT_CACHE_BYTES:
			set_size_option(V_CACHE_BYTES, "cache-bytes", optarg,
					"a size from 0 to 1024G (a number with an optional "
					"K, M or G suffix) is expected");
			break;
		case OPT_MAG:
			set_size_option(V_MAG, "magazine", optarg,
					"a number from 1 to 1024 is expected");
			break;
		case OPT_MADVISE:
			set_size_option(V_MADVISE, "madvise-min", optarg,
					"a size (a number with an optional K, M or G suffix) "
					"or off is expected");
			break;
		case OPT_CHECK:
			set_flag(V_CHECK);
			break;
		case OPT_STATS:
			set_stats(optarg);
			break;
		case OPT_VERBOSE:
			set_flag(V_VERBOSE);
			break;
		case OPT_LOCKDEP:
			set_flag(V_LOCKDEP);
			break;
		case OPT_PRINT_ENV:
			print_only = true;
			break;
		case OPT_HELP:
			usage(stdout);
			if (fflush(stdout) != 0 || ferror(stdout))
				die(1, "write error: %s", strerror(errno));
			return 0;
		case OPT_VERSION:
			printf("%s (%s) %s\n", me, PACKAGE_NAME, PACKAGE_VERSION);
			if (fflush(stdout) != 0 || ferror(stdout))
				die(1, "write error: %s", strerror(errno));
			return 0;
		case ':':
			usage_error("option '%s' requires an argument", argv[optind - 1]);
		default:
			/* '?': an unknown option, an ambiguous abbreviation, or an
			 * argument given to an option that takes none. */
			if (optopt != 0 && optopt < 256)
				usage_error("invalid option -- '%c'", optopt);
			if (optopt != 0)
				usage_error("option '--%s' takes no argument",
					    option_name(optopt));
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

	if (setenv("LD_PRELOAD", preload, 1) != 0)
		die(EXIT_INTERNAL, "cannot set LD_PRELOAD: %s", strerror(errno));
	for (int v = 0; v < V_COUNT; v++)
		if (var_value[v] != NULL && setenv(var_name[v], var_value[v], 1) != 0)
			die(EXIT_INTERNAL, "cannot set %s: %s", var_name[v], strerror(errno));

	execvp(argv[optind], &argv[optind]);
	int err = errno;
	fprintf(stderr, "%s: '%s': %s\n", me, argv[optind], strerror(err));
	release(module, preload);
	return err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}
