/*
 * options.h - the JPSYNC_* environment variables, parsed once.
 *
 * Every tuning variable of the library is a row of the table in options.c,
 * and the same rows are jpsync-run's options: their names, argument, range,
 * default and help (shim/jpsync-run.c builds its getopt table, its --help
 * and its checks of the values from jp__option_table, so the two cannot
 * disagree).  jp__options() parses the environment on first use (without
 * malloc: safe during preload) and returns the same read-only struct
 * afterwards.  A malformed value, a value out of range, or an unknown
 * JPSYNC_* name gets one warning on stderr naming the variable; the default
 * is kept.
 *
 * Driving the parser from a test or a fuzzer: jp__options_parse() takes any
 * NULL-terminated array of "NAME=value" strings and a file descriptor for
 * the warnings (-1: none) and returns the number of warnings; it touches
 * nothing but the struct it fills, never allocates, and accepts any bytes
 * (a value of any length, no '=' at all, non-UTF-8).  jp__option_value()
 * checks one value for one row, as jpsync-run does for its options.  Both
 * are in libjpsync-core.la (tests/base/test-options.c links it).
 */
#ifndef JP_OPTIONS_H
#define JP_OPTIONS_H

#include "jp_internal.h"

#include <stdbool.h>

#include <limits.h>

/* A statistics file name: as long as the system allows, with its NUL. */
#define JP_STATS_PATH_MAX PATH_MAX

enum jp_stats_dest { JP_STATS_NONE = 0, JP_STATS_STDERR, JP_STATS_FILE };
/* JPSYNC_STATS_FORMAT: the table as text, or as one JSON object a line. */
enum jp_stats_format { JP_STATS_TEXT = 0, JP_STATS_JSON };

struct jp_options {
	uint64_t cache_n;	/* JPSYNC_CACHE_N: most blocks a bin may hold */
	uint64_t cache_bytes;	/* JPSYNC_CACHE_BYTES: what all bins may grow by */
	uint64_t mag_size;	/* JPSYNC_MAG_SIZE: blocks per magazine */
	uint64_t madvise_min;	/* JPSYNC_MADVISE_MIN: bytes; UINT64_MAX = off */
	bool check;		/* JPSYNC_CHECK */
	bool verbose;		/* JPSYNC_VERBOSE */
	bool lockdep;		/* JPSYNC_LOCKDEP */
	bool leaks;		/* JPSYNC_LEAKS */
	uint64_t leaks_exitcode;	/* JPSYNC_LEAKS_EXITCODE: 0 to 255 */
	enum jp_stats_dest stats;	/* JPSYNC_STATS */
	int stats_signal;	/* JPSYNC_STATS_SIGNAL: a signal number, 0 = off */
	int stats_format;	/* JPSYNC_STATS_FORMAT: enum jp_stats_format */
	char stats_path[JP_STATS_PATH_MAX];
	uint64_t heap_profile_rate;	/* JPSYNC_HEAP_PROFILE_RATE: bytes */
	uint64_t heap_profile_interval;	/* JPSYNC_HEAP_PROFILE_INTERVAL: 0 = off */
	/* JPSYNC_HEAP_PROFILE: the profiles' file prefix; "" = no profile */
	char heap_profile[JP_STATS_PATH_MAX];
};

/* How a row's value is spelled. */
enum jp_opt_kind {
	JP_OPT_BOOL,	/* 1/yes/on/true, 0/no/off/false; jpsync-run: a flag */
	JP_OPT_SIZE,	/* integer with K/M/G suffix, in [min, max] */
	JP_OPT_SIZE_OFF,	/* as JP_OPT_SIZE, or "off" (stored as UINT64_MAX) */
	JP_OPT_STATS,	/* boolean, or a file name that is not a number
			 * ("./2" for one named 2); jpsync-run: [=FILE] */
	JP_OPT_SIGNAL,	/* a signal that can be caught: a name (USR2, SIGUSR2,
			 * any case) or a number; 0 or off: none */
	JP_OPT_FORMAT,	/* the statistics' format: text or json, any case */
	JP_OPT_FILE,	/* a file name (char[JP_STATS_PATH_MAX] at offset)
			 * without control characters; "" (unset): none */
};

/* One row of the table: one JPSYNC_ variable and one jpsync-run option. */
struct jp_option_desc {
	const char *name;	/* without the JPSYNC_ prefix: "CACHE_N" */
	const char *flag;	/* jpsync-run's long option: "cache" */
	const char *arg;	/* jpsync-run's argument: "N", "SIZE", "FILE" */
	enum jp_opt_kind kind;
	bool bytes;		/* a size in bytes (shown with K/M/G), not a count */
	size_t offset;		/* in struct jp_options */
	uint64_t def, min, max;
	const char *help;	/* what it does, for jpsync-run --help */
};

extern const struct jp_option_desc jp__option_table[];
extern const size_t jp__option_count;

/*
 * Check value for row d and store it in *o (which must have been set up by
 * jp__options_parse, e.g. from an empty environment).  Returns NULL, or the
 * reason it is refused, written in why (at least 128 bytes): a phrase that
 * names the accepted range, such as "out of range (1 to 4096)".
 */
const char *jp__option_value(struct jp_options *o, const struct jp_option_desc *d,
			     const char *value, char *why, size_t cap);
/* What row d accepts and its default, into buf (at least 128 bytes), as
 * "1 to 4096; default 4096" (nothing for a boolean); returns buf. */
char *jp__option_range(const struct jp_option_desc *d, char *buf, size_t cap);

/* The options in force (parsed from the environment on first call). */
const struct jp_options *jp__options(void);

/*
 * Parse env (a NULL-terminated "NAME=value" array, like environ) into *o,
 * starting from the defaults; warnings go to warn_fd (-1: none).  Returns the
 * number of warnings.  jp__options() is this over the process environment.
 */
int jp__options_parse(struct jp_options *o, char *const *env, int warn_fd);
/* Write the effective options, one "NAME=value" per line, to fd. */
void jp__options_print(const struct jp_options *o, int fd);

/* The value parsers, exposed for the unit tests.  0 or EINVAL. */
int jp__parse_bool(const char *s, bool *out);
/* A signal a handler can catch, by name or number (0 for off). */
int jp__parse_signal(const char *s, int *out);
/* Decimal integer with an optional K, M or G suffix (binary: 1024). */
int jp__parse_size(const char *s, uint64_t *out);

#endif /* JP_OPTIONS_H */
