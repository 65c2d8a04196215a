/*
 * stack.c - stack capture, the depot of captured stacks, and the printer
 * of a code address (stack.h says what each promises).
 *
 * Why _Unwind_Backtrace: it is the unwinder every C++ exception already
 * uses, ships with the compiler (libgcc_s, or libgcc_eh in a static link)
 * on every target we build for, reads the .eh_frame tables that the
 * compilers emit by default, and needs no frame pointers.  glibc's
 * backtrace() is the same unwinder behind a dlopen of libgcc_s on its
 * first call, and that dlopen allocates: unusable inside malloc.
 *
 * Why not only _Unwind_Backtrace: it finds and runs each frame's unwind
 * program every time, about 18,000 instructions for a capture of 8
 * frames inside malloc, the cost of check mode, leak mode and the heap
 * profile.  On x86_64 the cached walk of stack_cfi.c goes first (a few
 * hundred instructions a capture) and hands over to the unwinder at any
 * frame it does not handle.  Why not libunwind's unw_backtrace, which
 * caches the same way: Debian 12's libunwind (1.6.2) opens a pipe without
 * O_CLOEXEC in the process on first use, which a preloaded allocator must
 * not do to the program it runs (children would inherit it), and its
 * cache cannot be told that an object was unloaded.
 */
#include "stack.h"
#include "stack_cfi.h"
#include "os.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <unwind.h>

void (*jp__stack_hook)(void);

/* The capture under way on this thread (initial-exec: no allocation on the
 * first access, which may be inside malloc). */
static __thread bool st_busy __attribute__((tls_model("initial-exec")));

/* ---- this library's code: [self_lo, self_hi) ---------------------------- */

/* 0 until found; then the executable segment holding this file's code.
 * relaxed: both words are the same on every thread that computes them,
 * and a thread that sees self_hi 0 only computes them again. */
static _Atomic uintptr_t self_lo, self_hi;

static int self_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t me = (uintptr_t)(void *)jp__stack_capture;

	(void)size;
	(void)arg;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) != 0 &&
		    me >= lo && me - lo < ph->p_memsz) {
			atomic_store_explicit(&self_lo, lo, memory_order_relaxed);
			atomic_store_explicit(&self_hi, lo + ph->p_memsz, memory_order_relaxed);
			return 1;
		}
	}
	return 0;
}

/* ---- capture ------------------------------------------------------------ */

static _Unwind_Reason_Code walk_one(struct _Unwind_Context *ctx, void *arg)
{
	return jp__stack_walk_add(arg, (uintptr_t)_Unwind_GetIP(ctx)) ?
	       _URC_END_OF_STACK : _URC_NO_REASON;
}

int jp__stack_mode;

/* noinline: the frame to skip is this function's own (and its frame
 * pointer is where the cached walk starts). */
__attribute__((noinline))
unsigned jp__stack_capture(uintptr_t *pcs, unsigned max, unsigned skip, bool self)
{
	/* skip + 1: the walk starts in this function's frame. */
	struct jp__stack_walk w = { pcs, max > JP_STACK_MAX ? JP_STACK_MAX : max, 0, skip + 1,
			  self, 0, 0 };

	if (st_busy || w.max == 0)
		return 0;
	st_busy = true;
	if (self) {
		if (atomic_load_explicit(&self_hi, memory_order_relaxed) == 0)
			dl_iterate_phdr(self_phdr, NULL);
		w.lo = atomic_load_explicit(&self_lo, memory_order_relaxed);
		w.hi = atomic_load_explicit(&self_hi, memory_order_relaxed);
	}
	if (jp__stack_hook != NULL)
		jp__stack_hook();
#if JP_STACK_CFI
	if (jp__stack_mode != JP_STACK_UNWINDER &&
	    jp__stack_cfi_walk(&w, __builtin_frame_address(0))) {
		st_busy = false;
		return w.n;
	}
	/* The cached walk met a frame it does not handle: walk again from
	 * the start, the unwinder's way. */
	w.n = 0;
	w.skip = skip + 1;
	w.self = self;
	if (jp__stack_mode == JP_STACK_CACHED) {
		st_busy = false;
		return 0;
	}
#endif
	_Unwind_Backtrace(walk_one, &w);
	st_busy = false;
	return w.n;
}

/* ---- the depot ---------------------------------------------------------- */

/*
 * An open-addressed table of DEPOT_SLOTS slots, mapped on first use
 * (demand-paged: a slot costs memory once it is written).  A slot's tag is
 * 0 (empty), DEPOT_BUSY (claimed, being written) or the stack's hash with
 * bit 0 set (published).  An inserter claims an empty slot with a CAS
 * from 0 to DEPOT_BUSY, writes the pcs, then stores the hash with release;
 * a reader that loads a hash with acquire sees the pcs written before it.
 * A reader passes a busy slot by, so two threads inserting one stack at
 * once may both insert it: two ids for one stack, which costs a slot and
 * nothing else.  The id of slot i is i + 1.
 */
#define DEPOT_SLOTS	16384u
#define DEPOT_PROBES	64u
#define DEPOT_BUSY	2u

struct depot_slot {
	_Atomic uint32_t tag;
	uint32_t n;
	uintptr_t pc[JP_STACK_MAX];
};

static void *_Atomic depot;

void *jp__stack_table(void *_Atomic *slot, size_t size, const char *race)
{
	/* acquire: the mapping's zeroes are ours to read (they are the
	 * kernel's, but the pointer is the publication). */
	void *t = atomic_load_explicit(slot, memory_order_acquire), *none = NULL;

	if (t != NULL)
		return t;
	if (jp__os_map(&t, size) != 0)
		return NULL;
	if (race != NULL)
		JP_BENIGN_RACE(t, size, race);
	/* acq_rel: publish ours, or see the winner's. */
	if (atomic_compare_exchange_strong_explicit(slot, &none, t, memory_order_acq_rel,
						    memory_order_acquire))
		return t;
	jp__os_unmap(t, size);
	return none;
}

static struct depot_slot *depot_get(void)
{
	return jp__stack_table(&depot, DEPOT_SLOTS * sizeof(struct depot_slot), NULL);
}

static uint32_t depot_hash(const uintptr_t *pcs, unsigned n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (unsigned i = 0; i < n; i++) {
		h ^= (uint64_t)pcs[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	return (uint32_t)h | 1u;	/* never 0 nor DEPOT_BUSY */
}

uint32_t jp__stack_depot_put(const uintptr_t *pcs, unsigned n)
{
	struct depot_slot *d;
	uint32_t h, i;

	if (n == 0)
		return 0;
	if (n > JP_STACK_MAX)
		n = JP_STACK_MAX;
	d = depot_get();
	if (d == NULL)
		return 0;
	h = depot_hash(pcs, n);
	for (uint32_t k = 0; k < DEPOT_PROBES; k++) {
		struct depot_slot *s;
		uint32_t tag, zero = 0;

		i = (h + k) & (DEPOT_SLOTS - 1);
		s = &d[i];
		/* acquire: pairs with the release that published the slot. */
		tag = atomic_load_explicit(&s->tag, memory_order_acquire);
		if (tag == h) {
			JP_HB_ACQUIRE(s);
			if (s->n == n && memcmp(s->pc, pcs, n * sizeof *pcs) == 0)
				return i + 1;
			continue;
		}
		if (tag != 0)
			continue;
		/* relaxed: the CAS only claims the slot; the release below
		 * publishes what is written into it. */
		if (!atomic_compare_exchange_strong_explicit(&s->tag, &zero, DEPOT_BUSY,
							     memory_order_relaxed,
							     memory_order_relaxed))
			continue;
		s->n = n;
		memcpy(s->pc, pcs, n * sizeof *pcs);
		JP_HB_RELEASE(s);
		atomic_store_explicit(&s->tag, h, memory_order_release);
		return i + 1;
	}
	return 0;	/* full around this hash */
}

unsigned jp__stack_depot_get(uint32_t id, uintptr_t *pcs, unsigned max)
{
	struct depot_slot *d = atomic_load_explicit(&depot, memory_order_acquire), *s;
	uint32_t tag;
	unsigned n;

	if (d == NULL || id == 0 || id > DEPOT_SLOTS)
		return 0;
	s = &d[id - 1];
	/* acquire: pairs with the release that published the slot. */
	tag = atomic_load_explicit(&s->tag, memory_order_acquire);
	if (tag == 0 || tag == DEPOT_BUSY)
		return 0;
	JP_HB_ACQUIRE(s);
	n = s->n < max ? s->n : max;
	memcpy(pcs, s->pc, n * sizeof *pcs);
	return n;
}

/* ---- the printer -------------------------------------------------------- */

/*
 * The file form is glibc backtrace_symbols' and what addr2line takes as it
 * is (addr2line -f -e file +0xoff): the offset is from the object's load
 * bias, so the address the object's symbol table and DWARF use, for a PIE,
 * a fixed-address program or a shared library alike.  pc is a return
 * address: addr2line may name the line after the call.
 */
bool jp__stack_put_pc(char *buf, size_t cap, size_t *len, uintptr_t pc)
{
	Dl_info info;
	struct link_map *lm = NULL;
	char hex[24];

	if (pc != 0 && dladdr1((void *)pc, &info, (void **)&lm, RTLD_DL_LINKMAP) != 0) {
		if (info.dli_sname != NULL && info.dli_saddr != NULL) {
			jp__str_add(buf, cap, len, info.dli_sname);
			jp__str_add(buf, cap, len, "+");
			jp__str_add(buf, cap, len,
				    jp__fmt_hex(hex, pc - (uintptr_t)info.dli_saddr));
			jp__str_add(buf, cap, len, " (");
			jp__str_add(buf, cap, len, jp__fmt_hex(hex, pc));
			jp__str_add(buf, cap, len, ")");
			return false;
		}
		if (info.dli_fname != NULL && info.dli_fname[0] != '\0') {
			jp__str_add(buf, cap, len, info.dli_fname);
			jp__str_add(buf, cap, len, "(+");
			jp__str_add(buf, cap, len,
				    jp__fmt_hex(hex, pc - (lm != NULL ? (uintptr_t)lm->l_addr
								: (uintptr_t)info.dli_fbase)));
			jp__str_add(buf, cap, len, ") (");
			jp__str_add(buf, cap, len, jp__fmt_hex(hex, pc));
			jp__str_add(buf, cap, len, ")");
			return true;
		}
	}
	jp__str_add(buf, cap, len, jp__fmt_hex(hex, pc));
	return false;
}
