/* version.c - the version of the running library, and where it came from. */
#include "jp_internal.h"
#include "options.h"
#include "os.h"

#include <jpsync/version.h>

#include <string.h>

JP_EXPORT const char *jp_version(void)
{
	return JPSYNC_VERSION_STRING;
}

/*
 * JPSYNC_VERBOSE=1 (jpsync-run --verbose): once, when the library is
 * loaded, say which one it is and from where ("jpsync: libjpsync 1.2.0
 * loaded from /usr/lib/x86_64-linux-gnu/libjpsync.so.1"), then the options
 * in force: with several installs (a build tree, /usr/local, the
 * package), the question is which one a program got.  A constructor, so
 * that a program that never allocates says it too; nothing here allocates
 * (it may run during preload, before the allocator is ready).  In this
 * file rather than options.c: jpsync-run links the options parser
 * statically and must not say this about itself.
 *
 * Without the variable the options are not read here: they are read when
 * the allocator starts (jp_alloc(3)), so a program may still set one before
 * its first allocation (setenv("JPSYNC_CHECK", ...) in main; the fuzz
 * target alloc-check does).  Reading them all at load ignored it.
 */
__attribute__((constructor)) static void verbose_at_load(void)
{
	const char *v = jp__os_getenv("JPSYNC_VERBOSE");
	const struct jp_options *o;
	const char *path;
	char line[64 + PATH_MAX];
	size_t len = 0;

	if (v == NULL || *v == '\0')
		return;
	o = jp__options();
	if (!o->verbose)
		return;
	path = jp__os_object_path((const void *)jp_version);
	jp__str_add(line, sizeof line, &len, "jpsync: libjpsync " JPSYNC_VERSION_STRING
		    " loaded from ");
	jp__str_add_shown(line, sizeof line, &len, path != NULL ? path : "(unknown)",
			  strlen(path != NULL ? path : "(unknown)"), PATH_MAX);
	jp__str_add(line, sizeof line, &len, "\n");
	jp__os_write(2, line, len);
	jp__options_print(o, 2);
}
