/*
 * alloc-helper.h - the modes of alloc-helper (alloc-helper.c's opening
 * comment lists them all) that live in files of their own: the forks
 * (alloc-helper-fork.c) and the statistics (alloc-helper-stats.c).  Each
 * returns the process's exit status.
 */
#ifndef ALLOC_HELPER_H
#define ALLOC_HELPER_H

#include <signal.h>

/* A block stored here escapes: the compiler cannot drop its allocation. */
extern void *volatile sink;

int fork_nested(void);
int fork_nested_stress(void);
int fork_at_start(void);

int stats_signal_storm(void);
int stats_process(void);
int stats_exact(void);
extern volatile sig_atomic_t own_handled;	/* set by own_handler */
void own_handler(int sig);

#endif /* ALLOC_HELPER_H */
