/*
 * run-elf.h - what jpsync-run can tell of a program from its file before
 * it runs it (run-elf.c).
 */
#ifndef JP_RUN_ELF_H
#define JP_RUN_ELF_H

#include <stdbool.h>

/*
 * true when the program execvp would run for name (a path, or a name
 * looked up in PATH) is an ELF executable that the dynamic loader does
 * not start: statically linked, a static PIE included, so that LD_PRELOAD
 * cannot put the allocator in it.  false for anything else: a dynamically
 * linked program, the dynamic loader run as a program, a script, a file
 * that cannot be read.  Either byte order, 32 or 64 bits: the program may
 * be run by an emulator.
 */
bool run_elf_static(const char *name);

#endif /* JP_RUN_ELF_H */
