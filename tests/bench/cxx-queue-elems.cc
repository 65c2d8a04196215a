// cxx-queue-elems: how a non-trivially-copyable element should travel
// through <jpsync.hpp>'s queues: built in the slot (what
// jpsync::*_queue<T> does) or moved into a jp_alloc'd T whose pointer is
// queued (what it did before the in-place slot calls).  Both sides use
// try_push/try_pop and sched_yield() on failure, so only the element path
// differs.
//
//   cxx-queue-elems WAY KIND TYPE PRODUCERS CONSUMERS N LEN
//     WAY: slot | ptr; KIND: spsc | mpmc; TYPE: str (a std::string of
//     LEN characters) | uptr (a std::unique_ptr<long>)
// prints "WAY KIND TYPE P= C= L= NS" with NS nanoseconds per element.
// tests/bench/cxx-queue-elems.sh runs the cells interleaved.
//
//   cxx-queue-elems pairs WAY KIND TYPE LEN N
//     one thread: N times, a try_push of a new element and a try_pop (N
//     last, as tests/bench/callgrind-per-op.sh appends it; under valgrind
//     the queues take their annotated paths, so counts are not native).
#include <jpsync.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>

namespace {

// The pointer way, as <jpsync.hpp> did it: a T moved into jp_alloc memory.
template <class T, template <class> class Q>
struct via_pointer {
	Q<T *> q;
	explicit via_pointer(std::size_t cap) : q(cap) {}
	~via_pointer()
	{
		while (auto p = q.try_pop())
			drop(*p);
	}
	static void drop(T *p)
	{
		p->~T();
		jp_free(p);
	}
	bool try_push(T &&v)
	{
		T *p = ::new (jp_alloc(sizeof(T))) T(std::move(v));

		if (q.try_push(p))
			return true;
		v = std::move(*p);
		drop(p);
		return false;
	}
	std::optional<T> try_pop()
	{
		auto p = q.try_pop();

		if (!p)
			return std::nullopt;
		std::optional<T> r(std::move(**p));
		drop(*p);
		return r;
	}
};

std::size_t len_of(const std::string &s) { return s.size(); }
std::size_t len_of(const std::unique_ptr<long> &p) { return static_cast<std::size_t>(*p); }
std::string make(std::string *, std::size_t len, long i) { return std::string(len, static_cast<char>('a' + i % 26)); }
std::unique_ptr<long> make(std::unique_ptr<long> *, std::size_t len, long) { return std::make_unique<long>(static_cast<long>(len)); }

template <class T, class Q>
double run(int producers, int consumers, long n, std::size_t len, std::size_t *sum)
{
	Q q(1024);
	std::atomic<long> got{0};
	std::atomic<std::size_t> total{0};
	std::vector<std::thread> th;
	auto t0 = std::chrono::steady_clock::now();

	for (int p = 0; p < producers; p++)
		th.emplace_back([&, p] {
			for (long i = p; i < n; i += producers) {
				T v = make(static_cast<T *>(nullptr), len, i);
				while (!q.try_push(std::move(v)))
					sched_yield();
			}
		});
	for (int c = 0; c < consumers; c++)
		th.emplace_back([&] {
			std::size_t s = 0;
			while (got.load(std::memory_order_relaxed) < n) {
				auto v = q.try_pop();
				if (!v) {
					sched_yield();
					continue;
				}
				s += len_of(*v);
				got.fetch_add(1, std::memory_order_relaxed);
			}
			total += s;
		});
	for (auto &t : th)
		t.join();
	*sum = total;
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class T>
double kind_run(const std::string &way, const std::string &kind, int p, int c, long n,
		std::size_t len, std::size_t *sum)
{
	if (kind == "spsc")
		return way == "slot" ? run<T, jpsync::spsc_queue<T>>(1, 1, n, len, sum)
				     : run<T, via_pointer<T, jpsync::spsc_queue>>(1, 1, n, len, sum);
	return way == "slot" ? run<T, jpsync::mpmc_queue<T>>(p, c, n, len, sum)
			     : run<T, via_pointer<T, jpsync::mpmc_queue>>(p, c, n, len, sum);
}

}  // namespace

template <class T, class Q>
std::size_t pairs(long n, std::size_t len)
{
	Q q(16);
	std::size_t s = 0;

	for (long i = 0; i < n; i++) {
		if (!q.try_push(make(static_cast<T *>(nullptr), len, i)))
			return 0;
		s += len_of(*q.try_pop());
	}
	return s;
}

template <class T>
std::size_t kind_pairs(const std::string &way, const std::string &kind, long n, std::size_t len)
{
	if (kind == "spsc")
		return way == "slot" ? pairs<T, jpsync::spsc_queue<T>>(n, len)
				     : pairs<T, via_pointer<T, jpsync::spsc_queue>>(n, len);
	return way == "slot" ? pairs<T, jpsync::mpmc_queue<T>>(n, len)
			     : pairs<T, via_pointer<T, jpsync::mpmc_queue>>(n, len);
}

int main(int argc, char **argv)
{
	if (argc == 7 && std::string(argv[1]) == "pairs") {
		const std::string way = argv[2], kind = argv[3], type = argv[4];
		const std::size_t len = static_cast<std::size_t>(std::atol(argv[5]));
		const long n = std::atol(argv[6]);
		const std::size_t s = type == "str" ? kind_pairs<std::string>(way, kind, n, len)
						    : kind_pairs<std::unique_ptr<long>>(way, kind, n, len);

		return s == static_cast<std::size_t>(n) * len ? 0 : 1;
	}
	if (argc != 8) {
		std::fprintf(stderr, "usage: %s slot|ptr spsc|mpmc str|uptr PRODUCERS CONSUMERS N LEN\n", argv[0]);
		return 2;
	}
	const std::string way = argv[1], kind = argv[2], type = argv[3];
	int p = std::atoi(argv[4]), c = std::atoi(argv[5]);
	const long n = std::atol(argv[6]);
	const std::size_t len = static_cast<std::size_t>(std::atol(argv[7]));
	std::size_t sum = 0;

	if (kind == "spsc")
		p = c = 1;
	if (p < 1 || c < 1 || n < 1) {
		std::fprintf(stderr, "cxx-queue-elems: PRODUCERS, CONSUMERS and N must be at least 1\n");
		return 2;
	}
	const double t = type == "str" ? kind_run<std::string>(way, kind, p, c, n, len, &sum)
				       : kind_run<std::unique_ptr<long>>(way, kind, p, c, n, len, &sum);
	if (sum != static_cast<std::size_t>(n) * len) {
		std::fprintf(stderr, "cxx-queue-elems: elements lost (%zu of %zu)\n", sum,
			     static_cast<std::size_t>(n) * len);
		return 1;
	}
	std::printf("%s %s %s P=%d C=%d L=%zu %.1f\n", way.c_str(), kind.c_str(), type.c_str(), p, c, len,
		    t * 1e9 / static_cast<double>(n));
	return 0;
}
