/*
 * preload-dltest.c - a library linked against libjpsync.so.1, for
 * test-preload-compat's dlopen case: a program that did not link libjpsync
 * dlopens this, which loads libjpsync.so.1 (and its initial-exec TLS) late.
 * jemalloc#937 and mimalloc#147 failed exactly here with "cannot allocate
 * memory in static TLS block".
 */
#include <jpsync/alloc.h>

#include <string.h>

int jp_dltest_roundtrip(size_t n);

/* Allocate, write and free n blocks through libjpsync; 0 when all worked. */
__attribute__((visibility("default"))) int jp_dltest_roundtrip(size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t size = 1 + (i * 37) % 5000;
		unsigned char *p = jp_alloc(size);
		if (p == NULL || jp_usable_size(p) < size)
			return 1;
		memset(p, 0xa5, size);
		jp_free(p);
	}
	return 0;
}
