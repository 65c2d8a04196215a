/*
 * queue-kinds.h - jp_spsc, jp_mpsc and jp_mpmc behind one table of calls,
 * so that a test runs every case on each kind (test-queue.c,
 * test-queue-threads.c, the queue fuzz target).  multi_prod and multi_cons: whether the kind takes several
 * producers, several consumers.
 */
#ifndef JP_TEST_QUEUE_KINDS_H
#define JP_TEST_QUEUE_KINDS_H

#include <jpsync/queue.h>

#include <stddef.h>
#include <time.h>

struct qops {
	const char *name;
	int multi_prod, multi_cons;
	void *(*create)(size_t, size_t);
	void (*destroy)(void *);
	int (*try_push)(void *, const void *);
	int (*try_pop)(void *, void *);
	int (*push)(void *, const void *, const struct timespec *);
	int (*pop)(void *, void *, const struct timespec *);
	size_t (*push_bulk)(void *, const void *, size_t);
	size_t (*pop_bulk)(void *, void *, size_t);
	void (*close)(void *);
	size_t (*size)(const void *);
	size_t (*capacity)(const void *);
	/* 1.1: in-place slots */
	int (*try_push_start)(void *, jp_queue_slot_t *);
	int (*push_start)(void *, jp_queue_slot_t *, const struct timespec *);
	void (*push_finish)(void *, jp_queue_slot_t *);
	int (*try_pop_start)(void *, jp_queue_slot_t *);
	int (*pop_start)(void *, jp_queue_slot_t *, const struct timespec *);
	void (*pop_finish)(void *, jp_queue_slot_t *);
};

#define OPS(k, mp, mc) { #k, mp, mc, \
	(void *(*)(size_t, size_t))jp_##k##_create, (void (*)(void *))jp_##k##_destroy, \
	(int (*)(void *, const void *))jp_##k##_try_push, (int (*)(void *, void *))jp_##k##_try_pop, \
	(int (*)(void *, const void *, const struct timespec *))jp_##k##_push, \
	(int (*)(void *, void *, const struct timespec *))jp_##k##_pop, \
	(size_t (*)(void *, const void *, size_t))jp_##k##_push_bulk, \
	(size_t (*)(void *, void *, size_t))jp_##k##_pop_bulk, \
	(void (*)(void *))jp_##k##_close, (size_t (*)(const void *))jp_##k##_size, \
	(size_t (*)(const void *))jp_##k##_capacity, \
	(int (*)(void *, jp_queue_slot_t *))jp_##k##_try_push_start, \
	(int (*)(void *, jp_queue_slot_t *, const struct timespec *))jp_##k##_push_start, \
	(void (*)(void *, jp_queue_slot_t *))jp_##k##_push_finish, \
	(int (*)(void *, jp_queue_slot_t *))jp_##k##_try_pop_start, \
	(int (*)(void *, jp_queue_slot_t *, const struct timespec *))jp_##k##_pop_start, \
	(void (*)(void *, jp_queue_slot_t *))jp_##k##_pop_finish }

static const struct qops kinds[] = {
	OPS(spsc, 0, 0), OPS(mpsc, 1, 0), OPS(mpmc, 1, 1),
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

#endif
