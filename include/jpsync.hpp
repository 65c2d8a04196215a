// jpsync.hpp - libjpsync for C++17 and C++20: header-only wrappers of the
// C library (libjpsync 1.1), so that its locks work with std::lock_guard,
// std::unique_lock, std::scoped_lock and std::shared_lock, its queues carry
// any movable type, and its allocator and arenas serve standard containers.
//
//   jpsync::mutex               jp_mutex_t: Lockable, TimedLockable
//   jpsync::shared_mutex        jp_rwlock_t: also SharedTimedLockable
//   jpsync::condition_variable  jp_cond_t, with std::unique_lock<jpsync::mutex>
//   jpsync::counting_semaphore  jp_sem_t (and binary_semaphore)
//   jpsync::barrier             jp_barrier_t
//   jpsync::spsc_queue<T>       jp_spsc_t, jp_mpsc_t, jp_mpmc_t of any movable T:
//   jpsync::mpsc_queue<T>         try_push, push (blocking, or until a
//   jpsync::mpmc_queue<T>         duration or a time point), pop returning
//                                 std::optional<T>, close
//   jpsync::object_pool<T>      jp_pool_t of T constructed in place
//   jpsync::thread_cached_object_pool<T>   the same with per-thread caches
//   jpsync::epoch               jp_epoch_t, with an RAII read guard and retire
//   jpsync::arena_resource      jp_arena_t as a std::pmr::memory_resource
//   jpsync::alloc_resource      jp_alloc as a std::pmr::memory_resource
//   jpsync::allocator<T>        jp_alloc as a standard allocator
//
// Errors: a C call that fails for a reason other than the one the C++
// signature reports (a timeout is false or std::nullopt, a closed queue is
// false or std::nullopt) throws std::system_error with the errno value the
// C call returned and the C function's name; running out of memory throws
// std::bad_alloc.  No destructor throws.  Every wrapper is an inline call
// of the C function it names: a jpsync::mutex lock+unlock costs exactly
// the instructions of jp_mutex_lock+jp_mutex_unlock (tests/cxx/check-cxx-cost.sh
// counts both with callgrind and fails on any difference); what the C++
// signature adds is only its own (a queue's std::optional<T> result sets
// and tests a flag: 5 instructions per try_push+try_pop of an int).
//
// Timeouts: a std::chrono duration is measured from the call; a time point
// of std::chrono::steady_clock is the same instant on CLOCK_MONOTONIC, the
// clock of every libjpsync deadline; a time point of any other clock
// (system_clock included) is converted once, at the call, into the
// CLOCK_MONOTONIC instant as far away, as std::condition_variable does.
//
// Queues carry T in place in the C queue's slots when T is trivially
// copyable (a byte copy is then a copy); any other T is moved into an
// object allocated with jp_alloc, and the slots carry its address (a byte
// copy of a std::string, which may point into itself, would be undefined).
//
// Link with -ljpsync (pkg-config --libs jpsync); see jpsync-cxx(7).
#ifndef JPSYNC_HPP
#define JPSYNC_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
# error "<jpsync.hpp> needs C++17 or later"
#endif

#include <jpsync.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <limits>
#include <memory_resource>
#include <mutex>
#include <new>
#include <optional>
#include <system_error>
#include <type_traits>
#include <utility>

namespace jpsync {

namespace detail {

[[noreturn]] inline void throw_errno(int err, const char *what)
{
	throw std::system_error(err, std::generic_category(), what);
}

// A CLOCK_MONOTONIC instant given in seconds, clamped to what a timespec
// holds (a deadline before the clock's epoch is simply past).
inline timespec monotonic_at(long double secs) noexcept
{
	constexpr long double hi = static_cast<long double>(std::numeric_limits<std::time_t>::max());
	constexpr long double lo = static_cast<long double>(std::numeric_limits<std::time_t>::min());
	timespec ts;

	if (!(secs < hi)) {
		ts.tv_sec = std::numeric_limits<std::time_t>::max();
		ts.tv_nsec = 999999999L;
		return ts;
	}
	if (!(secs > lo + 1)) {
		ts.tv_sec = std::numeric_limits<std::time_t>::min() + 1;
		ts.tv_nsec = 0;
		return ts;
	}
	long double whole = std::floor(secs);
	long nsec = static_cast<long>((secs - whole) * 1e9L);

	ts.tv_sec = static_cast<std::time_t>(whole);
	ts.tv_nsec = nsec < 0 ? 0 : nsec > 999999999L ? 999999999L : nsec;
	return ts;
}

inline long double monotonic_now() noexcept
{
	timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return static_cast<long double>(now.tv_sec) + static_cast<long double>(now.tv_nsec) / 1e9L;
}

// The deadline of a timeout of d from now.
template <class Rep, class Period>
inline timespec deadline_after(const std::chrono::duration<Rep, Period> &d) noexcept
{
	const long double secs = std::chrono::duration<long double>(d).count();
	timespec ts;

	if (!(secs > 0))
		jp_deadline_after(&ts, 0);	// already past: one attempt
	else if (secs >= 1.8e10L)
		jp_deadline_after(&ts, UINT64_MAX);	// 570 years and more: forever
	else
		jp_deadline_after(&ts, static_cast<std::uint64_t>(secs * 1e9L));
	return ts;
}

// The deadline of a time point of any clock.
template <class Clock, class Duration>
inline timespec deadline_at(const std::chrono::time_point<Clock, Duration> &tp)
{
	if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
		// steady_clock is CLOCK_MONOTONIC on Linux (libstdc++, libc++).
		return monotonic_at(std::chrono::duration<long double>(tp.time_since_epoch()).count());
	} else {
		const long double rel = std::chrono::duration<long double>(tp - Clock::now()).count();

		return monotonic_at(monotonic_now() + rel);
	}
}

}  // namespace detail

// ---- locks ---------------------------------------------------------------

// jp_mutex_t: works with std::lock_guard, std::unique_lock, std::scoped_lock,
// and try_lock_for/try_lock_until on any clock.  constexpr: a namespace-scope
// jpsync::mutex is initialised before any code runs, as std::mutex is.
class mutex {
public:
	constexpr mutex() noexcept = default;
	~mutex() { jp_mutex_destroy(&m_); }
	mutex(const mutex &) = delete;
	mutex &operator=(const mutex &) = delete;

	void lock() noexcept { jp_mutex_lock(&m_); }
	bool try_lock() noexcept { return jp_mutex_trylock(&m_) == 0; }
	void unlock() noexcept { jp_mutex_unlock(&m_); }

	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
	{
		const timespec ts = detail::deadline_after(d);

		return timed(ts);
	}

	template <class Clock, class Duration>
	bool try_lock_until(const std::chrono::time_point<Clock, Duration> &tp)
	{
		const timespec ts = detail::deadline_at(tp);

		return timed(ts);
	}

	using native_handle_type = jp_mutex_t *;
	native_handle_type native_handle() noexcept { return &m_; }

private:
	bool timed(const timespec &ts)
	{
		const int r = jp_mutex_timedlock(&m_, &ts);

		if (r == 0 || r == ETIMEDOUT)
			return r == 0;
		detail::throw_errno(r, "jp_mutex_timedlock");
	}

	jp_mutex_t m_ = JP_MUTEX_INIT;
};

// jp_rwlock_t (phase-fair: neither readers nor writers starve): works with
// std::shared_lock as well.  A thread must not take a shared lock it
// already holds (see jp_rwlock(3)).
class shared_mutex {
public:
	constexpr shared_mutex() noexcept = default;
	~shared_mutex() { jp_rwlock_destroy(&rw_); }
	shared_mutex(const shared_mutex &) = delete;
	shared_mutex &operator=(const shared_mutex &) = delete;

	void lock() noexcept { jp_rwlock_wrlock(&rw_); }
	bool try_lock() noexcept { return jp_rwlock_trywrlock(&rw_) == 0; }
	void unlock() noexcept { jp_rwlock_unlock(&rw_); }

	// Throws std::system_error (EAGAIN) when JP_RWLOCK_READERS_MAX read
	// locks are held, as std::shared_mutex may.
	void lock_shared()
	{
		const int r = jp_rwlock_rdlock(&rw_);

		if (r != 0)
			detail::throw_errno(r, "jp_rwlock_rdlock");
	}
	bool try_lock_shared() noexcept { return jp_rwlock_tryrdlock(&rw_) == 0; }
	void unlock_shared() noexcept { jp_rwlock_unlock(&rw_); }

	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
	{
		return timed(detail::deadline_after(d), false);
	}
	template <class Clock, class Duration>
	bool try_lock_until(const std::chrono::time_point<Clock, Duration> &tp)
	{
		return timed(detail::deadline_at(tp), false);
	}
	template <class Rep, class Period>
	bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d)
	{
		return timed(detail::deadline_after(d), true);
	}
	template <class Clock, class Duration>
	bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &tp)
	{
		return timed(detail::deadline_at(tp), true);
	}

	using native_handle_type = jp_rwlock_t *;
	native_handle_type native_handle() noexcept { return &rw_; }

private:
	bool timed(const timespec &ts, bool shared)
	{
		const int r = shared ? jp_rwlock_timedrdlock(&rw_, &ts) : jp_rwlock_timedwrlock(&rw_, &ts);

		if (r == 0 || r == ETIMEDOUT || r == EAGAIN)
			return r == 0;
		detail::throw_errno(r, shared ? "jp_rwlock_timedrdlock" : "jp_rwlock_timedwrlock");
	}

	jp_rwlock_t rw_ = JP_RWLOCK_INIT;
};

// jp_cond_t, used with std::unique_lock<jpsync::mutex> (which must own its
// mutex).  Wake-ups may be spurious: use the forms with a predicate.
class condition_variable {
public:
	constexpr condition_variable() noexcept = default;
	~condition_variable() { jp_cond_destroy(&c_); }
	condition_variable(const condition_variable &) = delete;
	condition_variable &operator=(const condition_variable &) = delete;

	void notify_one() noexcept { jp_cond_signal(&c_); }
	void notify_all() noexcept { jp_cond_broadcast(&c_); }

	void wait(std::unique_lock<mutex> &lk) noexcept
	{
		jp_cond_wait(&c_, lk.mutex()->native_handle());
	}

	template <class Predicate>
	void wait(std::unique_lock<mutex> &lk, Predicate pred)
	{
		while (!pred())
			wait(lk);
	}

	template <class Clock, class Duration>
	std::cv_status wait_until(std::unique_lock<mutex> &lk,
				  const std::chrono::time_point<Clock, Duration> &tp)
	{
		return timed(lk, detail::deadline_at(tp));
	}

	template <class Clock, class Duration, class Predicate>
	bool wait_until(std::unique_lock<mutex> &lk, const std::chrono::time_point<Clock, Duration> &tp,
			Predicate pred)
	{
		const timespec ts = detail::deadline_at(tp);

		return timed_pred(lk, ts, pred);
	}

	template <class Rep, class Period>
	std::cv_status wait_for(std::unique_lock<mutex> &lk, const std::chrono::duration<Rep, Period> &d)
	{
		return timed(lk, detail::deadline_after(d));
	}

	template <class Rep, class Period, class Predicate>
	bool wait_for(std::unique_lock<mutex> &lk, const std::chrono::duration<Rep, Period> &d,
		      Predicate pred)
	{
		const timespec ts = detail::deadline_after(d);	// one deadline for every wait

		return timed_pred(lk, ts, pred);
	}

	using native_handle_type = jp_cond_t *;
	native_handle_type native_handle() noexcept { return &c_; }

private:
	std::cv_status timed(std::unique_lock<mutex> &lk, const timespec &ts)
	{
		const int r = jp_cond_timedwait(&c_, lk.mutex()->native_handle(), &ts);

		if (r == 0 || r == ETIMEDOUT)
			return r == 0 ? std::cv_status::no_timeout : std::cv_status::timeout;
		detail::throw_errno(r, "jp_cond_timedwait");
	}

	template <class Predicate>
	bool timed_pred(std::unique_lock<mutex> &lk, const timespec &ts, Predicate &pred)
	{
		while (!pred())
			if (timed(lk, ts) == std::cv_status::timeout)
				return pred();
		return true;
	}

	jp_cond_t c_ = JP_COND_INIT;
};

// jp_sem_t.  The count never exceeds JP_SEM_VALUE_MAX: release() past it
// throws std::system_error (EOVERFLOW), leaving the posts already made.
template <std::ptrdiff_t LeastMaxValue = JP_SEM_VALUE_MAX>
class counting_semaphore {
	static_assert(LeastMaxValue >= 0 && LeastMaxValue <= static_cast<std::ptrdiff_t>(JP_SEM_VALUE_MAX),
		      "jp_sem_t counts to JP_SEM_VALUE_MAX");

public:
	static constexpr std::ptrdiff_t max() noexcept { return JP_SEM_VALUE_MAX; }

	explicit counting_semaphore(std::ptrdiff_t desired)
	{
		const int r = desired < 0 || desired > max() ? EINVAL
			: jp_sem_init(&s_, static_cast<unsigned>(desired));

		if (r != 0)
			detail::throw_errno(r, "jp_sem_init");
	}
	~counting_semaphore() { jp_sem_destroy(&s_); }
	counting_semaphore(const counting_semaphore &) = delete;
	counting_semaphore &operator=(const counting_semaphore &) = delete;

	void release(std::ptrdiff_t update = 1)
	{
		for (; update > 0; update--) {
			const int r = jp_sem_post(&s_);

			if (r != 0)
				detail::throw_errno(r, "jp_sem_post");
		}
	}
	void acquire() noexcept { jp_sem_wait(&s_); }
	bool try_acquire() noexcept { return jp_sem_trywait(&s_) == 0; }

	template <class Rep, class Period>
	bool try_acquire_for(const std::chrono::duration<Rep, Period> &d)
	{
		return timed(detail::deadline_after(d));
	}
	template <class Clock, class Duration>
	bool try_acquire_until(const std::chrono::time_point<Clock, Duration> &tp)
	{
		return timed(detail::deadline_at(tp));
	}

	// The count at some instant during the call.
	std::ptrdiff_t value() const noexcept { return static_cast<std::ptrdiff_t>(jp_sem_value(&s_)); }

	using native_handle_type = jp_sem_t *;
	native_handle_type native_handle() noexcept { return &s_; }

private:
	bool timed(const timespec &ts)
	{
		const int r = jp_sem_timedwait(&s_, &ts);

		if (r == 0 || r == ETIMEDOUT)
			return r == 0;
		detail::throw_errno(r, "jp_sem_timedwait");
	}

	jp_sem_t s_ = JP_SEM_INIT(0);
};

using binary_semaphore = counting_semaphore<1>;

// jp_barrier_t: arrive_and_wait() returns once `expected` threads have
// called it, true in one thread of each round (the last to arrive, as
// pthread_barrier_wait's PTHREAD_BARRIER_SERIAL_THREAD), false in the
// others.  Unlike std::barrier it has no completion function and no
// arrive/arrive_and_drop: a fixed set of threads meets at it, round after
// round.
class barrier {
public:
	static constexpr std::ptrdiff_t max() noexcept { return JP_BARRIER_COUNT_MAX; }

	explicit barrier(std::ptrdiff_t expected)
	{
		const int r = expected <= 0 || expected > max() ? EINVAL
			: jp_barrier_init(&b_, static_cast<unsigned>(expected));

		if (r != 0)
			detail::throw_errno(r, "jp_barrier_init");
	}
	~barrier() { jp_barrier_destroy(&b_); }
	barrier(const barrier &) = delete;
	barrier &operator=(const barrier &) = delete;

	bool arrive_and_wait() noexcept
	{
		return jp_barrier_wait(&b_) == JP_BARRIER_SERIAL_THREAD;
	}

	using native_handle_type = jp_barrier_t *;
	native_handle_type native_handle() noexcept { return &b_; }

private:
	jp_barrier_t b_ = JP_BARRIER_INIT(1);
};

// ---- queues -----------------------------------------------------------------

namespace detail {

#define JPSYNC_QUEUE_OPS_(K) \
	struct K##_ops { \
		using queue = jp_##K##_t; \
		static constexpr const char *create_name = "jp_" #K "_create"; \
		static constexpr const char *push_name = "jp_" #K "_push"; \
		static constexpr const char *pop_name = "jp_" #K "_pop"; \
		static queue *create(std::size_t c, std::size_t e) noexcept { return jp_##K##_create(c, e); } \
		static void destroy(queue *q) noexcept { jp_##K##_destroy(q); } \
		static int try_push(queue *q, const void *e) noexcept { return jp_##K##_try_push(q, e); } \
		static int try_pop(queue *q, void *e) noexcept { return jp_##K##_try_pop(q, e); } \
		static int push(queue *q, const void *e, const timespec *d) noexcept \
		{ return jp_##K##_push(q, e, d); } \
		static int pop(queue *q, void *e, const timespec *d) noexcept { return jp_##K##_pop(q, e, d); } \
		static int try_push_start(queue *q, jp_queue_slot_t *s) noexcept \
		{ return jp_##K##_try_push_start(q, s); } \
		static int push_start(queue *q, jp_queue_slot_t *s, const timespec *d) noexcept \
		{ return jp_##K##_push_start(q, s, d); } \
		static void push_finish(queue *q, jp_queue_slot_t *s) noexcept { jp_##K##_push_finish(q, s); } \
		static int try_pop_start(queue *q, jp_queue_slot_t *s) noexcept \
		{ return jp_##K##_try_pop_start(q, s); } \
		static int pop_start(queue *q, jp_queue_slot_t *s, const timespec *d) noexcept \
		{ return jp_##K##_pop_start(q, s, d); } \
		static void pop_finish(queue *q, jp_queue_slot_t *s) noexcept { jp_##K##_pop_finish(q, s); } \
		static void close(queue *q) noexcept { jp_##K##_close(q); } \
		static std::size_t size(const queue *q) noexcept { return jp_##K##_size(q); } \
		static std::size_t capacity(const queue *q) noexcept { return jp_##K##_capacity(q); } \
	};
JPSYNC_QUEUE_OPS_(spsc)
JPSYNC_QUEUE_OPS_(mpsc)
JPSYNC_QUEUE_OPS_(mpmc)
#undef JPSYNC_QUEUE_OPS_

// Memory for one T from jp_alloc, its alignment kept.
template <class T>
inline void *alloc_for() noexcept
{
	if constexpr (alignof(T) > alignof(std::max_align_t))
		return jp_alloc_aligned(alignof(T), sizeof(T));
	else
		return jp_alloc(sizeof(T));
}

template <class T, class Ops>
class basic_queue {
	// How a T travels.  Trivially copyable: its bytes, copied in and out.
	// Otherwise, where its move cannot throw, the slot's alignment (up to
	// 8, see jpsync/queue.h) suits it and it is at most 64 bytes (so that
	// a ring of big T does not cost its capacity times sizeof(T)): built
	// in the slot itself (the in-place slots of libjpsync 1.1), moved out
	// on the other side.  Anything else: a jp_alloc'd T, its pointer in
	// the slot.
	static constexpr bool copied = std::is_trivially_copyable_v<T>;
	static constexpr bool in_place = !copied && std::is_nothrow_move_constructible_v<T> &&
					 std::is_nothrow_destructible_v<T> && alignof(T) <= 8 &&
					 sizeof(T) <= 64;
	using slot_type = std::conditional_t<copied || in_place, T, T *>;

public:
	using value_type = T;

	// A queue of at least `capacity` elements (rounded up to a power of
	// two); throws std::system_error with the errno of jp_*_create.
	explicit basic_queue(std::size_t capacity) : q_(Ops::create(capacity, sizeof(slot_type)))
	{
		if (q_ == nullptr)
			throw_errno(errno, Ops::create_name);
	}

	// Destroys every element still in the queue.
	~basic_queue()
	{
		if constexpr (in_place) {
			jp_queue_slot_t s;

			while (Ops::try_pop_start(q_, &s) == 0) {
				static_cast<T *>(s.elem)->~T();
				Ops::pop_finish(q_, &s);
			}
		} else if constexpr (!copied) {
			slot_type s;

			while (Ops::try_pop(q_, &s) == 0)
				drop(s);
		}
		Ops::destroy(q_);
	}
	basic_queue(const basic_queue &) = delete;
	basic_queue &operator=(const basic_queue &) = delete;

	// Without waiting: false when full or closed (v is then left as it was).
	bool try_push(const T &v) { return put(v, push_now()); }
	bool try_push(T &&v) { return put(std::move(v), push_now()); }

	// Waiting while full: false once the queue is closed.
	bool push(const T &v) { return put(v, wait_push(nullptr)); }
	bool push(T &&v) { return put(std::move(v), wait_push(nullptr)); }

	// Waiting while full, until a timeout: false once it has passed or the
	// queue is closed (v is then left as it was).
	template <class U, class Rep, class Period>
	bool push_for(U &&v, const std::chrono::duration<Rep, Period> &d)
	{
		const timespec ts = deadline_after(d);

		return put(std::forward<U>(v), wait_push(&ts));
	}
	template <class U, class Clock, class Duration>
	bool push_until(U &&v, const std::chrono::time_point<Clock, Duration> &tp)
	{
		const timespec ts = deadline_at(tp);

		return put(std::forward<U>(v), wait_push(&ts));
	}

	// An element, or std::nullopt when empty (try_pop), when closed and
	// empty (pop), or at the timeout (pop_for, pop_until).
	std::optional<T> try_pop() { return get(pop_now()); }
	std::optional<T> pop() { return get(wait_pop(nullptr)); }
	template <class Rep, class Period>
	std::optional<T> pop_for(const std::chrono::duration<Rep, Period> &d)
	{
		const timespec ts = deadline_after(d);

		return get(wait_pop(&ts));
	}
	template <class Clock, class Duration>
	std::optional<T> pop_until(const std::chrono::time_point<Clock, Duration> &tp)
	{
		const timespec ts = deadline_at(tp);

		return get(wait_pop(&ts));
	}

	// After close(), pushes return false and blocked callers return; pops
	// drain what is left, then return std::nullopt.
	void close() noexcept { Ops::close(q_); }
	std::size_t size() const noexcept { return Ops::size(q_); }
	std::size_t capacity() const noexcept { return Ops::capacity(q_); }

	using native_handle_type = typename Ops::queue *;
	native_handle_type native_handle() noexcept { return q_; }

private:
	// The C call each operation makes: a start of an in-place slot, or a
	// push/pop of the slot_type's bytes.
	using push_arg = std::conditional_t<in_place, jp_queue_slot_t *, const slot_type *>;
	using pop_arg = std::conditional_t<in_place, jp_queue_slot_t *, slot_type *>;

	auto push_now()
	{
		return [this](push_arg s) {
			if constexpr (in_place)
				return Ops::try_push_start(q_, s);
			else
				return Ops::try_push(q_, s);
		};
	}
	auto wait_push(const timespec *ts)
	{
		return [this, ts](push_arg s) {
			if constexpr (in_place)
				return Ops::push_start(q_, s, ts);
			else
				return Ops::push(q_, s, ts);
		};
	}
	auto pop_now()
	{
		return [this](pop_arg s) {
			if constexpr (in_place)
				return Ops::try_pop_start(q_, s);
			else
				return Ops::try_pop(q_, s);
		};
	}
	auto wait_pop(const timespec *ts)
	{
		return [this, ts](pop_arg s) {
			if constexpr (in_place)
				return Ops::pop_start(q_, s, ts);
			else
				return Ops::pop(q_, s, ts);
		};
	}

	static void drop(T *s) noexcept
	{
		s->~T();
		jp_free(s);
	}

	// 0: in; EAGAIN (full), ETIMEDOUT, EPIPE (closed): not in, false;
	// anything else throws.
	static bool verdict(int r, const char *what)
	{
		if (r == EAGAIN || r == ETIMEDOUT || r == EPIPE)
			return false;
		throw_errno(r, what);
	}

	template <class U, class Op>
	bool put(U &&v, Op op)
	{
		if constexpr (copied) {
			const slot_type s = v;
			const int r = op(&s);

			return r == 0 || verdict(r, Ops::push_name);
		} else if constexpr (in_place) {
			if constexpr (std::is_nothrow_constructible_v<T, U &&>) {
				// Straight into the slot; v is untouched unless it went in.
				jp_queue_slot_t s;
				const int r = op(&s);

				if (r != 0)
					return verdict(r, Ops::push_name);
				::new (s.elem) T(std::forward<U>(v));
				Ops::push_finish(q_, &s);
				return true;
			} else {
				// A copy may throw: make it before a slot is held.
				T t(std::forward<U>(v));

				return put(std::move(t), op);
			}
		} else {
			void *m = alloc_for<T>();

			if (m == nullptr)
				throw std::bad_alloc();
			slot_type s;
			try {
				s = ::new (m) T(std::forward<U>(v));
			} catch (...) {
				jp_free(m);
				throw;
			}
			const int r = op(&s);

			if (r == 0)
				return true;
			// Not in: give the caller its value back, then report.
			if constexpr (std::is_rvalue_reference_v<U &&> && std::is_move_assignable_v<T>)
				v = std::move(*s);
			drop(s);
			return verdict(r, Ops::push_name);
		}
	}

	template <class Op>
	std::optional<T> get(Op op)
	{
		if constexpr (in_place) {
			jp_queue_slot_t s;
			const int r = op(&s);

			if (r != 0) {
				verdict(r, Ops::pop_name);	// false, or throws
				return std::nullopt;
			}
			T *e = static_cast<T *>(s.elem);
			std::optional<T> out(std::move(*e));

			e->~T();
			Ops::pop_finish(q_, &s);
			return out;
		} else {
			slot_type s;
			const int r = op(&s);

			if (r != 0) {
				verdict(r, Ops::pop_name);	// false, or throws
				return std::nullopt;
			}
			if constexpr (copied) {
				return std::optional<T>(s);
			} else {
				struct guard {
					slot_type s;
					~guard() { drop(s); }
				} g{s};

				return std::optional<T>(std::move(*s));
			}
		}
	}

	typename Ops::queue *q_;
};

}  // namespace detail

// One producer thread and one consumer thread at a time (wait-free).
template <class T>
class spsc_queue : public detail::basic_queue<T, detail::spsc_ops> {
public:
	using detail::basic_queue<T, detail::spsc_ops>::basic_queue;
};

// Any number of producer threads, one consumer thread at a time.
template <class T>
class mpsc_queue : public detail::basic_queue<T, detail::mpsc_ops> {
public:
	using detail::basic_queue<T, detail::mpsc_ops>::basic_queue;
};

// Any number of producer and consumer threads.
template <class T>
class mpmc_queue : public detail::basic_queue<T, detail::mpmc_ops> {
public:
	using detail::basic_queue<T, detail::mpmc_ops>::basic_queue;
};

// ---- pools ----------------------------------------------------------------

namespace detail {

template <class T>
inline jp_pool_t *make_pool(std::size_t capacity, unsigned flags)
{
	jp_pool_t *p = jp_pool_create(sizeof(T), capacity, flags);

	if (p == nullptr)
		throw_errno(errno, "jp_pool_create");
	return p;
}

// A T constructed in the pool object m (nullptr when m is: the pool is
// exhausted); m goes back through put_back if T's constructor throws.
template <class T, class Put, class... Args>
inline T *construct_in(void *m, Put put_back, Args &&...args)
{
	if (m == nullptr)
		return nullptr;
	try {
		return ::new (m) T(std::forward<Args>(args)...);
	} catch (...) {
		put_back(m);
		throw;
	}
}

}  // namespace detail

// A jp_pool_t of T: acquire() constructs a T in place in a free object
// (nullptr when the pool is exhausted), release() destroys it and gives the
// object back.  Objects still out when the pool is destroyed are unmapped
// without their destructors.  Any thread may release what another acquired.
template <class T>
class object_pool {
public:
	explicit object_pool(std::size_t capacity) : p_(detail::make_pool<T>(capacity, 0)) {}
	~object_pool() { jp_pool_destroy(p_); }
	object_pool(const object_pool &) = delete;
	object_pool &operator=(const object_pool &) = delete;

	template <class... Args>
	T *acquire(Args &&...args)
	{
		return detail::construct_in<T>(jp_pool_get(p_), [this](void *m) { jp_pool_put(p_, m); },
					       std::forward<Args>(args)...);
	}

	void release(T *obj) noexcept
	{
		if (obj != nullptr) {
			obj->~T();
			jp_pool_put(p_, obj);
		}
	}

	std::size_t capacity() const noexcept { return jp_pool_capacity(p_); }
	jp_pool_t *native_handle() noexcept { return p_; }

private:
	jp_pool_t *p_;
};

// The same with JP_POOL_THREAD_CACHE: each thread takes and gives back
// through its own cache (jp_pool_local), inline, with no lock and no
// atomic instruction; caches go back when their threads exit.  Objects
// sitting in other threads' caches are not available to a thread whose
// cache and the shared pool are empty.
template <class T>
class thread_cached_object_pool {
public:
	explicit thread_cached_object_pool(std::size_t capacity)
		: p_(detail::make_pool<T>(capacity, JP_POOL_THREAD_CACHE)), id_(next_id())
	{
	}
	~thread_cached_object_pool() { jp_pool_destroy(p_); }
	thread_cached_object_pool(const thread_cached_object_pool &) = delete;
	thread_cached_object_pool &operator=(const thread_cached_object_pool &) = delete;

	template <class... Args>
	T *acquire(Args &&...args)
	{
		jp_pool_local_t *h = local();

		return detail::construct_in<T>(jp_pool_local_get(h), [h](void *m) { jp_pool_local_put(h, m); },
					       std::forward<Args>(args)...);
	}

	// Any thread may release; one that has no handle and cannot get one
	// (jp_pool_local failed: no memory) gives the object back through
	// jp_pool_put, so release never throws.
	void release(T *obj) noexcept
	{
		if (obj != nullptr) {
			obj->~T();
			jp_pool_local_t *h = find_local();

			if (h != nullptr)
				jp_pool_local_put(h, obj);
			else
				jp_pool_put(p_, obj);
		}
	}

	// The calling thread's handle, for jp_pool_local_get/put directly;
	// std::bad_alloc when the thread has none and none can be made.
	jp_pool_local_t *local()
	{
		jp_pool_local_t *h = find_local();

		if (h == nullptr)
			throw std::bad_alloc();
		return h;
	}

	std::size_t capacity() const noexcept { return jp_pool_capacity(p_); }
	jp_pool_t *native_handle() noexcept { return p_; }

private:
	// The calling thread's handle, or nullptr when jp_pool_local fails.
	jp_pool_local_t *find_local() noexcept
	{
		// The last pool this thread used (of this T), by an id that is never
		// reused, so a new pool at a destroyed one's address cannot match.
		thread_local struct {
			std::uint64_t id;
			jp_pool_local_t *h;
		} last{0, nullptr};

		if (last.id != id_) {
			jp_pool_local_t *h = jp_pool_local(p_);

			if (h == nullptr)
				return nullptr;
			last.h = h;
			last.id = id_;
		}
		return last.h;
	}

	static std::uint64_t next_id() noexcept
	{
		static std::atomic<std::uint64_t> n{1};

		return n.fetch_add(1, std::memory_order_relaxed);
	}

	jp_pool_t *p_;
	std::uint64_t id_;
};

// ---- epoch-based reclamation ------------------------------------------------

// jp_epoch_t: readers hold a guard while they look at shared objects;
// retire() frees an object once no reader that could have seen it remains.
class epoch {
public:
	epoch() : e_(jp_epoch_create())
	{
		if (e_ == nullptr)
			detail::throw_errno(errno, "jp_epoch_create");
	}
	~epoch() { jp_epoch_destroy(e_); }
	epoch(const epoch &) = delete;
	epoch &operator=(const epoch &) = delete;

	// Inside the epoch from construction to destruction.
	class guard {
	public:
		explicit guard(epoch &e) noexcept : e_(e.e_) { jp_epoch_enter(e_); }
		guard(guard &&o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
		guard(const guard &) = delete;
		guard &operator=(const guard &) = delete;
		guard &operator=(guard &&) = delete;
		~guard()
		{
			if (e_ != nullptr)
				jp_epoch_exit(e_);
		}

	private:
		jp_epoch_t *e_;
	};

	[[nodiscard]] guard enter() noexcept { return guard(*this); }

	// delete p once no reader can hold it.
	template <class T>
	void retire(T *p) noexcept
	{
		jp_epoch_retire(e_, p, [](void *q) { delete static_cast<T *>(q); });
	}
	// free_fn(p) once no reader can hold it.
	void retire(void *p, void (*free_fn)(void *)) noexcept { jp_epoch_retire(e_, p, free_fn); }

	void synchronize() noexcept { jp_epoch_synchronize(e_); }
	void barrier() noexcept { jp_epoch_barrier(e_); }

	jp_epoch_t *native_handle() noexcept { return e_; }

private:
	jp_epoch_t *e_;
};

// ---- memory resources and the allocator ---------------------------------------

// A jp_arena_t as a std::pmr::memory_resource: allocation moves a cursor,
// deallocation does nothing, release() frees everything at once.  Either
// owns a new arena of `bytes`, or uses one it does not own (for example
// jp_arena_local(), the calling thread's).  Full: std::bad_alloc.
class arena_resource : public std::pmr::memory_resource {
public:
	explicit arena_resource(std::size_t bytes) : a_(jp_arena_create(bytes)), owned_(true)
	{
		if (a_ == nullptr)
			detail::throw_errno(errno, "jp_arena_create");
	}
	explicit arena_resource(jp_arena_t *arena) noexcept : a_(arena), owned_(false) {}
	~arena_resource() override
	{
		if (owned_)
			jp_arena_destroy(a_);
	}
	arena_resource(const arena_resource &) = delete;
	arena_resource &operator=(const arena_resource &) = delete;

	void release() noexcept { jp_arena_reset(a_); }
	jp_arena_t *native_handle() noexcept { return a_; }

private:
	void *do_allocate(std::size_t bytes, std::size_t alignment) override
	{
		void *p = jp_arena_alloc(a_, bytes != 0 ? bytes : 1, alignment);

		if (p == nullptr)
			throw std::bad_alloc();
		return p;
	}
	void do_deallocate(void *, std::size_t, std::size_t) noexcept override {}
	bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override { return this == &o; }

	jp_arena_t *a_;
	bool owned_;
};

// jp_alloc as a std::pmr::memory_resource; all of them are interchangeable.
class alloc_resource : public std::pmr::memory_resource {
private:
	void *do_allocate(std::size_t bytes, std::size_t alignment) override
	{
		if (bytes == 0)
			bytes = 1;
		void *p = alignment > alignof(std::max_align_t) ? jp_alloc_aligned(alignment, bytes)
								 : jp_alloc(bytes);

		if (p == nullptr)
			throw std::bad_alloc();
		return p;
	}
	void do_deallocate(void *p, std::size_t, std::size_t) noexcept override { jp_free(p); }
	bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override
	{
		return dynamic_cast<const alloc_resource *>(&o) != nullptr;
	}
};

// The process's alloc_resource.
inline alloc_resource *jp_alloc_resource() noexcept
{
	static alloc_resource r;

	return &r;
}

// jp_alloc as a standard allocator: std::vector<int, jpsync::allocator<int>>.
template <class T>
struct allocator {
	using value_type = T;

	allocator() noexcept = default;
	template <class U>
	allocator(const allocator<U> &) noexcept {}

	[[nodiscard]] T *allocate(std::size_t n)
	{
		if (n > std::numeric_limits<std::size_t>::max() / sizeof(T))
			throw std::bad_array_new_length();
		const std::size_t bytes = n != 0 ? n * sizeof(T) : 1;
		void *p = alignof(T) > alignof(std::max_align_t) ? jp_alloc_aligned(alignof(T), bytes)
								 : jp_alloc(bytes);

		if (p == nullptr)
			throw std::bad_alloc();
		return static_cast<T *>(p);
	}
	void deallocate(T *p, std::size_t) noexcept { jp_free(p); }

	template <class U>
	struct rebind {
		using other = allocator<U>;
	};
};

template <class T, class U>
inline bool operator==(const allocator<T> &, const allocator<U> &) noexcept
{
	return true;
}
template <class T, class U>
inline bool operator!=(const allocator<T> &, const allocator<U> &) noexcept
{
	return false;
}

}  // namespace jpsync

#endif  // JPSYNC_HPP
