/*
 * leak-prog.c - known leaks for tests/alloc/test-leaks.sh, run under
 * jpsync-run --leaks.  Its first argument says what it does:
 *   leak    leak_three drops 3 blocks of 100, 200 and 1048576 bytes (the
 *           last above the largest class: a huge block), 1048876 in all;
 *   reach   keep_global keeps 3 blocks (a huge one holding a fourth)
 *           through a global, and a second thread, still running at exit, holds a
 *           fifth on its stack only: no leak;
 *   blocked as reach, but the second thread blocks every signal: no
 *           signal stops it (a ptrace helper does);
 *   inreg   (x86_64) a second thread that blocks every signal sleeps in
 *           the kernel holding the only pointer to a block of 3000 bytes
 *           in a register (r12): no leak when its registers are scanned,
 *           a leak of 3000 bytes when only its stack is; exit 77
 *           elsewhere;
 *   thread  a second thread drops 2 blocks of 1000 bytes in
 *           leak_in_thread, then ends (joined): a 2000-byte leak;
 *   closed  as leak, then closes its standard error (as coreutils'
 *           close_stdout does at exit): the report must still come;
 *   forked  forks a child that prints how many close-on-exec descriptors
 *           above 2 it holds (the copy of stderr kept for the report must not
 *           follow it: a daemon would hold its caller's stderr open),
 *           then waits for it; no leak;
 *   chain   leak_list drops the head (300 bytes) of a list of 3 blocks,
 *           whose other 2 (40 bytes each) only the list reaches, and
 *           leak_cycle 2 blocks of 120 bytes that point at each other
 *           (one at an interior offset) and nothing else reaches: 2 direct
 *           leaks (the head, one of the cycle: 420 bytes) and 3 indirect
 *           ones (200 bytes), 620 bytes in 5 blocks.
 * A dropped pointer may survive in a dead stack slot or a register and
 * keep its block "reachable" (it did on i386): each leaking function is
 * not inlined, and is followed by one that overwrites 64 KiB of stack
 * (16 KiB was not enough: the first allocation of a thread runs the
 * unwinder and the lazy binder about 19 KiB below the caller)
 * and one that loads zeros into registers.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *keep[3];

void clobber_stack(void);
void clear_registers(void);
void leak_three(void);
void keep_global(void);
void leak_in_thread(void);
void leak_list(void);
void leak_cycle(void);

__attribute__((noinline)) void clobber_stack(void)
{
	volatile char buf[65536];

	memset((char *)buf, 0, sizeof buf);
	__asm__ volatile("" : : "r"(buf) : "memory");
}

__attribute__((noinline)) void clear_registers(void)
{
	volatile uintptr_t z = 0;
	uintptr_t a = z, b = z, c = z, d = z, e = z;

	__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e));
}

__attribute__((noinline)) void leak_three(void)
{
	static const size_t sizes[3] = { 100, 200, (size_t)1 << 20 };

	for (int i = 0; i < 3; i++) {
		char *volatile p = malloc(sizes[i]);

		memset(p, i + 1, sizes[i]);
		p = NULL;
	}
}

__attribute__((noinline)) void keep_global(void)
{
	keep[0] = malloc(64);
	keep[1] = malloc(64);
	keep[2] = malloc((size_t)1 << 20);	/* a huge block */
	/* Reached only through a reachable (huge) block, and at an
	 * interior offset. */
	((char **)keep[2])[1000] = (char *)malloc(500) + 10;
}

static sem_t started;

__attribute__((noinline)) static void *hold_on_stack(void *arg)
{
	void *volatile mine = malloc(4000);

	(void)arg;
	memset(mine, 7, 4000);
	sem_post(&started);
	for (;;)
		pause();	/* still running when main exits */
	return NULL;
}

static void *block_and_hold(void *arg)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	return hold_on_stack(arg);
}

#if defined(__x86_64__)
#define INREG_MASK	((uintptr_t)0x5a5a5a5a5a5a5a5aULL)
static volatile uintptr_t inreg_masked;	/* the block's address ^ INREG_MASK */
static int inreg_word;			/* a futex word that stays 0 */
static int inreg_ready;			/* 1 once r12 holds the address */

/* The block of the inreg case, whose address is kept masked only. */
__attribute__((noinline)) static void inreg_alloc(void)
{
	void *p = malloc(3000);

	memset(p, 5, 3000);
	inreg_masked = (uintptr_t)p ^ INREG_MASK;
}

/* Loads the block's address into r12, says so, and sleeps in the kernel
 * on inreg_word: nothing but that register holds it. */
static void *hold_in_register(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	__asm__ volatile("mov %0, %%r12\n\t"
			 "xor %1, %%r12\n\t"
			 "movl $1, (%3)\n"		/* inreg_ready */
			 "1:\tmov $202, %%eax\n\t"	/* futex */
			 "mov %2, %%rdi\n\t"
			 "mov $128, %%esi\n\t"		/* FUTEX_WAIT_PRIVATE */
			 "xor %%edx, %%edx\n\t"	/* while 0 */
			 "xor %%r10d, %%r10d\n\t"	/* no timeout */
			 "syscall\n\t"
			 "jmp 1b"
			 : : "r"(inreg_masked), "r"(INREG_MASK), "r"(&inreg_word),
			   "r"(&inreg_ready)
			 : "rax", "rcx", "rdx", "rsi", "rdi", "r10", "r11", "r12", "memory");
	return NULL;
}
#endif

__attribute__((noinline)) void leak_in_thread(void)
{
	for (int i = 0; i < 2; i++) {
		char *volatile p = malloc(1000);

		memset(p, 9, 1000);
		p = NULL;
	}
}

/* The stores into p's block are kept: gcc drops stores into a block
 * nothing reads (the links of leak_list and leak_cycle went). */
static void keep_stores(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

__attribute__((noinline)) void leak_list(void)
{
	void **volatile head = malloc(300);
	void **volatile second = malloc(40);
	void **volatile third = malloc(40);

	memset(head, 0, 300);
	memset(second, 0, 40);
	memset(third, 0, 40);
	head[0] = second;
	second[0] = third;
	keep_stores(head);
	keep_stores(second);
	head = second = third = NULL;
}

__attribute__((noinline)) void leak_cycle(void)
{
	char **volatile a = malloc(120);
	char **volatile b = malloc(120);

	memset(a, 0, 120);
	memset(b, 0, 120);
	a[0] = (char *)b;
	b[3] = (char *)a + 16;
	keep_stores(a);
	keep_stores(b);
	a = b = NULL;
}

static void *thread_leaks(void *arg)
{
	(void)arg;
	leak_in_thread();
	clobber_stack();
	clear_registers();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "leak";
	pthread_t t;

	if (strcmp(what, "leak") == 0 || strcmp(what, "closed") == 0) {
		leak_three();
		if (what[0] == 'c')
			close(2);
	} else if (strcmp(what, "reach") == 0 || strcmp(what, "blocked") == 0) {
		keep_global();
		sem_init(&started, 0, 0);
		if (pthread_create(&t, NULL, what[0] == 'r' ? hold_on_stack : block_and_hold,
				   NULL) != 0)
			return 1;
		while (sem_wait(&started) != 0)
			;
	} else if (strcmp(what, "inreg") == 0) {
#if defined(__x86_64__)
		inreg_alloc();
		clobber_stack();
		clear_registers();
		if (pthread_create(&t, NULL, hold_in_register, NULL) != 0)
			return 1;
		for (int i = 0; !__atomic_load_n(&inreg_ready, __ATOMIC_ACQUIRE); i++)
			if (i == 10000)
				return 1;	/* 10 s */
			else
				usleep(1000);
#else
		return 77;
#endif
	} else if (strcmp(what, "forked") == 0) {
		pid_t pid = fork();

		if (pid == 0) {
			DIR *d = opendir("/proc/self/fd");
			struct dirent *e;
			int n = 0;

			if (d == NULL)
				_exit(1);
			/* Close-on-exec ones only: those inherited through
			 * exec (from the shell, the test driver) have not
			 * the flag, and this program opened none but d. */
			while ((e = readdir(d)) != NULL) {
				int fd = atoi(e->d_name);

				if (fd > 2 && fd != dirfd(d) &&
				    (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0)
					n++;
			}
			closedir(d);
			printf("close-on-exec fds above 2: %d\n", n);
			fflush(stdout);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			return 1;
	} else if (strcmp(what, "chain") == 0) {
		leak_list();
		clobber_stack();
		leak_cycle();
	} else if (strcmp(what, "thread") == 0) {
		if (pthread_create(&t, NULL, thread_leaks, NULL) != 0 ||
		    pthread_join(t, NULL) != 0)
			return 1;
	} else
		return 2;
	clobber_stack();
	clear_registers();
	return 0;
}
