/*
 * alloc-dlopen.c - a program that does not link libjpsync dlopens it and
 * allocates with it from several threads (static TLS must suffice: the
 * allocator's thread state is one initial-exec pointer).
 * Usage: alloc-dlopen PATH-TO-libjpsync.so.1; exit 0 when all went well.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void *(*p_alloc)(size_t);
static void (*p_free)(void *);

static void *worker(void *arg)
{
	void *blocks[256];

	(void)arg;
	for (int r = 0; r < 100; r++) {
		for (int i = 0; i < 256; i++) {
			blocks[i] = p_alloc((size_t)(16 + i * 8));
			if (blocks[i] == NULL)
				return (void *)1;
			memset(blocks[i], i, (size_t)(16 + i * 8));
		}
		for (int i = 0; i < 256; i++)
			p_free(blocks[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[4];
	void *h, *ret;
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: alloc-dlopen LIBRARY\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	p_alloc = (void *(*)(size_t))dlsym(h, "jp_alloc");
	p_free = (void (*)(void *))dlsym(h, "jp_free");
	if (p_alloc == NULL || p_free == NULL) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			return 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &ret);
		bad |= ret != NULL;
	}
	if (worker(NULL) != NULL)
		bad = 1;
	printf("dlopen ok\n");
	return bad;
}
