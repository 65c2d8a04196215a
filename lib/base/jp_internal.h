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

#include <stdbool.h>
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

/* Whether the size_t x is above 2^k (0 < k < 64) on every size_t width:
 * (size_t)1 << 40 is undefined where size_t has 32 bits, and a uint64_t
 * compare draws -Wtype-limits there. */
#define JP_SIZE_ABOVE_POW2(x, k) \
	((x) != 0 && (((size_t)(x) - 1) >> ((k) / 2) >> ((k) - (k) / 2)) != 0)

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

/* ---- ThreadSanitizer, at run time --------------------------------------- */
/*
 * The runtime of a program built with -fsanitize=thread defines these
 * (GCC's libtsan, and clang's runtime, which the program exports); in any
 * other process the weak references are NULL.  So the library as a
 * distribution builds it, not instrumented, still tells a TSan program what
 * it synchronises, and a library built with -fsanitize=thread does the
 * same through the same calls.  jp__tsan_on() is one load and compare; the
 * synchronisation code tests it only on branches its fast paths already
 * take for valgrind or lockdep (the sync mode, the queues' annotate flag).
 */
void __tsan_acquire(void *addr) __attribute__((weak));
void __tsan_release(void *addr) __attribute__((weak));
void __tsan_mutex_create(void *addr, unsigned flags) __attribute__((weak));
void __tsan_mutex_destroy(void *addr, unsigned flags) __attribute__((weak));
void __tsan_mutex_pre_lock(void *addr, unsigned flags) __attribute__((weak));
void __tsan_mutex_post_lock(void *addr, unsigned flags, int recursion) __attribute__((weak));
int __tsan_mutex_pre_unlock(void *addr, unsigned flags) __attribute__((weak));
void __tsan_mutex_post_unlock(void *addr, unsigned flags) __attribute__((weak));
/* The flags of <sanitizer/tsan_interface.h> that the mutex passes. */
#define JP_TSAN_TRY_LOCK	(1u << 4)
#define JP_TSAN_TRY_LOCK_FAILED	(1u << 5)

/* True in a process that runs ThreadSanitizer. */
static inline int jp__tsan_on(void)
{
	return __tsan_acquire != NULL;
}

/*
 * Happens-before for every race detector at once: valgrind's helgrind and
 * drd (client requests, inert outside valgrind) and ThreadSanitizer.
 * before() on the releasing side, after() on the acquiring side.
 */
static inline void jp__hb_before(const void *obj)
{
	JP_HB_BEFORE(obj);
	if (jp__tsan_on())
		__tsan_release((void *)obj);
}

static inline void jp__hb_after(const void *obj)
{
	if (jp__tsan_on())
		__tsan_acquire((void *)obj);
	JP_HB_AFTER(obj);
}

/*
 * The same, only in a process that runs a detector: jp__annotate is set
 * once, when the library is loaded (os.c), under valgrind or TSan.  The
 * paths of every element, object and reader use these, so that outside a
 * detector an annotation costs one predictable branch on a flag that never
 * changes (a valgrind client request costs a dozen instructions even
 * outside valgrind).
 */
extern JP_HIDDEN bool jp__annotate;
#define JP_HB_RELEASE(obj) do { if (jp_unlikely(jp__annotate)) jp__hb_before(obj); } while (0)
#define JP_HB_ACQUIRE(obj) do { if (jp_unlikely(jp__annotate)) jp__hb_after(obj); } while (0)

/* ---- a file the library cannot write (msg.c) ------------------------- */
/*
 * "jpsync: warning: JPSYNC_<var>: cannot write <path> (errno <err>)<tail>\n"
 * on stderr, in one write, without allocating (the statistics file, the
 * heap profile).
 */
void jp__warn_cannot_write(const char *var, const char *path, int err, const char *tail);

/* ---- unrecoverable misuse (msg.c) ------------------------------------ */
/*
 * Print "jpsync: <what>\n" (or "jpsync: <what> of 0x<ptr>\n") on stderr and
 * abort.  Neither allocates memory, so both are safe inside the allocator.
 */
_Noreturn void jp__die(const char *what) JP_COLD;
_Noreturn void jp__die_ptr(const char *what, const void *ptr) JP_COLD;
/*
 * A damaged block: "jpsync: <what> of <ptr> (<size> bytes): bytes <first>
 * to <last> changed[ (<note>)]"; size SIZE_MAX and first > last leave
 * their parts out, note may be NULL.  Offsets are from ptr.  Also without
 * allocating.
 */
_Noreturn void jp__die_block(const char *what, const void *ptr, size_t size,
			     long long first, long long last, const char *note) JP_COLD;
/*
 * The same, then the stacks (stack ids of base/stack.h, 0: none) where the
 * block was allocated and where it was freed, each as "  allocated at:"
 * (or "  freed at:", "  first freed at:" for a double free) and a line
 * "    #i <frame>" per frame (jp__stack_put_pc's format).
 */
/* One stack of the depot into buf (jp__str_add): "  <label>\n" (label
 * not NULL), then
 * "    #i <frame>\n" per frame; nothing for an id the depot does not hold.
 * True when a frame printed in the file form (not named). */
bool jp__put_site(char *buf, size_t cap, size_t *len, const char *label, uint32_t id);
_Noreturn void jp__die_block_at(const char *what, const void *ptr, size_t size,
				long long first, long long last, const char *note,
				uint32_t alloc_site, uint32_t free_site) JP_COLD;

#endif /* JP_INTERNAL_H */
