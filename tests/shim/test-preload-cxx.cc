/*
 * test-preload-cxx.cc - C++ new and delete under the preload module, run by
 * tests/shim/test-preload-cxx.sh through ./shim/jpsync-run.
 *
 * Every form (plain, array, nothrow, sized, aligned with alignas(64) and an
 * over-aligned 4096, aligned nothrow) must be the module's, hand out memory
 * that jp_alloc owns (jp_usable_size, found with dlsym, agrees with
 * malloc_usable_size and covers the request) aligned as asked, and fail as
 * the standard says: new throws std::bad_alloc after calling the new_handler
 * until it gives up, nothrow new returns NULL.  A sized delete told a size
 * above the block's (above the request, in check mode) is reported, in a
 * child, and aborts.  Not linked to libjpsync.
 */
/* The sizes near SIZE_MAX are the point: GCC warns of each. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

static int failures, checks;

#define CHECK(cond, what) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		std::printf("FAIL: %s:%d: %s: %s\n", __FILE__, __LINE__,	\
			    #cond, what);				\
	}								\
} while (0)

typedef size_t (*usable_fn)(const void *);
static usable_fn jp_usable;

static bool from_jp(const void *p, size_t n)
{
	return p != nullptr && jp_usable(p) >= n && jp_usable(p) == malloc_usable_size(const_cast<void *>(p));
}

static bool aligned_to(const void *p, size_t a)
{
	return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0;
}

static const char *object_of(const void *addr)
{
	Dl_info info;

	if (addr == nullptr || dladdr(addr, &info) == 0 || info.dli_fname == nullptr)
		return "(none)";
	return info.dli_fname;
}

struct alignas(64) Line {
	char bytes[64];
};

struct alignas(4096) Page {
	char bytes[4096];
};

struct Node {
	long value;
	Node *next;
};

static int handler_calls;

static void give_up_handler()
{
	/* The third call removes itself: new must then throw. */
	if (++handler_calls == 3)
		std::set_new_handler(nullptr);
}

/*
 * In a child: new of asked bytes, sized delete told it was told bytes.
 * True when the child aborted with the allocator's one line about it.
 */
static bool sized_delete_misuse_dies(size_t asked, size_t told)
{
	/* Check mode knows the size asked for, and names any other. */
	const char *c = std::getenv("JPSYNC_CHECK");
	const char *want = c != nullptr && std::strcmp(c, "1") == 0 ?
		"jpsync: invalid free_sized of 0x" :
		"jpsync: invalid free_sized (size larger than the block) of 0x";
	char buf[512];
	size_t len = 0;
	ssize_t r;
	int fds[2], st = 0;
	pid_t pid;

	if (pipe(fds) != 0)
		return false;
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		volatile size_t n = told;
		void *p = ::operator new(asked);

		dup2(fds[1], 2);
		::operator delete(p, n);	/* the bug */
		_exit(0);
	}
	close(fds[1]);
	while (len < sizeof buf - 1 &&
	       (r = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	close(fds[0]);
	if (waitpid(pid, &st, 0) != pid)
		return false;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
	       std::strncmp(buf, want, std::strlen(want)) == 0;
}

int main()
{
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	/* A deadlock fails instead of hanging; under an emulator (qemu-user,
	 * which tests/target-exec.sh names) a loaded machine took over 60 s. */
	alarm(std::getenv("JP_TEST_EMULATOR") != nullptr ? 600 : 60);
	jp_usable = reinterpret_cast<usable_fn>(dlsym(RTLD_DEFAULT, "jp_usable_size"));
	if (jp_usable == nullptr) {
		std::printf("FAIL: jp_usable_size not found: run under jpsync-run\n");
		return 1;
	}

	/* The operators are the module's. */
	void *(*plain_new)(size_t) = &::operator new;
	void (*plain_delete)(void *) noexcept = &::operator delete;
	void *(*aligned_new)(size_t, std::align_val_t) = &::operator new;
	CHECK(std::strstr(object_of(reinterpret_cast<void *>(plain_new)), "libjpsync-preload") != nullptr,
	      object_of(reinterpret_cast<void *>(plain_new)));
	CHECK(std::strstr(object_of(reinterpret_cast<void *>(plain_delete)), "libjpsync-preload") != nullptr,
	      object_of(reinterpret_cast<void *>(plain_delete)));
	CHECK(std::strstr(object_of(reinterpret_cast<void *>(aligned_new)), "libjpsync-preload") != nullptr,
	      object_of(reinterpret_cast<void *>(aligned_new)));

	/* plain and array */
	Node *n = new Node{42, nullptr};
	CHECK(from_jp(n, sizeof *n) && aligned_to(n, 16), "new Node");
	delete n;		/* sized delete (C++14) */
	int *arr = new int[1000];
	CHECK(from_jp(arr, 1000 * sizeof(int)), "new int[1000]");
	arr[999] = 1;
	delete[] arr;
	std::string *strs = new std::string[50];	/* array with a cookie */
	for (int i = 0; i < 50; i++)
		strs[i] = std::string(100 + i, 'x');
	CHECK(strs[49].size() == 149, "std::string[]");
	delete[] strs;

	/* aligned: alignas(64) and over-aligned 4096 */
	Line *l = new Line;
	CHECK(from_jp(l, sizeof *l) && aligned_to(l, 64), "new alignas(64)");
	delete l;
	Line *ls = new Line[17];
	CHECK(from_jp(ls, 17 * sizeof *ls) && aligned_to(ls, 64), "new alignas(64)[17]");
	delete[] ls;
	Page *pg = new Page;
	CHECK(from_jp(pg, sizeof *pg) && aligned_to(pg, 4096), "new alignas(4096)");
	std::memset(pg->bytes, 1, sizeof pg->bytes);
	delete pg;
	Page *pgs = new Page[3];
	CHECK(from_jp(pgs, 3 * sizeof *pgs) && aligned_to(pgs, 4096), "new alignas(4096)[3]");
	delete[] pgs;
	void *raw = ::operator new(100, std::align_val_t(256));
	CHECK(from_jp(raw, 100) && aligned_to(raw, 256), "operator new(100, align 256)");
	::operator delete(raw, 100, std::align_val_t(256));

	/* nothrow */
	Node *nn = new (std::nothrow) Node{1, nullptr};
	CHECK(from_jp(nn, sizeof *nn), "new (nothrow) Node");
	delete nn;
	Page *np = new (std::nothrow) Page;
	CHECK(from_jp(np, sizeof *np) && aligned_to(np, 4096), "new (nothrow) alignas(4096)");
	delete np;
	const size_t huge = SIZE_MAX / 4 * 3;	/* no machine maps this, 32-bit ones neither */
	void *fail = ::operator new(huge, std::nothrow);
	CHECK(fail == nullptr, "nothrow new of 3/4 of SIZE_MAX returns NULL");
	fail = ::operator new[](huge, std::align_val_t(64), std::nothrow);
	CHECK(fail == nullptr, "aligned nothrow new[] of 3/4 of SIZE_MAX returns NULL");

	/* failure: std::bad_alloc, after the new_handler loop */
	bool threw = false;
	try {
		void *p = ::operator new(huge);
		::operator delete(p);
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	CHECK(threw, "new of 3/4 of SIZE_MAX throws std::bad_alloc");
	std::set_new_handler(give_up_handler);
	threw = false;
	try {
		void *p = ::operator new[](huge, std::align_val_t(128));
		::operator delete[](p, std::align_val_t(128));
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	CHECK(threw && handler_calls == 3, "new_handler called until it gives up, then bad_alloc");

	/* Every size from SIZE_MAX - 65536 to SIZE_MAX: each form throws
	 * std::bad_alloc (nothrow: NULL), none hands out a block. */
	std::set_new_handler(nullptr);
	int edge_bad = 0;
	for (size_t k = 0; k <= 65536; k++) {
		size_t sz = SIZE_MAX - 65536 + k;
		int thrown = 0;

		try { ::operator delete(::operator new(sz)); } catch (const std::bad_alloc &) { thrown++; }
		try { ::operator delete[](::operator new[](sz)); } catch (const std::bad_alloc &) { thrown++; }
		try {
			::operator delete(::operator new(sz, std::align_val_t(64)), std::align_val_t(64));
		} catch (const std::bad_alloc &) { thrown++; }
		try {
			::operator delete[](::operator new[](sz, std::align_val_t(4096)), std::align_val_t(4096));
		} catch (const std::bad_alloc &) { thrown++; }
		if (thrown != 4 || ::operator new(sz, std::nothrow) != nullptr ||
		    ::operator new[](sz, std::align_val_t(64), std::nothrow) != nullptr)
			edge_bad++;
	}
	CHECK(edge_bad == 0, "new of every size from SIZE_MAX - 65536 throws std::bad_alloc");

	/* Sized delete told more than the block holds: reported, in every
	 * mode (the size never picks the bin, so it cannot misfile the
	 * block); in check mode one byte above the request is enough. */
	CHECK(sized_delete_misuse_dies(100, 4096), "sized delete of 4096 for new(100)");
	CHECK(sized_delete_misuse_dies(3000, 40000), "sized delete of 40000 for new(3000)");
	if (const char *c = std::getenv("JPSYNC_CHECK"); c != nullptr && std::strcmp(c, "1") == 0)
	{
		CHECK(sized_delete_misuse_dies(100, 101), "check mode: sized delete of 101 for new(100)");
		CHECK(sized_delete_misuse_dies(100, 99), "check mode: sized delete of 99 for new(100)");
		CHECK(sized_delete_misuse_dies(300000, 1000), "check mode: sized delete of 1000 for new(300000)");
	}

	/* The standard library on top: containers, smart pointers. */
	std::unordered_map<std::string, std::vector<int>> m;
	for (int i = 0; i < 20000; i++)
		m[std::to_string(i)].push_back(i);
	long sum = 0;
	for (auto &kv : m)
		sum += kv.second[0];
	CHECK(sum == 20000L * 19999 / 2, "unordered_map of vectors");
	auto sp = std::make_shared<std::vector<Line>>(100);
	CHECK(aligned_to(sp->data(), 64), "vector<alignas(64)> storage aligned");

	if (failures == 0)
		std::printf("ok: C++ new/delete under the module (%d checks)\n", checks);
	else
		std::printf("FAIL: %d of %d checks\n", failures, checks);
	return failures == 0 ? 0 : 1;
}
