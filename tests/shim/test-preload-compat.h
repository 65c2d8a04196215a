/*
 * test-preload-compat.h - what the two halves of test-preload-compat share:
 * the check macro and its counters, the helpers (test-preload-compat.c)
 * and the cases about processes and threads (test-preload-compat-proc.c).
 * test-preload-compat.c's opening comment lists every case.
 */
#ifndef TEST_PRELOAD_COMPAT_H
#define TEST_PRELOAD_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

extern int failures;
extern int checks;

#define CHECK(cond, ...) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		printf("FAIL: %s:%d: %s: ", __FILE__, __LINE__, #cond);	\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

extern const char module_name[];	/* the preload module's file name */

typedef size_t (*usable_fn)(const void *);

double scale(void);			/* JPSYNC_TEST_SCALE, 1 when unset or bad */
size_t scaled(size_t n, size_t min_n);	/* n times the scale, min_n at least */
size_t rss_bytes(void);			/* resident set size, 0 if unknown */
const char *object_of(const void *addr);	/* the object that holds addr */
bool in_module(const void *addr);	/* addr is in the preload module */
usable_fn jp_usable(void);		/* jp_usable_size, by dlsym */
bool aligned_to(const void *p, size_t a);

/* test-preload-compat-proc.c */
void case_fork_signal(void);
void case_fork_stdio(void);
void case_threads(void);
void check_hook(bool hook_first);
void case_dlopen(const char *path);

#endif /* TEST_PRELOAD_COMPAT_H */
