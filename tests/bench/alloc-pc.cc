// alloc-pc.cc - producer/consumer: the allocator under threads that hand
// their memory to each other, as servers and pipelines do.
//
//   alloc-pc -w pc-QUEUE-PtoC [-n MESSAGES] [-s SCALE]
//
// P producer threads build messages with C++ new - a std::string of 8 to
// 127 characters (most beyond the string's inline buffer) and a
// std::vector<std::uint32_t> of 1 to 32 elements, each a block of its own -
// and pass the pointers to C consumer threads, which check and delete them:
// every delete frees memory another thread allocated.  QUEUE is how the
// pointers travel: "deque" is a std::deque of at most 1024 behind a
// std::mutex and two std::condition_variables (what such a program writes
// first), "mpmc" a jp_mpmc queue of 1024 (libjpsync's, blocking push and
// pop).  The shapes alloc-bench.sh runs: 2to2, 1to4 and 4to1.
//
// MESSAGES (default 400000, times SCALE) are split between the producers.
// Threads start behind a barrier; the time runs from the start to the last
// consumer's end.  The output is alloc-bench's line (an "op" is a message:
// three allocations and three frees), so alloc-bench.sh collects it the
// same way:
//   alloc-bench: workload=W threads=P+C ops=N seconds=S ops_per_sec=R
//     peak_rss_kb=K malloc=LIBRARY
// A message whose contents are wrong prints "alloc-pc: CHECK FAILED" and
// exits 1.
//
//   alloc-pc -w map-strings [-t THREADS] [-n ENTRIES] [-s SCALE]
//
// map-strings: each of THREADS threads (1 to 128, default 1) builds a
// std::map<std::string, std::string> of 40,000 entries (keys of about 30
// characters, values of about 31: blocks of 32, 48 and 96 bytes) and drops
// it, 30 times (times SCALE); an "op" is one entry inserted, ENTRIES the
// total.  Dropping the map frees more blocks than a thread cache holds, so
// they go back to the allocator's shared structures, and the next build
// takes them again: the middle layer, not the fast paths.
#include <jpsync/queue.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

namespace {

constexpr std::size_t queue_cap = 1024;

struct message {
	std::string text;
	std::vector<std::uint32_t> data;
	std::uint64_t sum;	// of text's bytes and data's elements
};

std::uint64_t sum_of(const message &m)
{
	std::uint64_t s = m.text.size() * 1000003u;

	for (unsigned char c : m.text)
		s = s * 31 + c;
	for (std::uint32_t v : m.data)
		s = s * 131 + v;
	return s;
}

[[noreturn]] void fail(const char *what)
{
	std::fprintf(stderr, "alloc-pc: CHECK FAILED: %s\n", what);
	std::fflush(stderr);
	_exit(1);
}

std::uint64_t rnd(std::uint64_t &s)
{
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return s * 0x2545F4914F6CDD1DULL;
}

message *make_message(std::uint64_t &seed)
{
	std::uint64_t r = rnd(seed);
	auto *m = new message;

	m->text.assign(8 + r % 120, static_cast<char>('a' + (r >> 8) % 26));
	m->data.resize(1 + (r >> 16) % 32);
	for (std::size_t i = 0; i < m->data.size(); i++)
		m->data[i] = static_cast<std::uint32_t>(r >> 24) + static_cast<std::uint32_t>(i);
	m->sum = sum_of(*m);
	return m;
}

void consume(message *m)
{
	if (m->sum != sum_of(*m))
		fail("a message changed on its way");
	delete m;
}

// The queues carry message pointers; a nullptr is a consumer's end mark,
// which the main thread sends, one per consumer, once every producer is
// done.
class deque_queue {
	std::mutex lock;
	std::condition_variable nonempty, nonfull;
	std::deque<message *> q;

public:
	void push(message *m)
	{
		std::unique_lock<std::mutex> g(lock);
		nonfull.wait(g, [this] { return q.size() < queue_cap; });
		q.push_back(m);
		nonempty.notify_one();
	}
	message *pop()
	{
		std::unique_lock<std::mutex> g(lock);
		nonempty.wait(g, [this] { return !q.empty(); });
		message *m = q.front();
		q.pop_front();
		nonfull.notify_one();
		return m;
	}
};

class mpmc_queue {
	jp_mpmc_t *q;

public:
	mpmc_queue() : q(jp_mpmc_create(queue_cap, sizeof(message *)))
	{
		if (q == nullptr)
			fail("jp_mpmc_create");
	}
	~mpmc_queue() { jp_mpmc_destroy(q); }
	void push(message *m)
	{
		if (jp_mpmc_push(q, &m, nullptr) != 0)
			fail("jp_mpmc_push");
	}
	message *pop()
	{
		message *m;

		if (jp_mpmc_pop(q, &m, nullptr) != 0)
			fail("jp_mpmc_pop");
		return m;
	}
};

struct start_line {
	std::atomic<unsigned> waiting;
	std::atomic<bool> go{false};
	void arrive()
	{
		waiting.fetch_sub(1);
		while (!go.load(std::memory_order_acquire))
			std::this_thread::yield();
	}
};

template <class Queue>
double run(unsigned producers, unsigned consumers, std::uint64_t messages)
{
	Queue q;
	start_line start;
	std::vector<std::thread> threads;

	start.waiting = producers + consumers;
	for (unsigned p = 0; p < producers; p++)
		threads.emplace_back([&, p] {
			std::uint64_t seed = 0x9E3779B97F4A7C15ULL * (p + 1) | 1;
			std::uint64_t n = messages / producers + (p < messages % producers);

			start.arrive();
			for (std::uint64_t i = 0; i < n; i++)
				q.push(make_message(seed));
		});
	for (unsigned c = 0; c < consumers; c++)
		threads.emplace_back([&] {
			start.arrive();
			for (message *m; (m = q.pop()) != nullptr;)
				consume(m);
		});
	while (start.waiting.load() != 0)
		std::this_thread::yield();
	auto t0 = std::chrono::steady_clock::now();
	start.go.store(true, std::memory_order_release);
	for (unsigned p = 0; p < producers; p++)
		threads[p].join();
	for (unsigned c = 0; c < consumers; c++)
		q.push(nullptr);	// one end mark per consumer, after every message
	for (unsigned c = 0; c < consumers; c++)
		threads[producers + c].join();
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// map-strings: entries in total, split between the threads as rounds of
// MAP_N; returns the seconds from the start to the last thread's end.
constexpr unsigned MAP_N = 40000;

double run_map(unsigned nthreads, std::uint64_t rounds)
{
	std::vector<std::thread> threads;
	std::atomic<unsigned> waiting{nthreads};
	std::atomic<bool> go{false};
	std::atomic<bool> bad{false};

	for (unsigned t = 0; t < nthreads; t++)
		threads.emplace_back([&] {
			waiting.fetch_sub(1);
			while (!go.load(std::memory_order_acquire))
				std::this_thread::yield();
			for (std::uint64_t r = 0; r < rounds; r++) {
				std::map<std::string, std::string> m;

				for (unsigned i = 0; i < MAP_N; i++)
					m.emplace("key-number-" + std::to_string(i * 7919u % MAP_N) + "-padding",
						  "value-string-long-enough-" + std::to_string(i));
				if (m.size() != MAP_N)
					bad.store(true);
			}
		});
	while (waiting.load() != 0)
		std::this_thread::yield();
	auto t0 = std::chrono::steady_clock::now();
	go.store(true, std::memory_order_release);
	for (auto &t : threads)
		t.join();
	if (bad.load()) {
		std::fprintf(stderr, "alloc-pc: CHECK FAILED: a map lost entries\n");
		std::exit(1);
	}
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const char *malloc_provider()
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "malloc");

	if (sym != nullptr && dladdr(sym, &info) != 0 && info.dli_fname != nullptr &&
	    info.dli_fname[0] != '\0')
		return info.dli_fname;
	return "unknown";
}

int usage(FILE *f, int status)
{
	std::fprintf(f, "usage: alloc-pc -w pc-QUEUE-PtoC [-n MESSAGES] [-s SCALE]\n"
		     "       alloc-pc -w map-strings [-t THREADS] [-n ENTRIES] [-s SCALE]\n"
		     "QUEUE: deque or mpmc; P, C: 1 to 64 producers and consumers\n"
		     "(alloc-bench.sh runs pc-deque-2to2, -1to4, -4to1 and the same with mpmc)\n"
		     "THREADS: 1 to 128 threads that each build and drop a std::map\n");
	return status;
}

}  // namespace

int main(int argc, char **argv)
{
	const char *w = nullptr;
	double scale = 1.0;
	std::uint64_t messages = 0;
	unsigned long nthreads = 1;
	int c;

	while ((c = getopt(argc, argv, "w:t:n:s:h")) != -1) {
		char *end;

		switch (c) {
		case 'w':
			w = optarg;
			break;
		case 't':	// map-strings's; a pc shape sets its own threads
			errno = 0;
			nthreads = std::strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || nthreads < 1 || nthreads > 128) {
				std::fprintf(stderr, "alloc-pc: bad thread count '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			errno = 0;
			messages = std::strtoull(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || messages < 1 || messages > (1ULL << 40)) {
				std::fprintf(stderr, "alloc-pc: bad message count '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			scale = std::strtod(optarg, &end);
			if (*end != '\0' || !(scale > 0) || scale > 1e6) {
				std::fprintf(stderr, "alloc-pc: bad scale '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, 2);
		}
	}
	if (w == nullptr || optind != argc)
		return usage(stderr, 2);

	char kind[8];
	unsigned producers, consumers;
	int used = 0;
	struct rusage ru;

	if (std::strcmp(w, "map-strings") == 0) {
		std::uint64_t rounds = messages != 0 ? messages / MAP_N / nthreads
						     : static_cast<std::uint64_t>(30 * scale);

		if (rounds < 1)
			rounds = 1;
		std::uint64_t entries = rounds * MAP_N * nthreads;
		double secs = run_map(static_cast<unsigned>(nthreads), rounds);

		getrusage(RUSAGE_SELF, &ru);
		std::printf("alloc-bench: workload=%s threads=%lu ops=%llu seconds=%.6f "
			    "ops_per_sec=%.0f peak_rss_kb=%ld malloc=%s\n", w, nthreads,
			    static_cast<unsigned long long>(entries), secs,
			    secs > 0 ? static_cast<double>(entries) / secs : 0.0, ru.ru_maxrss,
			    malloc_provider());
		return 0;
	}

	if (std::sscanf(w, "pc-%7[a-z]-%uto%u%n", kind, &producers, &consumers, &used) != 3 ||
	    w[used] != '\0' || (std::strcmp(kind, "deque") != 0 && std::strcmp(kind, "mpmc") != 0) ||
	    producers < 1 || producers > 64 || consumers < 1 || consumers > 64) {
		std::fprintf(stderr, "alloc-pc: unknown workload '%s'\n", w);
		return usage(stderr, 2);
	}
	if (messages == 0)
		messages = static_cast<std::uint64_t>(400000 * scale);
	if (messages < producers)
		messages = producers;

	double secs = std::strcmp(kind, "deque") == 0
		? run<deque_queue>(producers, consumers, messages)
		: run<mpmc_queue>(producers, consumers, messages);

	getrusage(RUSAGE_SELF, &ru);
	std::printf("alloc-bench: workload=%s threads=%u ops=%llu seconds=%.6f ops_per_sec=%.0f "
		    "peak_rss_kb=%ld malloc=%s\n", w, producers + consumers,
		    static_cast<unsigned long long>(messages), secs,
		    secs > 0 ? static_cast<double>(messages) / secs : 0.0, ru.ru_maxrss,
		    malloc_provider());
	return 0;
}
