// test-cxx.cc - <jpsync.hpp>: every wrapper with the standard library's
// lock types, waits with durations and time points of steady_clock and
// system_clock, queues of std::string and std::unique_ptr (close, leftovers
// destroyed), pools, epoch guards, memory resources, the allocator, and
// errors as std::system_error.  Built twice, at C++17 and at C++20.
#include <jpsync.hpp>
#include <jpsync/hammer.h>

extern "C" {
#include "testutil.h"
}

#include <atomic>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// The epoch case publishes a node with an exchange.
#include "publish.h"

using namespace std::chrono_literals;

namespace {

// Failures seen on other threads (CUnit is not thread-safe).
std::atomic<unsigned> thread_failures{0};

void test_mutex()
{
	static jpsync::mutex m;		// constant-initialised, as std::mutex
	long counter = 0;
	std::vector<std::thread> t;

	for (int i = 0; i < 4; i++)
		t.emplace_back([&] {
			for (int k = 0; k < 20000; k++) {
				std::lock_guard<jpsync::mutex> g(m);
				counter++;
			}
		});
	for (auto &th : t)
		th.join();
	CU_ASSERT_EQUAL(counter, 80000);
	{
		std::unique_lock<jpsync::mutex> lk(m);
		std::atomic<int> got{-1};
		std::thread other([&] {
			got = m.try_lock_for(20ms) ? 1 : 0;
			if (got == 1)
				m.unlock();
		});
		other.join();
		CU_ASSERT_EQUAL(got.load(), 0);		// held: timed out
	}
	CU_ASSERT_TRUE(m.try_lock_until(std::chrono::steady_clock::now() + 1s));
	m.unlock();
	CU_ASSERT_TRUE(m.try_lock_until(std::chrono::system_clock::now() + 1s));
	m.unlock();
	CU_ASSERT_TRUE(m.try_lock_for(-5s));	// free: the one attempt succeeds
	m.unlock();
	jpsync::mutex a, b;
	// std::lock (inside std::scoped_lock) loops on try_lock: a wrong one
	// would hang the case rather than fail it.
	CU_ASSERT_FATAL(a.try_lock());
	CU_ASSERT_FATAL(!a.try_lock());
	a.unlock();
	{
		std::scoped_lock both(a, b);
		CU_ASSERT_FALSE(a.try_lock());
	}
	CU_ASSERT_TRUE(a.try_lock());
	a.unlock();
}

void test_shared_mutex()
{
	jpsync::shared_mutex sm;
	int value = 0;
	std::atomic<bool> bad{false};
	std::vector<std::thread> t;

	for (int i = 0; i < 4; i++)
		t.emplace_back([&, i] {
			for (int k = 0; k < 5000; k++) {
				if ((k + i) % 5 == 0) {
					std::unique_lock<jpsync::shared_mutex> w(sm);
					value++;
					value++;
				} else {
					std::shared_lock<jpsync::shared_mutex> r(sm);
					if (value % 2 != 0)
						bad = true;
				}
			}
		});
	for (auto &th : t)
		th.join();
	CU_ASSERT_FALSE(bad.load());
	CU_ASSERT_EQUAL(value, 2 * 4 * 1000);
	{
		std::shared_lock<jpsync::shared_mutex> r(sm);
		CU_ASSERT_TRUE(sm.try_lock_shared());	// readers share
		sm.unlock_shared();
		std::atomic<int> w{-1};
		std::thread([&] { w = sm.try_lock_for(20ms); }).join();
		CU_ASSERT_EQUAL(w.load(), 0);
	}
	std::unique_lock<jpsync::shared_mutex> w(sm);
	std::atomic<int> r{-1};
	std::thread([&] { r = sm.try_lock_shared_until(std::chrono::system_clock::now() + 20ms); }).join();
	CU_ASSERT_EQUAL(r.load(), 0);
}

void test_condition_variable()
{
	jpsync::mutex m;
	jpsync::condition_variable cv;
	int stage = 0;
	std::thread t([&] {
		std::unique_lock<jpsync::mutex> lk(m);
		cv.wait(lk, [&] { return stage == 1; });
		stage = 2;
		cv.notify_all();
	});
	{
		std::unique_lock<jpsync::mutex> lk(m);
		stage = 1;
		cv.notify_one();
		CU_ASSERT_TRUE(cv.wait_for(lk, 10s, [&] { return stage == 2; }));
	}
	t.join();
	std::unique_lock<jpsync::mutex> lk(m);
	auto t0 = std::chrono::steady_clock::now();
	CU_ASSERT_FALSE(cv.wait_for(lk, 30ms, [] { return false; }));
	CU_ASSERT(std::chrono::steady_clock::now() - t0 >= 29ms);
	t0 = std::chrono::steady_clock::now();
	(void)cv.wait_until(lk, std::chrono::system_clock::now() + 10ms);	// may wake spuriously
	CU_ASSERT(std::chrono::steady_clock::now() - t0 < 5s);
	CU_ASSERT_FALSE(cv.wait_until(lk, std::chrono::steady_clock::now() - 1s, [] { return false; }));
}

void test_semaphore_and_barrier()
{
	jpsync::counting_semaphore<> s(0);
	std::thread t([&] { s.release(3); });
	s.acquire();
	t.join();
	CU_ASSERT_TRUE(s.try_acquire());
	CU_ASSERT_TRUE(s.try_acquire_for(1s));
	CU_ASSERT_FALSE(s.try_acquire());
	CU_ASSERT_FALSE(s.try_acquire_until(std::chrono::steady_clock::now() + 10ms));
	CU_ASSERT_EQUAL(s.value(), 0);

	jpsync::counting_semaphore<> full(jpsync::counting_semaphore<>::max());
	try {
		full.release();
		CU_FAIL("release past JP_SEM_VALUE_MAX did not throw");
	} catch (const std::system_error &e) {
		CU_ASSERT_EQUAL(e.code().value(), EOVERFLOW);
		CU_ASSERT(std::string(e.what()).find("jp_sem_post") != std::string::npos);
	}
	try {
		jpsync::binary_semaphore bad(-1);
		CU_FAIL("a negative count did not throw");
	} catch (const std::system_error &e) {
		CU_ASSERT_EQUAL(e.code().value(), EINVAL);
	}

	constexpr int n = 4;
	jpsync::barrier b(n);
	std::atomic<int> serial{0}, slots[n];
	std::vector<std::thread> th;
	for (auto &x : slots)
		x = 0;
	for (int i = 0; i < n; i++)
		th.emplace_back([&, i] {
			for (int r = 1; r <= 50; r++) {
				slots[i] = r;
				if (b.arrive_and_wait())
					serial++;
				for (auto &x : slots)
					if (x.load() < r)
						thread_failures++;
				b.arrive_and_wait();
			}
		});
	for (auto &x : th)
		x.join();
	CU_ASSERT_EQUAL(serial.load(), 50);
	try {
		jpsync::barrier zero(0);
		CU_FAIL("a barrier of 0 did not throw");
	} catch (const std::system_error &e) {
		CU_ASSERT_EQUAL(e.code().value(), EINVAL);
	}
}

// ---- queues ------------------------------------------------------------------

struct counted {
	static std::atomic<int> alive;
	std::string s;
	explicit counted(std::string v) : s(std::move(v)) { alive++; }
	counted(counted &&o) noexcept : s(std::move(o.s)) { alive++; }
	counted &operator=(counted &&o) noexcept { s = std::move(o.s); return *this; }
	~counted() { alive--; }
};
std::atomic<int> counted::alive{0};

template <class Q>
void queue_of_strings()
{
	{
		Q q(4);
		CU_ASSERT_EQUAL(q.capacity(), 4u);
		for (int i = 0; i < 4; i++)
			CU_ASSERT_TRUE(q.try_push(std::string(100, char('a' + i))));	// not SSO
		std::string more(50, 'z');
		CU_ASSERT_FALSE(q.try_push(std::move(more)));	// full: more kept
		CU_ASSERT_EQUAL(more, std::string(50, 'z'));
		CU_ASSERT_FALSE(q.push_for(more, 10ms));
		CU_ASSERT_FALSE(q.push_until(std::move(more), std::chrono::system_clock::now() + 5ms));
		CU_ASSERT_EQUAL(more.size(), 50u);
		CU_ASSERT_EQUAL(q.size(), 4u);
		auto v = q.pop();
		CU_ASSERT_TRUE(v.has_value() && *v == std::string(100, 'a'));
		v = q.try_pop();
		CU_ASSERT_TRUE(v.has_value() && *v == std::string(100, 'b'));
		CU_ASSERT_TRUE(q.push(std::string("short")));
		q.close();
		CU_ASSERT_FALSE(q.push(std::string("after close")));	// no exception
		CU_ASSERT_FALSE(q.try_push(std::string("after close")));
		CU_ASSERT_TRUE(q.pop_for(1s).has_value());	// drains what is left
		CU_ASSERT_TRUE(q.pop().has_value());
		auto last = q.pop_until(std::chrono::steady_clock::now() + 1s);
		CU_ASSERT_TRUE(last.has_value() && *last == "short");
		CU_ASSERT_FALSE(q.pop().has_value());	// closed and empty
	}
	{
		// Elements left at destruction are destroyed.
		jpsync::mpmc_queue<counted> q(8);
		for (int i = 0; i < 5; i++)
			CU_ASSERT_TRUE(q.push(counted(std::string(64, 'x'))));
		CU_ASSERT_EQUAL(counted::alive.load(), 5);
	}
	CU_ASSERT_EQUAL(counted::alive.load(), 0);
	{
		Q q(2);
		auto t0 = std::chrono::steady_clock::now();
		CU_ASSERT_FALSE(q.pop_for(30ms).has_value());
		CU_ASSERT(std::chrono::steady_clock::now() - t0 >= 29ms);
	}
}

void test_queues_of_strings()
{
	queue_of_strings<jpsync::spsc_queue<std::string>>();
	queue_of_strings<jpsync::mpsc_queue<std::string>>();
	queue_of_strings<jpsync::mpmc_queue<std::string>>();
}

// The three ways an element travels (detail::basic_queue in
// <jpsync/queue.hpp>): built in the slot (nothrow move, alignment up to
// 8), through a pointer (a move that may throw, an alignment above 8), and
// a copy that throws before any slot is held.
struct move_may_throw {
	std::string s;
	explicit move_may_throw(std::string v) : s(std::move(v)) {}
	move_may_throw(const move_may_throw &) = default;
	move_may_throw(move_may_throw &&o) noexcept(false) : s(std::move(o.s)) {}
	move_may_throw &operator=(move_may_throw &&o) noexcept(false) { s = std::move(o.s); return *this; }
};

struct alignas(32) wide {
	std::string s;
	explicit wide(std::string v) : s(std::move(v)) {}
};

struct big {
	std::string s;
	char pad[100] = {};
	explicit big(std::string v) : s(std::move(v)) {}
};

struct copy_throws {
	static std::atomic<bool> armed;
	int v;
	explicit copy_throws(int x) : v(x) {}
	copy_throws(const copy_throws &o) : v(o.v)
	{
		if (armed)
			throw std::runtime_error("copy");
	}
	copy_throws(copy_throws &&o) noexcept : v(o.v) {}
	~copy_throws() {}
};
std::atomic<bool> copy_throws::armed{false};

template <class Q, class T>
void element_round_trip()
{
	Q q(4);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_TRUE(q.try_push(T(std::string(40, char('a' + i)))));
	T more(std::string("kept"));
	CU_ASSERT_FALSE(q.try_push(std::move(more)));	// full
	CU_ASSERT_EQUAL(more.s, "kept");
	for (int i = 0; i < 4; i++) {
		auto v = q.try_pop();
		CU_ASSERT_TRUE(v.has_value() && v->s == std::string(40, char('a' + i)));
	}
	CU_ASSERT_FALSE(q.try_pop().has_value());
	CU_ASSERT_TRUE(q.push(T(std::string("left"))));	// destroyed with q
}

void test_queue_element_kinds()
{
	element_round_trip<jpsync::mpmc_queue<move_may_throw>, move_may_throw>();
	element_round_trip<jpsync::spsc_queue<wide>, wide>();
	element_round_trip<jpsync::mpsc_queue<wide>, wide>();
	element_round_trip<jpsync::mpmc_queue<big>, big>();	// over 64 bytes
	for (int k = 0; k < 3; k++) {
		auto run = [](auto &q) {
			copy_throws c(7);
			copy_throws::armed = true;
			try {
				q.push(c);
				CU_FAIL("a throwing copy did not throw");
			} catch (const std::runtime_error &) {
			}
			copy_throws::armed = false;
			CU_ASSERT_EQUAL(q.size(), 0u);	// nothing claimed, nothing lost
			CU_ASSERT_TRUE(q.try_push(c));
			auto v = q.try_pop();
			CU_ASSERT_TRUE(v.has_value() && v->v == 7);
		};
		if (k == 0) {
			jpsync::spsc_queue<copy_throws> q(2);
			run(q);
		} else if (k == 1) {
			jpsync::mpsc_queue<copy_throws> q(2);
			run(q);
		} else {
			jpsync::mpmc_queue<copy_throws> q(2);
			run(q);
		}
	}
}

void test_queue_of_unique_ptr_threads()
{
	jpsync::mpmc_queue<std::unique_ptr<long>> q(64);
	constexpr long per = 20000;
	std::atomic<long> sum{0};
	std::vector<std::thread> t;

	for (int p = 0; p < 2; p++)
		t.emplace_back([&] {
			for (long i = 1; i <= per; i++)
				if (!q.push(std::make_unique<long>(i)))
					thread_failures++;
		});
	for (int c = 0; c < 2; c++)
		t.emplace_back([&] {
			while (auto v = q.pop())
				sum += **v;
		});
	t[0].join();
	t[1].join();
	q.close();
	t[2].join();
	t[3].join();
	CU_ASSERT_EQUAL(sum.load(), 2 * per * (per + 1) / 2);
	// Trivially copyable elements travel in the slots.
	jpsync::spsc_queue<double> d(2);
	CU_ASSERT_TRUE(d.try_push(1.5));
	CU_ASSERT_EQUAL(*d.pop(), 1.5);
}

// ---- pools, epoch, resources ------------------------------------------------------

struct obj {
	static std::atomic<int> alive;
	int a;
	std::string s;
	obj(int x, std::string y) : a(x), s(std::move(y)) { alive++; }
	~obj() { alive--; }
};
std::atomic<int> obj::alive{0};

void test_pools()
{
	{
		jpsync::object_pool<obj> p(4);
		CU_ASSERT_EQUAL(p.capacity(), 4u);
		obj *o[5];
		for (int i = 0; i < 4; i++) {
			o[i] = p.acquire(i, std::string(40, 'p'));
			CU_ASSERT_FATAL(o[i] != nullptr);
			CU_ASSERT_EQUAL(o[i]->a, i);
		}
		o[4] = p.acquire(9, "none");
		CU_ASSERT_PTR_NULL(o[4]);
		CU_ASSERT_EQUAL(obj::alive.load(), 4);
		for (int i = 0; i < 4; i++)
			p.release(o[i]);
		p.release(nullptr);
		CU_ASSERT_EQUAL(obj::alive.load(), 0);
	}
	jpsync::thread_cached_object_pool<obj> tp(256);
	std::vector<std::thread> t;
	for (int i = 0; i < 4; i++)
		t.emplace_back([&, i] {
			for (int k = 0; k < 10000; k++) {
				obj *x = tp.acquire(k, "");
				if (x == nullptr || x->a != k)
					thread_failures++;
				tp.release(x);
			}
			(void)i;
		});
	for (auto &th : t)
		th.join();
	CU_ASSERT_EQUAL(obj::alive.load(), 0);
	// Released by a thread that never acquired: its first use of the pool.
	obj *moved = tp.acquire(7, "moved");
	CU_ASSERT_FATAL(moved != nullptr);
	std::thread([&] { tp.release(moved); }).join();
	CU_ASSERT_EQUAL(obj::alive.load(), 0);
	// Every object is back: the threads' caches went back at their exit.
	std::vector<obj *> all;
	while (obj *x = tp.acquire(0, ""))
		all.push_back(x);
	CU_ASSERT_EQUAL(all.size(), 256u);
	for (obj *x : all)
		tp.release(x);
	try {
		jpsync::object_pool<obj> none(0);
		CU_FAIL("a pool of 0 did not throw");
	} catch (const std::system_error &e) {
		CU_ASSERT_EQUAL(e.code().value(), EINVAL);
		CU_ASSERT(std::string(e.what()).find("jp_pool_create") != std::string::npos);
	}
}

struct node {
	static std::atomic<int> freed;
	long v;
	~node() { freed++; }
};
std::atomic<int> node::freed{0};

void test_epoch()
{
	jpsync::epoch e;
	std::atomic<node *> shared{new node{1}};
	std::atomic<bool> stop{false};
	std::thread reader([&] {
		while (!stop) {
			{
				auto g = e.enter();
				node *n = shared.load();
				RECEIVE(&shared);
				if (n->v <= 0)
					thread_failures++;
			}
			// Let the retiring thread run: valgrind runs one thread
			// at a time, and a reader that never yields made this
			// case take minutes under drd.
			std::this_thread::yield();
		}
	});
	for (long i = 2; i < 200; i++) {
		node *fresh = new node{i};

		PUBLISH(&shared);
		node *old = shared.exchange(fresh);
		e.retire(old);
	}
	stop = true;
	reader.join();
	e.barrier();
	CU_ASSERT_EQUAL(node::freed.load(), 198);
	delete shared.load();
}

void test_resources_and_allocator()
{
	{
		jpsync::arena_resource arena(1 << 16);
		std::pmr::vector<int> v(&arena);
		for (int i = 0; i < 1000; i++)
			v.push_back(i);
		CU_ASSERT_EQUAL(v[999], 999);
		std::pmr::string s("a string longer than the small-string buffer", &arena);
		CU_ASSERT_EQUAL(s.size(), 44u);
		void *big = nullptr;
		try {
			big = arena.allocate(1 << 20, 64);
		} catch (const std::bad_alloc &) {
			big = nullptr;
		}
		CU_ASSERT_PTR_NULL(big);	// full: std::bad_alloc
	}
	{
		jpsync::arena_resource mine(jp_arena_local());
		void *p = mine.allocate(100, 256);
		CU_ASSERT((reinterpret_cast<std::uintptr_t>(p) & 255) == 0);
		mine.release();
	}
	std::pmr::unsynchronized_pool_resource pool(jpsync::jp_alloc_resource());
	std::pmr::map<int, std::pmr::string> m(&pool);
	for (int i = 0; i < 100; i++)
		m.emplace(i, std::pmr::string(50, 'm'));
	CU_ASSERT_EQUAL(m.size(), 100u);
	CU_ASSERT_TRUE(*jpsync::jp_alloc_resource() == *jpsync::jp_alloc_resource());
	void *a = jpsync::jp_alloc_resource()->allocate(64, 128);
	CU_ASSERT((reinterpret_cast<std::uintptr_t>(a) & 127) == 0);
	jpsync::jp_alloc_resource()->deallocate(a, 64, 128);

	std::vector<std::string, jpsync::allocator<std::string>> v;
	for (int i = 0; i < 1000; i++)
		v.emplace_back(std::to_string(i));
	CU_ASSERT_EQUAL(v[500], "500");
	std::map<int, int, std::less<int>, jpsync::allocator<std::pair<const int, int>>> mm;
	mm[3] = 4;
	CU_ASSERT_EQUAL(mm[3], 4);
	struct alignas(128) wide { char c[128]; };
	std::vector<wide, jpsync::allocator<wide>> w(3);
	CU_ASSERT((reinterpret_cast<std::uintptr_t>(w.data()) & 127) == 0);
	CU_ASSERT_TRUE(jpsync::allocator<int>() == jpsync::allocator<long>());
}

// Under jp_hammer_rounds, so that every thread starts each round of the
// body in the same instant: a jpsync::mutex counter through lock_guard, a
// jpsync::shared_mutex table through unique_lock and shared_lock (a
// reader must never see it half written), an mpmc_queue of heap-allocated
// std::string handed from the even threads to the odd ones, and
// thread-cached objects acquired and released on every thread.
struct hammer_ctx {
	jpsync::mutex m;
	long counter = 0;
	jpsync::shared_mutex rw;
	long table[8] = {};
	jpsync::mpmc_queue<std::string> q{64};
	jpsync::thread_cached_object_pool<std::string> pool{256};
	std::atomic<long> pushed{0}, popped{0}, bad{0};
};

void hammer_body(void *arg, unsigned t, uint64_t i)
{
	auto *c = static_cast<hammer_ctx *>(arg);

	{
		std::lock_guard<jpsync::mutex> g(c->m);
		c->counter++;
	}
	if (i % 8 == t % 8) {
		std::unique_lock<jpsync::shared_mutex> w(c->rw);
		for (long &x : c->table)
			x++;
	} else {
		std::shared_lock<jpsync::shared_mutex> r(c->rw);
		for (long x : c->table)
			if (x != c->table[0])
				c->bad++;
	}
	if (t % 2 == 0) {
		// 40 characters: beyond the short-string buffer, on the heap.
		if (c->q.try_push(std::string(40, static_cast<char>('a' + i % 26))))
			c->pushed++;
	} else if (std::optional<std::string> s = c->q.try_pop()) {
		if (s->size() != 40 || (*s)[0] != (*s)[39])
			c->bad++;
		c->popped++;
	}
	if (std::string *o = c->pool.acquire(std::to_string(i))) {
		if (*o != std::to_string(i))
			c->bad++;
		c->pool.release(o);
	}
}

void test_under_hammer()
{
	const unsigned threads = 4;
	// Two rounds under valgrind, whose tools run one thread at a time.
	const uint64_t iters = jp_test_on_valgrind() ? 200 : jp_test_scaled(20000, 500);
	auto c = std::make_unique<hammer_ctx>();

	CU_ASSERT_EQUAL_FATAL(jp_hammer_rounds(threads, iters, 100, hammer_body, c.get()), 0);
	CU_ASSERT_EQUAL(c->counter, static_cast<long>(threads * iters));
	CU_ASSERT_EQUAL(c->bad.load(), 0);
	// Every round has threads/2 writers of the table per 8 iterations.
	CU_ASSERT_EQUAL(c->table[0], c->table[7]);
	CU_ASSERT_TRUE(c->table[0] > 0);
	long left = 0;
	while (c->q.try_pop())
		left++;
	CU_ASSERT_EQUAL(c->pushed.load(), c->popped.load() + left);
	CU_ASSERT_TRUE(c->popped.load() > 0);
}

void test_thread_failures()
{
	CU_ASSERT_EQUAL(thread_failures.load(), 0u);
}

}  // namespace

int main()
{
	CU_TestInfo tests[] = {
		{ const_cast<char *>("mutex: lock_guard, unique_lock, scoped_lock, timed"), test_mutex },
		{ const_cast<char *>("shared_mutex: shared_lock, timed, exclusion"), test_shared_mutex },
		{ const_cast<char *>("condition_variable: predicates, timeouts, both clocks"),
		  test_condition_variable },
		{ const_cast<char *>("counting_semaphore, barrier; errors as system_error"),
		  test_semaphore_and_barrier },
		{ const_cast<char *>("queues of std::string: full, timeouts, close, leftovers"),
		  test_queues_of_strings },
		{ const_cast<char *>("mpmc of unique_ptr across threads; doubles in slots"),
		  test_queue_of_unique_ptr_threads },
		{ const_cast<char *>("queue elements in place, through a pointer, copies that throw"),
		  test_queue_element_kinds },
		{ const_cast<char *>("object_pool, thread_cached_object_pool"), test_pools },
		{ const_cast<char *>("epoch: guard and retire"), test_epoch },
		{ const_cast<char *>("arena_resource, alloc_resource, allocator"),
		  test_resources_and_allocator },
		{ const_cast<char *>("under jp_hammer: mutex, shared_mutex, mpmc_queue<std::string>, pool"),
		  test_under_hammer },
		{ const_cast<char *>("no thread saw a failure"), test_thread_failures },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ const_cast<char *>("jpsync.hpp"), nullptr, nullptr, nullptr, nullptr, tests },
		CU_SUITE_INFO_NULL,
	};

	return jp_test_run(suites);
}
