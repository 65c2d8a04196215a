/*
 * sync_mode.c - the synchronisation layer's mode (sync.h: "the sync
 * mode"), decided once per process from the options and the tools the
 * process runs under, and the one report of misuse of a lock.
 *
 * Every primitive of lib/sync reads the mode on its fast path; lockdep.c
 * reads it too.  Keeping it here, not in mutex.c, is what lets lockdep
 * observe the mutex only through the hooks the mutex calls.
 */
#include "sync.h"
#include "base/options.h"
#include "base/os.h"
#include "base/park.h"

#include <string.h>

_Atomic int jp__sync_mode;
static bool lockdep_forced, check_forced;

/*
 * Under helgrind or drd, the happens-before client requests are needed;
 * under memcheck or callgrind they would only cost instructions (and skew
 * callgrind's counts).  Valgrind preloads vgpreload_<tool>-<arch>.so into
 * the program, which tells the tool.
 */
static bool race_detector_tool(void)
{
	const char *p = jp__os_getenv("LD_PRELOAD");

	if (!JP_ON_VALGRIND())
		return false;
	if (p == NULL)
		return true;	/* cannot tell: annotate, to be safe */
	return strstr(p, "vgpreload_helgrind") != NULL || strstr(p, "vgpreload_drd") != NULL ||
	       strstr(p, "vgpreload_") == NULL;
}

int jp__sync_mode_init(void)
{
	int mode = JP_SYNC_PLAIN;

	if (race_detector_tool()) {
		mode |= JP_SYNC_VALGRIND;
		/* Written once with the same value by whoever comes first. */
		JP_BENIGN_RACE(&jp__sync_mode, sizeof jp__sync_mode, "jpsync mode");
	}
	if (lockdep_forced || jp__options()->lockdep)
		mode |= JP_SYNC_LOCKDEP;
	if (check_forced || jp__options()->check)
		mode |= JP_SYNC_CHECK;
	if (jp__tsan_on())
		mode |= JP_SYNC_TSAN;
	/* Under valgrind one thread runs at a time, in program order: the
	 * mutex's store unlock needs no barrier there (mutex.c). */
	if (!jp__park_asym_setup() && !JP_ON_VALGRIND())
		mode |= JP_SYNC_NO_ASYM;
	/* relaxed: the mode is one value, the same whoever computes it. */
	atomic_store_explicit(&jp__sync_mode, mode, memory_order_relaxed);
	return mode;
}

void jp__sync_force_lockdep(bool on)
{
	int mode = jp__sync_mode_get();

	lockdep_forced = on;
	mode = on ? (mode | JP_SYNC_LOCKDEP) : (mode & ~JP_SYNC_LOCKDEP);
	atomic_store_explicit(&jp__sync_mode, mode, memory_order_relaxed);
}

void jp__sync_force_check(bool on)
{
	int mode = jp__sync_mode_get();

	check_forced = on;
	mode = on ? (mode | JP_SYNC_CHECK) : (mode & ~JP_SYNC_CHECK);
	atomic_store_explicit(&jp__sync_mode, mode, memory_order_relaxed);
}

void jp__sync_misuse(const char *call, const void *obj, const void *obj2, const char *why)
{
	char line[200], hex[24];
	size_t n = 0;

	jp__str_add(line, sizeof line, &n, call);
	jp__str_add(line, sizeof line, &n, "(");
	jp__str_add(line, sizeof line, &n, jp__fmt_hex(hex, (uintptr_t)obj));
	if (obj2 != NULL) {
		jp__str_add(line, sizeof line, &n, ", ");
		jp__str_add(line, sizeof line, &n, jp__fmt_hex(hex, (uintptr_t)obj2));
	}
	jp__str_add(line, sizeof line, &n, "): ");
	jp__str_add(line, sizeof line, &n, why);
	jp__die(line);
}

