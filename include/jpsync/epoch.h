/*
 * jpsync/epoch.h - epoch-based reclamation.
 *
 * Readers bracket their use of shared pointers with jp_epoch_enter() and
 * jp_epoch_exit() (they nest).  A writer that unlinks an object hands it to
 * jp_epoch_retire(), which calls free_fn(ptr) only once no reader that could
 * still hold the pointer remains inside.  jp_epoch_synchronize() waits until
 * every reader that was inside at the call has left; jp_epoch_barrier() does
 * that and then runs every free function pending at the call.  Threads
 * register with an epoch on first use and deregister when they exit.
 */
#ifndef JPSYNC_EPOCH_H
#define JPSYNC_EPOCH_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jp_epoch jp_epoch_t;
jp_epoch_t *jp_epoch_create(void);
void jp_epoch_destroy(jp_epoch_t *e);
void jp_epoch_enter(jp_epoch_t *e);
void jp_epoch_exit(jp_epoch_t *e);
void jp_epoch_retire(jp_epoch_t *e, void *ptr, void (*free_fn)(void *));
void jp_epoch_synchronize(jp_epoch_t *e);   /* every reader inside at the call has left */
void jp_epoch_barrier(jp_epoch_t *e);       /* synchronize, then run every pending free_fn */

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_EPOCH_H */
