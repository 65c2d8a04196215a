/*
 * alloc-pair-cxx.cc - alloc-pair's loop in C++: N pairs of
 * operator delete + operator new of 64 bytes in one thread, for counting
 * instructions with valgrind --tool=callgrind (tests/bench/alloc-bench.sh).
 *
 *   alloc-pair-cxx N [delete|sized]
 *
 * delete (the default): ::operator delete(p); sized: ::operator delete(p, 64),
 * the C++14 sized delete that a C++17 compiler calls for `delete q` of a
 * complete type (larson-sized's path).  Both are the replaceable functions,
 * bound through the PLT: from libstdc++ (on top of malloc and free) unless
 * the preloaded allocator defines its own.  Sixteen other 64-byte blocks
 * stay allocated, as in alloc-pair.  Prints the object that defines
 * malloc, so the driver can tell that an LD_PRELOAD took effect.
 */
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

int main(int argc, char **argv)
{
	long n;
	char *end;
	const char *mode = argc > 2 ? argv[2] : "delete";
	bool sized = std::strcmp(mode, "sized") == 0;
	void *keep[16], *p, *sym;
	Dl_info info;

	if (argc < 2 || argc > 3 || (n = std::strtol(argv[1], &end, 10)) < 0 ||
	    *end != '\0' || (!sized && std::strcmp(mode, "delete") != 0)) {
		std::fprintf(stderr, "usage: alloc-pair-cxx N [delete|sized]\n");
		return 2;
	}
	for (int k = 0; k < 16; k++) {
		keep[k] = ::operator new(64);
		ESCAPE(keep[k]);
	}
	p = ::operator new(64);
	if (sized) {
		for (long i = 0; i < n; i++) {
			ESCAPE(p);
			::operator delete(p, 64);
			p = ::operator new(64);
		}
	} else {
		for (long i = 0; i < n; i++) {
			ESCAPE(p);
			::operator delete(p);
			p = ::operator new(64);
		}
	}
	::operator delete(p);
	for (int k = 0; k < 16; k++)
		::operator delete(keep[k]);
	sym = dlsym(RTLD_DEFAULT, "malloc");
	std::printf("alloc-pair-cxx: pairs=%ld delete=%s malloc=%s\n", n,
		    sized ? "sized" : "plain",
		    sym != nullptr && dladdr(sym, &info) != 0 && info.dli_fname != nullptr ?
		    info.dli_fname : "unknown");
	return 0;
}
