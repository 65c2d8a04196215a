// cxx-cost.cc - the same work through the C API and through <jpsync.hpp>,
// for tests/cxx/check-cxx-cost.sh, which counts both with callgrind.
//
//   cxx-cost c|cxx mutex|pool|queue N
//
// mutex: N lock+unlock pairs; pool: N get+put pairs of a 64-byte object;
// queue: N try_push+try_pop pairs of an int on an SPSC queue.
#include <jpsync.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct blob {
	unsigned char b[64];
};

// Keep the compiler from folding a loop's body away.
template <class T>
inline void keep(T &&v)
{
	__asm__ __volatile__("" : : "g"(&v) : "memory");
}

int run_c(const char *what, long n)
{
	if (!std::strcmp(what, "mutex")) {
		static jp_mutex_t m = JP_MUTEX_INIT;

		for (long i = 0; i < n; i++) {
			jp_mutex_lock(&m);
			keep(i);
			jp_mutex_unlock(&m);
		}
	} else if (!std::strcmp(what, "pool")) {
		jp_pool_t *p = jp_pool_create(sizeof(blob), 64, 0);

		for (long i = 0; i < n; i++) {
			void *o = jp_pool_get(p);
			if (o == NULL)
				return 2;
			std::memset(o, 0, sizeof(blob));	// what acquire()'s T() does
			keep(o);
			jp_pool_put(p, o);
		}
		jp_pool_destroy(p);
	} else {
		jp_spsc_t *q = jp_spsc_create(16, sizeof(int));

		for (long i = 0; i < n; i++) {
			int v = (int)i, w;
			if (jp_spsc_try_push(q, &v) != 0 || jp_spsc_try_pop(q, &w) != 0)
				return 2;
			keep(w);
		}
		jp_spsc_destroy(q);
	}
	return 0;
}

int run_cxx(const char *what, long n)
{
	if (!std::strcmp(what, "mutex")) {
		static jpsync::mutex m;

		for (long i = 0; i < n; i++) {
			m.lock();
			keep(i);
			m.unlock();
		}
	} else if (!std::strcmp(what, "pool")) {
		jpsync::object_pool<blob> p(64);

		for (long i = 0; i < n; i++) {
			blob *o = p.acquire();
			if (o == nullptr)
				return 2;
			keep(o);
			p.release(o);
		}
	} else {
		jpsync::spsc_queue<int> q(16);

		for (long i = 0; i < n; i++) {
			if (!q.try_push((int)i))
				return 2;
			auto w = q.try_pop();
			if (!w)
				return 2;
			keep(*w);
		}
	}
	return 0;
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc != 4)
		return std::fprintf(stderr, "usage: cxx-cost c|cxx mutex|pool|queue N\n"), 2;
	long n = std::strtol(argv[3], nullptr, 10);

	return !std::strcmp(argv[1], "c") ? run_c(argv[2], n) : run_cxx(argv[2], n);
}
