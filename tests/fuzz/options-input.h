/*
 * options-input.h - how the options target reads its input (fuzz-options.c)
 * and the preloaded-environment replay (preload-options.c) reads the same
 * corpus.
 *
 * Byte 0 picks the mode (its low two bits); the rest is cut at its NUL bytes
 * into pieces (an empty piece too; at most FZO_MAX_PIECES):
 *   0  env     the pieces are a whole environment, "NAME=value" or not;
 *   1  values  piece k is the value of JPSYNC_<row k % rows> of the option
 *              table, for k up to the larger of the pieces and the rows
 *              (every variable gets a value, some two);
 *   2  argv    the pieces are jpsync-run's arguments (after --print-env);
 *   3  flags   piece k is the argument of --<flag of row k % rows>, as
 *              mode 1 (a boolean row's piece is dropped: --check).
 */
#ifndef JP_FUZZ_OPTIONS_INPUT_H
#define JP_FUZZ_OPTIONS_INPUT_H

#include "base/options.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FZO_MAX_PIECES 512

enum { FZO_ENV, FZO_VALUES, FZO_ARGV, FZO_FLAGS };

struct fzo_input {
	int mode;
	size_t n;			/* strings in s[] */
	char *s[2 * FZO_MAX_PIECES + 4];	/* NULL-terminated */
	char *buf;			/* what they point into */
};

/* Decode data into in (an env for modes 0 and 1, an argv without argv[0]
 * for 2 and 3); 0, or -1 when out of memory.  fzo_free() releases it. */
static inline int fzo_decode(struct fzo_input *in, const uint8_t *data, size_t size)
{
	const char *piece[FZO_MAX_PIECES];
	size_t plen[FZO_MAX_PIECES], np = 0, total = 0, rows = jp__option_count;
	char *raw, *w;

	memset(in, 0, sizeof *in);
	in->mode = size > 0 ? data[0] & 3 : 0;
	raw = malloc(size + 1);
	if (raw == NULL)
		return -1;
	if (size > 1)
		memcpy(raw, data + 1, size - 1);
	raw[size > 0 ? size - 1 : 0] = '\0';
	/* pieces: raw cut at its NULs; the last one ends at the end */
	for (size_t at = 0, len = size > 0 ? size - 1 : 0; np < FZO_MAX_PIECES;) {
		size_t l = strlen(raw + at);

		piece[np] = raw + at;
		plen[np++] = l;
		if (at + l >= len)
			break;
		at += l + 1;
	}
	if (in->mode == FZO_ENV || in->mode == FZO_ARGV) {
		for (size_t k = 0; k < np; k++)
			in->s[in->n++] = (char *)piece[k];
		in->buf = raw;
		return 0;
	}
	/* values and flags: "JPSYNC_NAME=" or "--flag=" in front of each */
	size_t count = np > rows ? np : rows;
	for (size_t k = 0; k < count; k++)
		total += plen[k % np] + strlen(jp__option_table[k % rows].name) +
			 strlen(jp__option_table[k % rows].flag) + 12;
	in->buf = malloc(total + 1);
	if (in->buf == NULL) {
		free(raw);
		return -1;
	}
	w = in->buf;
	for (size_t k = 0; k < count; k++) {
		const struct jp_option_desc *d = &jp__option_table[k % rows];
		const char *v = piece[k % np];

		in->s[in->n++] = w;
		if (in->mode == FZO_VALUES) {
			w += strlen(strcpy(w, "JPSYNC_"));
			w += strlen(strcpy(w, d->name));
			*w++ = '=';
		} else {
			w += strlen(strcpy(w, "--"));
			w += strlen(strcpy(w, d->flag));
			if (d->kind == JP_OPT_BOOL || (d->kind == JP_OPT_STATS && *v == '\0')) {
				*w++ = '\0';
				continue;
			}
			*w++ = '=';
		}
		w += strlen(strcpy(w, v)) + 1;
	}
	free(raw);
	return 0;
}

static inline void fzo_free(struct fzo_input *in)
{
	free(in->buf);
	in->buf = NULL;
}

#endif /* JP_FUZZ_OPTIONS_INPUT_H */
