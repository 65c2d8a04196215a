/*
 * alloc-dlclose.c - a program that does not link libjpsync dlopens it,
 * has a thread allocate with it, frees that thread's block from main (a
 * remote free), and dlcloses the library while the thread still lives;
 * the thread then exits (the allocator's thread-exit hook runs), and the
 * block allocated before the dlclose is still ours: written, and freed
 * after a second dlopen.  Before libjpsync was linked with -z nodelete,
 * the dlclose unmapped the library and the thread's exit jumped to the
 * unmapped hook (SIGSEGV).
 * Usage: alloc-dlclose PATH-TO-libjpsync.so.1; exit 0 when all went well.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef void *alloc_fn(size_t);
typedef void free_fn(void *);

static alloc_fn *p_alloc;
static free_fn *p_free;
static pthread_barrier_t made, closed;
static void *remote[64];	/* allocated by the thread, freed by main */
static char *kept;		/* allocated by the thread, used after dlclose */

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 64; i++)
		if ((remote[i] = p_alloc((size_t)(16 + i * 24))) == NULL)
			return (void *)1;
	if ((kept = p_alloc(1000)) == NULL)
		return (void *)1;
	memset(kept, 0x5a, 1000);
	pthread_barrier_wait(&made);
	pthread_barrier_wait(&closed);	/* main has dlclosed the library */
	return NULL;			/* the thread-exit hook runs now */
}

static int open_lib(const char *path, void **h)
{
	*h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (*h == NULL) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	p_alloc = (alloc_fn *)dlsym(*h, "jp_alloc");
	p_free = (free_fn *)dlsym(*h, "jp_free");
	if (p_alloc == NULL || p_free == NULL) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *h, *ret;
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: alloc-dlclose LIBRARY\n");
		return 2;
	}
	if (open_lib(argv[1], &h) != 0)
		return 1;
	pthread_barrier_init(&made, NULL, 2);
	pthread_barrier_init(&closed, NULL, 2);
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	pthread_barrier_wait(&made);
	for (int i = 0; i < 64; i++)
		p_free(remote[i]);
	if (dlclose(h) != 0) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		return 1;
	}
	pthread_barrier_wait(&closed);
	pthread_join(t, &ret);
	bad |= ret != NULL;
	for (int i = 0; i < 1000; i++)
		if (kept[i] != 0x5a)
			bad = 1;
	memset(kept, 0xa5, 1000);
	if (open_lib(argv[1], &h) != 0)
		return 1;
	p_free(kept);
	for (int i = 0; i < 64; i++) {
		void *p = p_alloc((size_t)(16 + i * 24));

		if (p == NULL)
			bad = 1;
		p_free(p);
	}
	printf("dlclose %s\n", bad ? "FAILED" : "ok");
	return bad;
}
