/*
 * deadline.c - jp_deadline_after: a relative timeout as the absolute
 * CLOCK_MONOTONIC deadline every timed call takes.
 */
#include "jp_internal.h"
#include "os.h"

#include <jpsync/deadline.h>

#include <errno.h>
#include <limits.h>

/* The largest value of time_t (32 or 64 bits, always signed on Linux). */
#define TIME_T_MAX	((time_t)((((uintmax_t)1 << (sizeof(time_t) * CHAR_BIT - 2)) - 1) * 2 + 1))

JP_EXPORT int jp_deadline_after(struct timespec *out, uint64_t ns)
{
	uint64_t now = jp__os_now_ns();
	/* Each term below 2^64 / 10^9, so neither sum can wrap. */
	uint64_t sec = now / 1000000000u + ns / 1000000000u;
	uint64_t nsec = now % 1000000000u + ns % 1000000000u;

	if (out == NULL)
		return EINVAL;
	if (nsec >= 1000000000u) {
		nsec -= 1000000000u;
		sec++;
	}
	if (sec > (uint64_t)TIME_T_MAX) {
		out->tv_sec = TIME_T_MAX;
		out->tv_nsec = 999999999L;
		return 0;
	}
	out->tv_sec = (time_t)sec;
	out->tv_nsec = (long)nsec;
	return 0;
}
