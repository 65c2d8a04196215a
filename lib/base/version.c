/* version.c - the version of the running library. */
#include "jp_internal.h"

#include <jpsync/version.h>

JP_EXPORT const char *jp_version(void)
{
	return JPSYNC_VERSION_STRING;
}
