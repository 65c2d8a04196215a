/*
 * stack_cfi.c - the cached walk of stack capture, x86_64 only (stack.c
 * calls it first, stack_cfi.h is its contract).
 *
 * Why a second walk: _Unwind_Backtrace finds each frame's FDE (a search of
 * the object's .eh_frame_hdr table) and runs its CFA program every time,
 * about 1,700 instructions a frame; check mode captures at every
 * allocation and free, and a program calls malloc from few call sites.
 * So the rule that the CFA program yields at a return address, "CFA is
 * rsp or rbp plus a constant, the return address is at CFA - 8, the
 * caller's rbp is at CFA + k or unchanged", is computed once (from the
 * FDE that libgcc's own _Unwind_Find_FDE finds) and kept in a table keyed
 * by the pc; a walk then costs a few loads a frame.  Anything else
 * (a signal frame, a CFA expression, stack realignment through another
 * register, a pc without an FDE, an opcode not handled here) makes the
 * whole capture start again with _Unwind_Backtrace, so the frames are
 * always the unwinder's.
 *
 * An object's code can be replaced by dlclose and a dlopen at the same
 * address: each entry carries the loader's count of unloads (dlpi_subs)
 * at the time it was computed, and matches only while that count stands.
 * The table is shared by all threads, one seqlock per slot: a writer
 * claims the slot by making its sequence odd (a CAS; a writer that loses
 * only leaves the rule uncached), writes, then makes it even; a reader
 * takes the entry only when the sequence is even and the same before and
 * after its loads.  No lock: a fork at any instruction leaves the child a
 * usable table (a slot left odd there is only never cached again).
 */
#include "stack_cfi.h"
#include "os.h"

#if JP_STACK_CFI

#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* libgcc's (unwind-dw2-fde.h, not installed); exported by libgcc_s and
 * libgcc_eh since GCC 3.0, and by LLVM's libunwind. */
struct dwarf_eh_bases {
	void *tbase;
	void *dbase;
	void *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

#define CFI_BITS	12
#define CFI_SLOTS	(1u << CFI_BITS)

/* A rule, as cached: */
#define RULE_OK		1u	/* computed; the bits below hold */
#define RULE_RBP	2u	/* CFA = rbp + off (else rsp + off) */
#define RULE_RBP_SAVED	4u	/* the caller's rbp is at CFA + 8 * k */
#define RULE_LAST	8u	/* the return address is undefined: outermost */
#define RULE_PUNT	16u	/* not for this walk: use the unwinder */
#define RULE_OFF(r)	((int16_t)((r) >> 8))
#define RULE_K(r)	((int8_t)((r) >> 24))

struct cfi_slot {
	_Atomic uint64_t seq, pc, gen;
	_Atomic uint32_t rule;
};

static void *_Atomic cfi_table;
_Atomic unsigned long jp__stack_cfi_computed;

static struct cfi_slot *cfi_get(void)
{
	/* The slots are atomics under a seqlock; valgrind's race detectors
	 * do not see atomic instructions as synchronisation. */
	return jp__stack_table(&cfi_table, CFI_SLOTS * sizeof(struct cfi_slot),
			       "stack.c: seqlocked rule cache");
}

static int subs_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	/* dlpi_subs is there since glibc 2.4: size says whether it is. */
	*(uint64_t *)arg = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs
			   ? info->dlpi_subs : UINT64_MAX;
	return 1;
}

struct cfi_rd {
	const uint8_t *p, *end;
	bool bad;
};

/* A LEB128 number, sign-extended when sign is set. */
static uint64_t rd_leb(struct cfi_rd *r, bool sign)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (r->p < r->end && shift < 64) {
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if ((b & 0x80) == 0) {
			if (sign && shift < 64 && (b & 0x40) != 0)
				v |= ~(uint64_t)0 << shift;
			return v;
		}
	}
	r->bad = true;
	return 0;
}

static uint64_t rd_uleb(struct cfi_rd *r)
{
	return rd_leb(r, false);
}

static int64_t rd_sleb(struct cfi_rd *r)
{
	return (int64_t)rd_leb(r, true);
}

static uint64_t rd_fixed(struct cfi_rd *r, unsigned size)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < size) {
		r->bad = true;
		return 0;
	}
	for (unsigned i = 0; i < size; i++)	/* little-endian */
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += size;
	return v;
}

/* The size of a pointer in encoding enc (DW_EH_PE_*); 0 for those this
 * walk does not read (leb128, aligned, omit). */
static unsigned enc_size(uint8_t enc)
{
	if (enc == 0xff || (enc & 0x70) == 0x50)
		return 0;
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: return 8;
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	default: return 0;
	}
}

/* What the CFA program says, for the registers the walk uses. */
enum { HOW_SAME, HOW_OFFSET, HOW_UNDEF, HOW_OTHER };
struct cfi_state {
	uint64_t cfa_reg;
	int64_t cfa_off;
	int how[3];		/* rbp, rsp, return address */
	int64_t off[3];
};
#define REG_RBP	6
#define REG_RSP	7
#define REG_RA	16

static int reg_index(uint64_t reg)
{
	return reg == REG_RBP ? 0 : reg == REG_RSP ? 1 : reg == REG_RA ? 2 : -1;
}

static void set_reg(struct cfi_state *st, uint64_t reg, int how, int64_t off)
{
	int i = reg_index(reg);

	if (i >= 0) {
		st->how[i] = how;
		st->off[i] = off;
	}
}

/*
 * Run the CFA program in r from code address loc until the row for target
 * is complete.  init: the state after the CIE's program (for
 * DW_CFA_restore).  Returns false for what this walk does not handle.
 */
static bool cfi_run(struct cfi_rd *r, struct cfi_state *st, const struct cfi_state *init,
		    uintptr_t loc, uintptr_t target, uint64_t ca, int64_t da)
{
	struct cfi_state saved[4];
	unsigned depth = 0;

	while (r->p < r->end && !r->bad) {
		uint8_t op = *r->p++;
		uint64_t reg, u;
		int i;

		switch (op >> 6) {
		case 1:
			loc += (op & 0x3f) * ca;
			if (loc > target)
				return true;
			continue;
		case 2:
			u = rd_uleb(r);
			set_reg(st, op & 0x3f, HOW_OFFSET, (int64_t)u * da);
			continue;
		case 3:
			if ((i = reg_index(op & 0x3f)) >= 0) {
				st->how[i] = init->how[i];
				st->off[i] = init->off[i];
			}
			continue;
		}
		switch (op) {
		case 0x00:	/* nop */
			break;
		case 0x02: case 0x03: case 0x04:	/* advance_loc1, 2, 4 */
			loc += rd_fixed(r, op == 0x02 ? 1 : op == 0x03 ? 2 : 4) * ca;
			if (loc > target)
				return !r->bad;
			break;
		case 0x05:	/* offset_extended */
			reg = rd_uleb(r);
			u = rd_uleb(r);
			set_reg(st, reg, HOW_OFFSET, (int64_t)u * da);
			break;
		case 0x06:	/* restore_extended */
			if ((i = reg_index(rd_uleb(r))) >= 0) {
				st->how[i] = init->how[i];
				st->off[i] = init->off[i];
			}
			break;
		case 0x07:	/* undefined */
			set_reg(st, rd_uleb(r), HOW_UNDEF, 0);
			break;
		case 0x08:	/* same_value */
			set_reg(st, rd_uleb(r), HOW_SAME, 0);
			break;
		case 0x09:	/* register */
			reg = rd_uleb(r);
			(void)rd_uleb(r);
			set_reg(st, reg, HOW_OTHER, 0);
			break;
		case 0x0a:	/* remember_state */
			if (depth == 4)
				return false;
			saved[depth++] = *st;
			break;
		case 0x0b:	/* restore_state: the CFA rule too */
			if (depth == 0)
				return false;
			*st = saved[--depth];
			break;
		case 0x0c:	/* def_cfa */
			st->cfa_reg = rd_uleb(r);
			st->cfa_off = (int64_t)rd_uleb(r);
			break;
		case 0x0d:	/* def_cfa_register */
			st->cfa_reg = rd_uleb(r);
			break;
		case 0x0e:	/* def_cfa_offset */
			st->cfa_off = (int64_t)rd_uleb(r);
			break;
		case 0x10: case 0x16:	/* expression, val_expression */
			reg = rd_uleb(r);
			u = rd_uleb(r);
			if (u > (uint64_t)(r->end - r->p))
				return false;
			r->p += u;
			set_reg(st, reg, HOW_OTHER, 0);
			break;
		case 0x11:	/* offset_extended_sf */
			reg = rd_uleb(r);
			set_reg(st, reg, HOW_OFFSET, rd_sleb(r) * da);
			break;
		case 0x12:	/* def_cfa_sf */
			st->cfa_reg = rd_uleb(r);
			st->cfa_off = rd_sleb(r) * da;
			break;
		case 0x13:	/* def_cfa_offset_sf */
			st->cfa_off = rd_sleb(r) * da;
			break;
		case 0x14: case 0x15:	/* val_offset, val_offset_sf */
			reg = rd_uleb(r);
			(void)rd_uleb(r);	/* same length either way */
			set_reg(st, reg, HOW_OTHER, 0);
			break;
		case 0x2e:	/* GNU_args_size */
			(void)rd_uleb(r);
			break;
		case 0x2f:	/* GNU_negative_offset_extended */
			reg = rd_uleb(r);
			u = rd_uleb(r);
			set_reg(st, reg, HOW_OFFSET, -(int64_t)u * da);
			break;
		default:	/* set_loc, def_cfa_expression, vendor ops */
			return false;
		}
	}
	return !r->bad;
}

/* The rule at return address pc, from its FDE. */
static uint32_t cfi_rule(uintptr_t pc)
{
	struct dwarf_eh_bases bases;
	const uint8_t *fde, *cie;
	struct cfi_rd r;
	struct cfi_state st = { REG_RSP, 8, { HOW_SAME, HOW_SAME, HOW_SAME }, { 0, 0, 0 } }, init;
	uint32_t len, rule = RULE_OK;
	int32_t cie_off;
	uint64_t ca, ra;
	int64_t da;
	uint8_t fde_enc = 0, version;
	const char *aug;
	unsigned size;

	/* pc - 1: the call, which may be the last instruction of its FDE
	 * (a call to a function that does not return). */
	fde = _Unwind_Find_FDE((void *)(pc - 1), &bases);
	if (fde == NULL)
		return RULE_PUNT;
	memcpy(&len, fde, 4);
	memcpy(&cie_off, fde + 4, 4);
	if (len == 0 || len == 0xffffffffu)	/* none, or 64-bit DWARF */
		return RULE_PUNT;
	cie = fde + 4 - cie_off;
	memcpy(&len, cie, 4);
	if (len == 0 || len == 0xffffffffu)
		return RULE_PUNT;
	r = (struct cfi_rd){ cie + 8, cie + 4 + len, false };
	version = *r.p++;
	aug = (const char *)r.p;
	if ((version != 1 && version != 3) || memchr(aug, '\0', (size_t)(r.end - r.p)) == NULL)
		return RULE_PUNT;
	r.p += strlen(aug) + 1;
	ca = rd_uleb(&r);
	da = rd_sleb(&r);
	ra = version == 1 ? rd_fixed(&r, 1) : rd_uleb(&r);
	if (ra != REG_RA)
		return RULE_PUNT;
	if (aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		const uint8_t *aend = r.p + alen;

		if (r.bad || alen > (uint64_t)(r.end - r.p))
			return RULE_PUNT;
		for (const char *a = aug + 1; *a != '\0'; a++) {
			if (*a == 'R') {
				fde_enc = (uint8_t)rd_fixed(&r, 1);
			} else if (*a == 'L') {
				(void)rd_fixed(&r, 1);
			} else if (*a == 'P') {
				size = enc_size((uint8_t)rd_fixed(&r, 1));
				if (size == 0)
					return RULE_PUNT;
				r.p += size;
			} else {	/* 'S' (a signal frame), or unknown */
				return RULE_PUNT;
			}
		}
		r.p = aend;
	} else if (aug[0] != '\0') {
		return RULE_PUNT;
	}
	if (r.bad || !cfi_run(&r, &st, &st, 0, 0, ca, da))
		return RULE_PUNT;
	init = st;
	/* The FDE: length, CIE pointer, pc_begin, pc_range, augmentation. */
	memcpy(&len, fde, 4);
	r = (struct cfi_rd){ fde + 8, fde + 4 + len, false };
	size = enc_size(fde_enc);
	if (size == 0)
		return RULE_PUNT;
	r.p += 2 * size;
	if (aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);

		if (r.bad || alen > (uint64_t)(r.end - r.p))
			return RULE_PUNT;
		r.p += alen;
	}
	if (!cfi_run(&r, &st, &init, (uintptr_t)bases.func, pc - 1, ca, da))
		return RULE_PUNT;

	if ((st.cfa_reg != REG_RSP && st.cfa_reg != REG_RBP) ||
	    st.cfa_off < INT16_MIN || st.cfa_off > INT16_MAX || st.how[1] != HOW_SAME)
		return RULE_PUNT;
	if (st.cfa_reg == REG_RBP)
		rule |= RULE_RBP;
	rule |= (uint32_t)(uint16_t)st.cfa_off << 8;
	if (st.how[2] == HOW_UNDEF)
		return rule | RULE_LAST;
	if (st.how[2] != HOW_OFFSET || st.off[2] != -8)
		return RULE_PUNT;
	if (st.how[0] == HOW_OFFSET) {
		if (st.off[0] % 8 != 0 || st.off[0] / 8 < INT8_MIN || st.off[0] / 8 > INT8_MAX)
			return RULE_PUNT;
		rule |= RULE_RBP_SAVED | (uint32_t)(uint8_t)(st.off[0] / 8) << 24;
	} else if (st.how[0] != HOW_SAME) {
		return RULE_PUNT;
	}
	return rule;
}

/* The rule at pc: from the table, or computed and put there. */
static uint32_t cfi_lookup(struct cfi_slot *t, uintptr_t pc, uint64_t gen)
{
	struct cfi_slot *s = &t[(pc * 0x9e3779b97f4a7c15ULL) >> (64 - CFI_BITS)];
	/* acquire: pairs with the writer's release of an even sequence, so
	 * the loads below see at least what was written before it. */
	uint64_t q = atomic_load_explicit(&s->seq, memory_order_acquire);
	uint32_t rule;

	if ((q & 1) == 0) {
		/* relaxed: validated by the sequence below. */
		uintptr_t spc = atomic_load_explicit(&s->pc, memory_order_relaxed);
		uint64_t sgen = atomic_load_explicit(&s->gen, memory_order_relaxed);

		rule = atomic_load_explicit(&s->rule, memory_order_relaxed);
		/* acquire fence: the loads above happen before the re-read
		 * of the sequence (a writer that started meanwhile shows). */
		atomic_thread_fence(memory_order_acquire);
		if (spc == pc && sgen == gen && (rule & RULE_OK) != 0 &&
		    atomic_load_explicit(&s->seq, memory_order_relaxed) == q)
			return rule;
	}
	rule = cfi_rule(pc);
	/* relaxed: a count for tests, read after the captures it counts. */
	atomic_fetch_add_explicit(&jp__stack_cfi_computed, 1, memory_order_relaxed);
	/* relaxed CAS: it only claims the slot; the release fence orders
	 * the odd sequence before the stores of the entry, and the release
	 * store of the even sequence publishes them. */
	if ((q & 1) == 0 &&
	    atomic_compare_exchange_strong_explicit(&s->seq, &q, q + 1,
						    memory_order_relaxed, memory_order_relaxed)) {
		atomic_thread_fence(memory_order_release);
		atomic_store_explicit(&s->pc, pc, memory_order_relaxed);
		atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
		atomic_store_explicit(&s->rule, rule | RULE_OK, memory_order_relaxed);
		atomic_store_explicit(&s->seq, q + 2, memory_order_release);
	}
	return rule;
}

/*
 * The walk from fp, the frame pointer of jp__stack_capture: [fp] is the
 * caller's rbp, [fp + 8] the return address, fp + 16 the caller's rsp.
 * Fills w as walk_one would; returns false when the unwinder must walk
 * instead (w is then partly filled).  no_sanitize_address: it reads
 * saved registers in other functions' frames.
 */
__attribute__((no_sanitize_address))
bool jp__stack_cfi_walk(struct jp__stack_walk *w, void *fp)
{
	const uintptr_t *f = fp;
	uintptr_t rbp = f[0], pc = f[1], rsp = (uintptr_t)(f + 2), cfa;
	uint64_t gen = 0;
	struct cfi_slot *t = cfi_get();

	if (t == NULL)
		return false;
	dl_iterate_phdr(subs_phdr, &gen);
	w->skip--;		/* this function's frame, already left */
	for (;;) {
		uint32_t rule;

		if (jp__stack_walk_add(w, pc))
			return true;
		rule = cfi_lookup(t, pc, gen);
		if ((rule & RULE_PUNT) != 0)
			return false;
		if ((rule & RULE_LAST) != 0)
			return true;
		cfa = ((rule & RULE_RBP) != 0 ? rbp : rsp) + (uintptr_t)(intptr_t)RULE_OFF(rule);
		/* A frame's CFA lies above its stack pointer (the return
		 * address at least is between them); anything else is a
		 * stack this walk does not understand. */
		if (cfa <= rsp || (cfa & 7) != 0)
			return false;
		pc = *(const uintptr_t *)(cfa - 8);
		if ((rule & RULE_RBP_SAVED) != 0)
			rbp = *(const uintptr_t *)(cfa + 8 * (intptr_t)RULE_K(rule));
		rsp = cfa;
	}
}

#endif /* JP_STACK_CFI */
