/*
 * preload-hook.c - a second preloaded library that wraps malloc the way
 * tracing and leak-checking tools do: its malloc finds the next one with
 * dlsym(RTLD_NEXT, "malloc") on first use, and its constructor calls dlsym
 * and dlerror (both allocate: dlerror's message is malloc'ed) before the
 * program has allocated anything.  Put in front of the module
 * (LD_PRELOAD=libpreload-hook.so:libjpsync-preload.so), every malloc of the
 * program goes through here into jp_alloc.  jemalloc#329 and #443 deadlocked
 * or recursed in this situation.
 *
 * dlsym may itself call malloc (and calloc) while the wrapper resolves its
 * target: the wrapper then serves the request from a small static buffer,
 * and which the wrapper's free() recognises and keeps away from the
 * allocator.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t size);
EXPORT void free(void *ptr);
EXPORT unsigned long jp_test_hook_calls(void);
EXPORT unsigned long jp_test_hook_fallbacks(void);
EXPORT int jp_test_hook_ctor_ok(void);

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);

static _Atomic(malloc_fn) next_malloc;
static _Atomic(free_fn) next_free;
static _Atomic unsigned long calls, fallbacks;
static int ctor_ok;
/* Set while this thread is inside dlsym: a request then must not call
 * dlsym again (glibc's dlsym frees the previous error message first). */
static __thread int in_dlsym __attribute__((tls_model("initial-exec")));

/* Requests made while dlsym resolves the next malloc. */
static _Alignas(16) unsigned char early[4096];
static _Atomic size_t early_used;

static void *early_alloc(size_t size)
{
	size = (size + 15) & ~(size_t)15;
	size_t off = atomic_fetch_add(&early_used, size);
	atomic_fetch_add(&fallbacks, 1);
	if (off + size > sizeof early)
		return NULL;
	return early + off;
}

static void resolve(void)
{
	in_dlsym++;
	malloc_fn m = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
	free_fn f = (free_fn)dlsym(RTLD_NEXT, "free");
	in_dlsym--;
	atomic_store(&next_free, f);
	atomic_store(&next_malloc, m);
}

void *malloc(size_t size)
{
	malloc_fn m = atomic_load(&next_malloc);

	atomic_fetch_add(&calls, 1);
	if (m == NULL) {
		if (in_dlsym)
			return early_alloc(size);	/* dlsym called us */
		resolve();
		m = atomic_load(&next_malloc);
		if (m == NULL)
			return NULL;
	}
	return m(size);
}

void free(void *ptr)
{
	free_fn f = atomic_load(&next_free);

	if ((unsigned char *)ptr >= early && (unsigned char *)ptr < early + sizeof early)
		return;		/* from the fallback buffer: not the allocator's */
	if (f == NULL) {
		if (in_dlsym) {
			/* Inside dlsym, before the next free is known: the block
			 * stays allocated (it is counted as a fallback). */
			atomic_fetch_add(&fallbacks, 1);
			return;
		}
		resolve();
		f = atomic_load(&next_free);
		if (f == NULL)
			return;
	}
	f(ptr);
}

unsigned long jp_test_hook_calls(void)
{
	return atomic_load(&calls);
}

unsigned long jp_test_hook_fallbacks(void)
{
	return atomic_load(&fallbacks);
}

int jp_test_hook_ctor_ok(void)
{
	return ctor_ok;
}

/*
 * Before main: a failing dlsym and the dlerror that reports it.  glibc
 * malloc's the message (and the per-thread error state with calloc), so this
 * may be the process's first allocation, reaching the allocator while it
 * initialises.  A deadlock here is caught by the alarm.
 */
__attribute__((constructor)) static void hook_init(void)
{
	unsigned prev = alarm(30);
	void *sym = dlsym(RTLD_NEXT, "jp_test_no_such_symbol");
	const char *err = dlerror();

	ctor_ok = sym == NULL && err != NULL;
	alarm(prev);
}
