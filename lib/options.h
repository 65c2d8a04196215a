/*
 * options.h - the JPSYNC_* environment variables, parsed once.
 *
 * Every tuning variable of the library is a row of the table in options.c.
 * jp__options() parses the environment on first use (without malloc: safe
 * during preload) and returns the same read-only struct afterwards.  A
 * malformed value, a value out of range, or an unknown JPSYNC_* name gets one
 * warning on stderr naming the variable; the default is kept.
 */
#ifndef JP_OPTIONS_H
#define JP_OPTIONS_H

#include "jp_internal.h"

#include <stdbool.h>

#define JP_STATS_PATH_MAX 256

enum jp_stats_dest { JP_STATS_NONE = 0, JP_STATS_STDERR, JP_STATS_FILE };

struct jp_options {
	uint64_t cache_n;	/* JPSYNC_CACHE_N: most blocks a bin may hold */
	uint64_t cache_bytes;	/* JPSYNC_CACHE_BYTES: what all bins may grow by */
	uint64_t mag_size;	/* JPSYNC_MAG_SIZE: blocks per magazine */
	uint64_t madvise_min;	/* JPSYNC_MADVISE_MIN: bytes; UINT64_MAX = off */
	bool check;		/* JPSYNC_CHECK */
	bool verbose;		/* JPSYNC_VERBOSE */
	bool lockdep;		/* JPSYNC_LOCKDEP */
	enum jp_stats_dest stats;	/* JPSYNC_STATS */
	char stats_path[JP_STATS_PATH_MAX];
};

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
/* Decimal integer with an optional K, M or G suffix (binary: 1024). */
int jp__parse_size(const char *s, uint64_t *out);

#endif /* JP_OPTIONS_H */
