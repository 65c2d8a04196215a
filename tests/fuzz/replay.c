/*
 * replay.c - main() of the replay programs: run a fuzz target once over
 * every file of its corpus, without libFuzzer.
 *
 *   replay-<target> [FILE|DIR]...
 *
 * With no argument it replays $top_srcdir/tests/fuzz/corpus/<target>/ (make
 * check sets top_srcdir), else the files and directories named (one level:
 * the files of a directory, in name order).  Each input's path is printed
 * before it runs, so the log of a failed replay ends with the input that
 * failed.  Exit status: 0 when every input ran; a violation aborts (the
 * target's message says what); 77 (skipped) when the target cannot run in
 * this build, with the reason; 99 when an input cannot be read or the
 * corpus is empty.
 */
#include "config.h"

#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FUZZ_TARGET
# error "FUZZ_TARGET must name the target's corpus directory"
#endif

static unsigned long ran;

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0;

	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 99;
	}
	for (;;) {
		if (len == cap) {
			unsigned char *nb;

			cap = cap ? 2 * cap : 4096;
			nb = realloc(buf, cap);
			if (nb == NULL) {
				fprintf(stderr, "replay: %s: out of memory\n", path);
				free(buf);
				fclose(f);
				return 99;
			}
			buf = nb;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(buf);
		fclose(f);
		return 99;
	}
	fclose(f);
	printf("replay: %s (%zu bytes)\n", path, len);
	fflush(stdout);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	ran++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 99;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path);
	d = opendir(path);
	if (d == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 99;
	}
	for (;;) {
		char *full;

		/* readdir's NULL is the end or an error (a 32-bit program
		 * without large-file offsets gets EOVERFLOW from a directory
		 * whose offsets are 64-bit hashes, as ext4's are). */
		errno = 0;
		e = readdir(d);
		if (e == NULL) {
			if (errno != 0) {
				fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
				rc = 99;
			}
			break;
		}

		if (e->d_name[0] == '.')
			continue;	/* ., .. and hidden files */
		if (n == cap) {
			char **nn;

			cap = cap ? 2 * cap : 64;
			nn = realloc(names, cap * sizeof *names);
			if (nn == NULL) {
				rc = 99;
				break;
			}
			names = nn;
		}
		full = malloc(strlen(path) + strlen(e->d_name) + 2);
		if (full == NULL) {
			rc = 99;
			break;
		}
		sprintf(full, "%s/%s", path, e->d_name);
		names[n++] = full;
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof *names, by_name);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0)
			rc = run_file(names[i]);
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = LLVMFuzzerInitialize(&argc, &argv);
	if (rc != 0)
		return rc;	/* 77 with the reason printed: cannot run here */
	if (argc > 1) {
		for (int i = 1; i < argc && rc == 0; i++)
			rc = run_path(argv[i]);
	} else {
		const char *top = getenv("top_srcdir");
		char dir[4096];

		snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s",
			 top != NULL && *top != '\0' ? top : FUZZ_SRCDIR, FUZZ_TARGET);
		rc = run_path(dir);
	}
	if (rc == 0 && ran == 0) {
		fprintf(stderr, "replay: %s: no input to replay\n", FUZZ_TARGET);
		rc = 99;
	}
	if (rc == 0)
		printf("replay: %s: %lu inputs, no violation\n", FUZZ_TARGET, ran);
	return rc;
}
