/*
 * jp_internal.h - what every file of the library shares.
 *
 * JP_EXPORT marks a public function (the library is compiled with
 * -fvisibility=hidden, and lib/libjpsync.map decides what leaves it).
 * Functions shared between files of the library are named jp__<name> and
 * declared in the private header of the file that defines them (os.h,
 * options.h, ...).
 *
 * The valgrind and ThreadSanitizer annotations are wrapped here so that a
 * component includes one header and the annotations cost nothing when the
 * library is neither under valgrind nor built with -fsanitize=thread.
 */
#ifndef JP_INTERNAL_H
#define JP_INTERNAL_H

#include "config.h"

#include <stddef.h>
#include <stdint.h>

#define JP_EXPORT __attribute__((visibility("default")))
#define JP_HIDDEN __attribute__((visibility("hidden")))

#define jp_likely(x)   __builtin_expect(!!(x), 1)
#define jp_unlikely(x) __builtin_expect(!!(x), 0)
#define JP_NOINLINE    __attribute__((noinline))
#define JP_COLD        __attribute__((cold, noinline))
#define JP_CACHELINE   64
#define JP_ALIGNED_CL  __attribute__((aligned(JP_CACHELINE)))

#define JP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A processor hint for spin loops. */
static inline void jp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* ---- valgrind client requests (inert outside valgrind) ---------------- */
#if defined(HAVE_VALGRIND_HELGRIND_H) && !defined(JP_NO_VALGRIND)
# include <valgrind/valgrind.h>
# include <valgrind/helgrind.h>
# define JP_HB_BEFORE(obj)  ANNOTATE_HAPPENS_BEFORE(obj)
# define JP_HB_AFTER(obj)   ANNOTATE_HAPPENS_AFTER(obj)
/* Before the object's memory is reused (a stack frame, a freed block). */
# define JP_HB_FORGET(obj)  ANNOTATE_HAPPENS_BEFORE_FORGET_ALL(obj)
# define JP_BENIGN_RACE(addr, size, why) ANNOTATE_BENIGN_RACE_SIZED(addr, size, why)
# define JP_ON_VALGRIND()   (RUNNING_ON_VALGRIND != 0)
#else
# define JP_HB_BEFORE(obj)  ((void)(obj))
# define JP_HB_AFTER(obj)   ((void)(obj))
# define JP_HB_FORGET(obj)  ((void)(obj))
# define JP_BENIGN_RACE(addr, size, why) ((void)(addr))
# define JP_ON_VALGRIND()   0
#endif

/* ---- ThreadSanitizer ---------------------------------------------------- */
#if defined(__SANITIZE_THREAD__)
# define JP_TSAN 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer)
#  define JP_TSAN 1
# endif
#endif
#if defined(__SANITIZE_ADDRESS__)
# define JP_ASAN 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define JP_ASAN 1
# endif
#endif

/* ---- unrecoverable misuse ---------------------------------------------- */
/*
 * Print "jpsync: <what>\n" (or "jpsync: <what> of 0x<ptr>\n") on stderr and
 * abort.  Neither allocates memory, so both are safe inside the allocator.
 */
_Noreturn void jp__die(const char *what) JP_COLD;
_Noreturn void jp__die_ptr(const char *what, const void *ptr) JP_COLD;

#endif /* JP_INTERNAL_H */
