/*
 * preload-renamed.h - the preload module's functions (shim/preload.c),
 * compiled under other names: the build renames every symbol of
 * shim-rename.syms with objcopy, so that a fuzz target calls jp_alloc through exactly the code a
 * preloaded program runs, while malloc stays the C library's.
 */
#ifndef JP_FUZZ_PRELOAD_RENAMED_H
#define JP_FUZZ_PRELOAD_RENAMED_H

#include <stddef.h>

void *jpshim_malloc(size_t size);
void jpshim_free(void *ptr);
void *jpshim_calloc(size_t nmemb, size_t size);
void *jpshim_realloc(void *ptr, size_t size);
void *jpshim_reallocarray(void *ptr, size_t nmemb, size_t size);
int jpshim_posix_memalign(void **memptr, size_t alignment, size_t size);
void *jpshim_aligned_alloc(size_t alignment, size_t size);
void *jpshim_memalign(size_t alignment, size_t size);
void *jpshim_valloc(size_t size);
void *jpshim_pvalloc(size_t size);
size_t jpshim_malloc_usable_size(void *ptr);
int jpshim_malloc_trim(size_t pad);
void jpshim_free_sized(void *ptr, size_t size);
void jpshim_free_aligned_sized(void *ptr, size_t alignment, size_t size);

#endif
