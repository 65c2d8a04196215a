// jpsync/queue.hpp - jp_spsc_t, jp_mpsc_t and jp_mpmc_t for C++17 and
// C++20, of any movable T (part of <jpsync.hpp>, and may be included
// alone):
//
//   jpsync::spsc_queue<T>       try_push, push (blocking, or until a
//   jpsync::mpsc_queue<T>         duration or a time point), pop returning
//   jpsync::mpmc_queue<T>         std::optional<T>, close
//
// How a T travels (detail::basic_queue): a trivially copyable T as its
// bytes (a byte copy is then a copy); a T whose move cannot throw, aligned
// to at most 8 and at most 64 bytes, built in the C queue's slot itself
// and moved out by the pop; any other T moved into an object allocated
// with jp_alloc, the slot carrying its address (a byte copy of a
// std::string, which may point into itself, would be undefined).
//
// Errors and timeouts as every libjpsync C++ header: see
// <jpsync/cxx_common.hpp>.  Link with -ljpsync; see jpsync-cxx(7).
#ifndef JPSYNC_QUEUE_HPP
#define JPSYNC_QUEUE_HPP

#include <jpsync/cxx_common.hpp>
#include <jpsync/alloc.h>
#include <jpsync/queue.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

namespace jpsync {

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

}  // namespace jpsync

#endif  // JPSYNC_QUEUE_HPP
