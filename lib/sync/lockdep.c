/*
 * lockdep.c - lock-order checking for jp_mutex and jp_rwlock
 * (JPSYNC_LOCKDEP=1).
 *
 * Each thread keeps the stack of locks it holds (a jp_mutex, or a jp_rwlock
 * taken for reading or writing), with the code address of each
 * acquisition.  Both modes of a jp_rwlock take part in the orders: a reader
 * waits behind a waiting writer (writers are not starved), so "read A, then
 * B" against "B, then write A" deadlocks, and so do two readers taking two
 * rwlocks in opposite orders while writers wait for both.  Before a thread blocks on mutex B while holding A,
 * the order "A before B" is recorded in a process-wide table of edges, and
 * the table is asked whether "B before A" was ever recorded.  If it was, the
 * two orders can deadlock, and one report names both mutexes and the code
 * addresses (symbols, through dladdr) of both acquisitions in both orders;
 * the program goes on.  Each inverted pair is reported once.  Also
 * reported: unlocking a mutex the thread does not hold, locking one it
 * already holds, and a thread exiting (pthread_exit or return from its start
 * routine) while it holds one.
 *
 * The same stacks serve JPSYNC_CHECK=1 (JP_SYNC_CHECK), without the orders:
 * there, unlocking a lock the thread does not hold, and a jp_cond wait with
 * a mutex the thread does not hold (jp__lockdep_holds), are misuse that
 * aborts through jp__sync_misuse, with lockdep on or not.
 *
 * Nothing here calls malloc: the allocator may one day take jp_mutexes and
 * the preload module sends malloc to the allocator.  The per-thread stacks
 * and the edge table are mapped with jp__os_map; the table lives under an
 * internal jp_mutex that is not itself checked.  Only direct inversions
 * (two mutexes) are detected, not longer cycles.
 */
#include "sync.h"
#include "base/os.h"
#include "base/lock.h"
#include "base/stack.h"
#include "base/thread_exit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define LD_HELD_MAX	48		/* deeper nesting is counted, not recorded */
#define LD_EDGE_BITS	16
#define LD_EDGES	(1u << LD_EDGE_BITS)
#define LD_DEAD		((uintptr_t)1)	/* a forgotten edge (a destroyed mutex) */

struct ld_held {
	const void *m;
	void *pc;
	int kind;		/* JP__LD_MUTEX, _READ or _WRITE */
};

struct ld_thread {
	size_t map_size;
	int tid;
	unsigned depth;
	struct ld_held held[LD_HELD_MAX];
};

/* "b was taken at pc_b by thread tid while it held a, taken at pc_a". */
struct ld_edge {
	uintptr_t a, b;		/* a == 0: empty slot; a == LD_DEAD: forgotten */
	void *pc_a, *pc_b;
	int kind_a, kind_b;
	int tid;
	int reported;
};

/* Guards everything below.  The base internal lock, not a jp_mutex:
 * lockdep observes jp_mutex through the hooks the mutex calls, and takes
 * nothing of it in return. */
static struct jp__lock ld_lock;

/* At load time, before any thread can take it: tell helgrind and drd that
 * the lock word is raced on purpose. */
__attribute__((constructor)) static void ld_lock_init(void)
{
	jp__lock_init(&ld_lock);
}
static struct ld_edge *ld_edges;
static unsigned ld_nedges;
static int ld_full_warned;

static bool ld_started;		/* the fork handlers are installed */
static size_t ld_page;			/* the size of a per-thread map */
static __thread struct ld_thread *ld_self __attribute__((tls_model("initial-exec")));

/* ---- reports: formatted on the stack, one write each ------------------- */

#define PFX "jpsync: lockdep: "

struct ld_buf {
	char s[3072];
	size_t n;
	bool unnamed;		/* put_pc printed a file offset, not a name */
};

static void put(struct ld_buf *b, const char *s)
{
	jp__str_add(b->s, sizeof b->s, &b->n, s);
}

static void put_hex(struct ld_buf *b, uintptr_t v)
{
	char t[24];

	put(b, jp__fmt_hex(t, v));
}

static void put_dec(struct ld_buf *b, uint64_t v)
{
	char t[24];

	put(b, jp__fmt_u64(t, v));
}

/* One frame, in the format of every report of the library (base/stack.h). */
static void put_pc(struct ld_buf *b, void *pc)
{
	if (jp__stack_put_pc(b->s, sizeof b->s, &b->n, (uintptr_t)pc))
		b->unnamed = true;
}

/* Set once the hint below has been printed: once a process is enough. */
static _Atomic int ld_hinted;

static void flush(struct ld_buf *b)
{
	/* relaxed: a flag that only limits repetition. */
	if (b->unnamed && !atomic_exchange_explicit(&ld_hinted, 1, memory_order_relaxed))
		put(b, PFX "  (for file(+0xoff): addr2line -f -e file +0xoff;"
		       " link with -rdynamic for names)\n");
	jp__os_write(2, b->s, b->n);
	b->n = 0;
	b->unnamed = false;
}

/* "mutex 0x...", "rwlock 0x... (read)", "rwlock 0x... (write)". */
static void put_lock(struct ld_buf *b, int kind, uintptr_t lock)
{
	put(b, kind == JP__LD_MUTEX ? "mutex " : "rwlock ");
	put_hex(b, lock);
	if (kind == JP__LD_READ)
		put(b, " (read)");
	else if (kind == JP__LD_WRITE)
		put(b, " (write)");
}

/* ---- per-thread state --------------------------------------------------- */

/*
 * fork: the child must not inherit ld_lock held by a thread that does not
 * exist there; take it around fork, so the tables are whole in the child.
 */
static void ld_fork_prepare(void)
{
	jp__lock(&ld_lock);
}

static void ld_fork_release(void)
{
	jp__unlock(&ld_lock);
}

static void ld_thread_exit(void *p)
{
	struct ld_thread *t = p;
	struct ld_buf b = { .n = 0 };
	unsigned n = t->depth < LD_HELD_MAX ? t->depth : LD_HELD_MAX;

	/* Lockdep's report only: a thread may end holding a lock it never
	 * means to release, which JPSYNC_CHECK does not call misuse. */
	if (!(jp__sync_mode_get() & JP_SYNC_LOCKDEP))
		n = 0;
	for (unsigned i = 0; i < n; i++) {
		put(&b, PFX "thread ");
		put_dec(&b, (uint64_t)t->tid);
		put(&b, " exits holding ");
		put_lock(&b, t->held[i].kind, (uintptr_t)t->held[i].m);
		put(&b, " taken at ");
		put_pc(&b, t->held[i].pc);
		put(&b, "\n");
		flush(&b);
	}
	ld_self = NULL;
	jp__os_unmap(t, t->map_size);
}

static struct ld_thread *ld_thread_get(void)
{
	struct ld_thread *t = ld_self;
	void *p;
	bool first;
	size_t page;

	if (jp_likely(t != NULL))
		return t;
	/*
	 * The first thread installs the fork handlers, under ld_lock rather
	 * than pthread_once: helgrind and drd do not see pthread_once's futex
	 * as synchronisation.
	 */
	jp__lock(&ld_lock);
	first = !ld_started;
	if (first) {
		ld_started = true;
		ld_page = jp__os_page_size();
	}
	page = ld_page;
	jp__unlock(&ld_lock);
	_Static_assert(sizeof(struct ld_thread) <= 4096, "one page per thread");
	if (jp__os_map(&p, page) != 0)
		return NULL;
	t = p;
	t->map_size = page;
	t->tid = jp__os_gettid();
	ld_self = t;
	/*
	 * The thread-exit hook reports what the thread still holds at exit.
	 * Arming it (pthread_setspecific) and pthread_atfork may allocate:
	 * called with ld_self set and ld_lock free, so an allocator that takes
	 * a jp_mutex comes back here and finds its thread state.
	 */
	jp__thread_exit_arm(JP__EXIT_LOCKDEP, ld_thread_exit, t);
	if (first)
		pthread_atfork(ld_fork_prepare, ld_fork_release, ld_fork_release);
	return t;
}

/* ---- the table of orders ------------------------------------------------ */

static inline unsigned edge_hash(uintptr_t a, uintptr_t b)
{
	uint64_t x = (uint64_t)a * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)b;

	x ^= x >> 29;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	return (unsigned)(x >> (64 - LD_EDGE_BITS));
}

/* The edge a -> b, or NULL; with create, make it (NULL when full).  Locked. */
static struct ld_edge *edge_find(uintptr_t a, uintptr_t b, int create)
{
	unsigned i = edge_hash(a, b);
	struct ld_edge *dead = NULL;

	if (ld_edges == NULL) {
		void *p;

		if (!create || jp__os_map(&p, LD_EDGES * sizeof(struct ld_edge)) != 0)
			return NULL;
		ld_edges = p;
	}
	for (unsigned probes = 0; probes < LD_EDGES; probes++, i = (i + 1) & (LD_EDGES - 1)) {
		struct ld_edge *e = &ld_edges[i];

		if (e->a == a && e->b == b)
			return e;
		if (e->a == LD_DEAD && dead == NULL)
			dead = e;
		if (e->a == 0) {
			if (!create)
				return NULL;
			if (dead != NULL)
				e = dead;
			else if (ld_nedges >= LD_EDGES * 3 / 4)
				break;
			else
				ld_nedges++;
			memset(e, 0, sizeof *e);
			e->a = a;
			e->b = b;
			return e;
		}
	}
	if (create && !ld_full_warned) {
		ld_full_warned = 1;
		jp__os_puts(2, PFX "order table full; new orders are not checked\n");
	}
	return NULL;
}

static void report_inversion(const struct ld_edge *first, const struct ld_held *held,
			     const void *m, int kind, void *pc, int tid)
{
	struct ld_buf b = { .n = 0 };

	put(&b, PFX "lock order inversion between ");
	put(&b, first->kind_a == JP__LD_MUTEX ? "mutex " : "rwlock ");
	put_hex(&b, first->a);
	put(&b, first->kind_b == JP__LD_MUTEX ? " and mutex " : " and rwlock ");
	put_hex(&b, first->b);
	put(&b, "\n" PFX "  thread ");
	put_dec(&b, (uint64_t)first->tid);
	put(&b, " took ");
	put_lock(&b, first->kind_b, first->b);
	put(&b, " at ");
	put_pc(&b, first->pc_b);
	put(&b, "\n" PFX "    while holding ");
	put_lock(&b, first->kind_a, first->a);
	put(&b, " taken at ");
	put_pc(&b, first->pc_a);
	put(&b, "\n" PFX "  thread ");
	put_dec(&b, (uint64_t)tid);
	put(&b, " takes ");
	put_lock(&b, kind, (uintptr_t)m);
	put(&b, " at ");
	put_pc(&b, pc);
	put(&b, "\n" PFX "    while holding ");
	put_lock(&b, held->kind, (uintptr_t)held->m);
	put(&b, " taken at ");
	put_pc(&b, held->pc);
	put(&b, "\n" PFX "  these two orders can deadlock\n");
	flush(&b);
}

void jp__lockdep_before_lock(const void *m, int kind, void *pc)
{
	struct ld_thread *t = ld_thread_get();
	/* Inversions found, printed after ld_lock is released (see below). */
	struct {
		struct ld_edge first;
		const struct ld_held *held;
	} found[4];
	unsigned n, nfound = 0;

	if (t == NULL)
		return;
	n = t->depth < LD_HELD_MAX ? t->depth : LD_HELD_MAX;
	for (unsigned i = 0; i < n; i++) {
		if (t->held[i].m == m) {
			struct ld_buf b = { .n = 0 };

			put(&b, PFX "thread ");
			put_dec(&b, (uint64_t)t->tid);
			put(&b, " locks ");
			put_lock(&b, kind, (uintptr_t)m);
			put(&b, " at ");
			put_pc(&b, pc);
			put(&b, " that it already holds (taken at ");
			put_pc(&b, t->held[i].pc);
			put(&b, kind == JP__LD_READ && t->held[i].kind == JP__LD_READ ?
				"): self-deadlock once a writer waits\n" : "): self-deadlock\n");
			flush(&b);
			return;
		}
	}
	if (n == 0)
		return;
	jp__lock(&ld_lock);
	for (unsigned i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)t->held[i].m, bm = (uintptr_t)m;
		struct ld_edge *e = edge_find(a, bm, 0), *rev;

		if (e != NULL)
			continue;	/* this order is known, and was checked then */
		e = edge_find(a, bm, 1);
		if (e == NULL)
			break;
		e->pc_a = t->held[i].pc;
		e->pc_b = pc;
		e->kind_a = t->held[i].kind;
		e->kind_b = kind;
		e->tid = t->tid;
		rev = edge_find(bm, a, 0);
		if (rev != NULL && !rev->reported && nfound < JP_ARRAY_SIZE(found)) {
			rev->reported = e->reported = 1;
			found[nfound].first = *rev;
			found[nfound].held = &t->held[i];
			nfound++;
		}
	}
	jp__unlock(&ld_lock);
	/*
	 * Reported outside ld_lock: dladdr takes the dynamic loader's lock,
	 * and a thread inside dlopen may be running a constructor that waits
	 * for ld_lock.
	 */
	for (unsigned i = 0; i < nfound; i++)
		report_inversion(&found[i].first, found[i].held, m, kind, pc, t->tid);
}

void jp__lockdep_acquired(const void *m, int kind, void *pc)
{
	struct ld_thread *t = ld_thread_get();

	if (t == NULL)
		return;
	if (t->depth < LD_HELD_MAX) {
		t->held[t->depth].m = m;
		t->held[t->depth].pc = pc;
		t->held[t->depth].kind = kind;
	}
	t->depth++;
}

bool jp__lockdep_release(const void *m, int kind, void *pc)
{
	struct ld_thread *t = ld_thread_get();
	struct ld_buf b = { .n = 0 };
	unsigned n;

	if (t == NULL)
		return true;
	n = t->depth < LD_HELD_MAX ? t->depth : LD_HELD_MAX;
	for (unsigned i = n; i-- > 0;) {
		if (t->held[i].m == m) {
			memmove(&t->held[i], &t->held[i + 1], (n - i - 1) * sizeof t->held[0]);
			t->depth--;
			return true;
		}
	}
	if (t->depth > LD_HELD_MAX) {
		t->depth--;	/* perhaps one of those too deep to record */
		return true;
	}
	if (jp__sync_mode_get() & JP_SYNC_CHECK)
		jp__sync_misuse(kind == JP__LD_MUTEX ? "jp_mutex_unlock" : "jp_rwlock_unlock", m,
				NULL, "not held by this thread");
	put(&b, PFX "thread ");
	put_dec(&b, (uint64_t)t->tid);
	put(&b, kind == JP__LD_MUTEX ? " unlocks mutex " : " unlocks rwlock ");
	put_hex(&b, (uintptr_t)m);
	put(&b, " that it does not hold, at ");
	put_pc(&b, pc);
	put(&b, "\n");
	flush(&b);
	return false;
}

bool jp__lockdep_holds(const void *m)
{
	struct ld_thread *t = ld_thread_get();
	unsigned n;

	if (t == NULL || t->depth > LD_HELD_MAX)
		return true;	/* cannot tell */
	n = t->depth;
	for (unsigned i = 0; i < n; i++)
		if (t->held[i].m == m)
			return true;
	return false;
}

void jp__lockdep_destroy(const void *m)
{
	jp__lock(&ld_lock);
	if (ld_edges != NULL && ld_nedges != 0) {
		for (unsigned i = 0; i < LD_EDGES; i++) {
			struct ld_edge *e = &ld_edges[i];

			if (e->a > LD_DEAD && (e->a == (uintptr_t)m || e->b == (uintptr_t)m)) {
				e->a = LD_DEAD;
				e->b = 0;
			}
		}
	}
	jp__unlock(&ld_lock);
}
