/*
 * fuzz-arena.c - jp_arena against a model.
 *
 * The input creates arenas of any size (0 and absurd ones: EINVAL or
 * ENOMEM at once), allocates from them and from jp_arena_local() with any
 * size and alignment (EINVAL for an alignment that is not a power of two,
 * ENOMEM when full, never a pointer past the end or a wrapped one), resets
 * and destroys them.  The model: every block is aligned as asked, lies in no
 * other block of the same arena since its reset, keeps what was written
 * into it, and an allocation that fits in the bytes asked at create
 * (counting the worst padding of every alignment) never fails.
 */
#include "fuzz.h"

#include <jpsync/pool.h>

#include <errno.h>
#include <string.h>

#define MAX_OPS 4096
#define NA 3		/* two arenas of our own and the thread's own */
#define BLOCKS 256	/* blocks the model checks per arena */
#define MUST_CREATE ((size_t)256 << 20)
#define LOCAL_BYTES ((size_t)1 << 20)	/* jp_arena_local(3) */

struct blk {
	unsigned char *p;
	size_t size;
	uint32_t seed;
};

static struct ma {
	jp_arena_t *a;
	size_t bytes;		/* asked at create */
	size_t worst;		/* bytes since reset, with worst-case padding */
	struct blk b[BLOCKS];
	size_t n;
} ar[NA];
static uint32_t gen;

static void fill(const struct blk *b)
{
	fz_fill(b->p, b->size, 0, b->size, b->seed);
}

static void check(const struct blk *b)
{
	size_t bad = fz_check(b->p, b->size, b->seed);

	FZ_CHECK(bad == SIZE_MAX, "arena block %p of %zu bytes: byte %zu changed",
		 (void *)b->p, b->size, bad);
}

static void forget(struct ma *m)
{
	for (size_t k = 0; k < m->n; k++)
		check(&m->b[k]);
	m->n = 0;
	m->worst = 0;
}

static void op_create(struct fz *f, struct ma *m)
{
	size_t bytes = fz_size(f);
	jp_arena_t *a;
	int err;

	if (m->a != NULL)
		jp_arena_destroy(m->a);
	memset(m, 0, sizeof *m);
	if (fz_huge_skip(bytes))
		return;
	errno = 0;
	a = jp_arena_create(bytes);
	err = errno;
	FZ_TRACE("jp_arena_create(%zu) -> %p errno %d", bytes, (void *)a, err);
	if (bytes == 0) {
		FZ_CHECK(a == NULL && err == EINVAL,
			 "jp_arena_create(0): %p, errno %d, not NULL and EINVAL", (void *)a, err);
		return;
	}
	if (a == NULL) {
		FZ_CHECK(err == EINVAL || err == ENOMEM,
			 "jp_arena_create(%zu) failed with errno %d", bytes, err);
		FZ_CHECK(bytes > MUST_CREATE,
			 "jp_arena_create(%zu) failed (errno %d): small enough to succeed",
			 bytes, err);
		return;
	}
	m->a = a;
	m->bytes = bytes;
}

static void op_alloc(struct fz *f, struct ma *m)
{
	size_t size = fz_u8(f) & 1 ? fz_size(f) : fz_u8(f), align = fz_align(f), need;
	unsigned char *p;
	int err;
	bool fits;

	errno = 0;
	p = jp_arena_alloc(m->a, size, align);
	err = errno;
	FZ_TRACE("jp_arena_alloc(%zu, %zu) -> %p errno %d", size, align, (void *)p, err);
	if (align == 0 || (align & (align - 1)) != 0) {
		FZ_CHECK(p == NULL && err == EINVAL,
			 "jp_arena_alloc(%zu, align %zu): %p, errno %d, not NULL and EINVAL",
			 size, align, (void *)p, err);
		return;
	}
	fits = !__builtin_add_overflow(size, align - 1, &need) &&
	       !__builtin_add_overflow(need, m->worst, &need) && need <= m->bytes;
	if (p == NULL) {
		FZ_CHECK(err == ENOMEM, "jp_arena_alloc(%zu, %zu) failed with errno %d",
			 size, align, err);
		FZ_CHECK(!fits, "jp_arena_alloc(%zu, %zu) failed with %zu of %zu bytes used",
			 size, align, m->worst, m->bytes);
		return;
	}
	FZ_CHECK((uintptr_t)p % align == 0, "jp_arena_alloc(%zu, %zu): %p is not aligned",
		 size, align, (void *)p);
	FZ_CHECK((uintptr_t)p + size >= (uintptr_t)p,
		 "jp_arena_alloc(%zu, %zu): %p wraps around", size, align, (void *)p);
	{
		void *ps[BLOCKS];
		size_t lens[BLOCKS], k;

		for (k = 0; k < m->n; k++) {
			ps[k] = m->b[k].p;
			lens[k] = m->b[k].size;
		}
		k = fz_overlap(p, size, ps, lens, m->n);
		FZ_CHECK(k == SIZE_MAX, "jp_arena_alloc(%zu, %zu): %p overlaps block %p of %zu bytes",
			 size, align, (void *)p, ps[k], lens[k]);
	}
	/* What was used since the reset, padding at its worst; a block the
	 * model cannot count makes "fits" unknowable: treat it as full. */
	if (fits)
		m->worst = need;
	else
		m->worst = m->bytes;
	if (m->n < BLOCKS) {
		struct blk *b = &m->b[m->n++];

		b->p = p;
		b->size = size;
		b->seed = ++gen * 2654435761u;
		fill(b);	/* the whole block is writable: a block past the
				 * end of the mapping faults here */
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_target = "arena";
	return fz_single_thread();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f;
	struct ma *local = &ar[NA - 1];

	fz_init(&f, data, size);
	memset(local, 0, sizeof *local);
	local->a = jp_arena_local();
	FZ_CHECK(local->a != NULL, "jp_arena_local: NULL");
	FZ_CHECK(jp_arena_local() == local->a, "jp_arena_local: another arena");
	local->bytes = LOCAL_BYTES;
	jp_arena_reset(local->a);	/* what the last input left */
	for (unsigned n = 0; !fz_done(&f) && n < MAX_OPS; n++) {
		uint8_t op = fz_u8(&f);
		struct ma *m = &ar[fz_u8(&f) % NA];

		if (m != local && (m->a == NULL || op % 8 == 0)) {
			op_create(&f, m);
			continue;
		}
		switch (op % 8) {
		case 0: case 1: case 2: case 3: case 4:
			op_alloc(&f, m);
			break;
		case 5:
			forget(m);
			jp_arena_reset(m->a);
			break;
		case 6:
			/* NULL: EINVAL, and reset/destroy do nothing */
			errno = 0;
			FZ_CHECK(jp_arena_alloc(NULL, 1, 1) == NULL && errno == EINVAL,
				 "jp_arena_alloc(NULL): not NULL and EINVAL");
			jp_arena_reset(NULL);
			jp_arena_destroy(NULL);
			break;
		default:
			if (m == local)
				break;
			forget(m);
			jp_arena_destroy(m->a);
			m->a = NULL;
			break;
		}
	}
	for (unsigned i = 0; i < NA; i++) {
		if (ar[i].a != NULL)
			forget(&ar[i]);
		if (i != NA - 1 && ar[i].a != NULL)
			jp_arena_destroy(ar[i].a);
		ar[i].a = NULL;
	}
	return 0;
}
