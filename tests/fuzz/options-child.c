/*
 * options-child.c - the program preload-options.c starts under the preload
 * module with a hostile environment: it allocates (the first malloc parses
 * the JPSYNC_* variables) and exits 0.  Not linked to libjpsync.
 */
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *p = malloc(100), *q = calloc(10, 1000);

	if (p == NULL || q == NULL)
		return 1;
	memset(p, 1, 100);
	p = realloc(p, 100000);
	if (p == NULL)
		return 1;
	free(p);
	free(q);
	return 0;
}
