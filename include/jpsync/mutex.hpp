// jpsync/mutex.hpp - jp_mutex_t and jp_cond_t for C++17 and C++20 (part of
// <jpsync.hpp>, and may be included alone):
//
//   jpsync::mutex               jp_mutex_t: Lockable, TimedLockable, for
//                               std::lock_guard, std::unique_lock,
//                               std::scoped_lock
//   jpsync::condition_variable  jp_cond_t, with std::unique_lock<jpsync::mutex>
//
// Errors and timeouts as every libjpsync C++ header: see
// <jpsync/cxx_common.hpp>.  Link with -ljpsync; see jpsync-cxx(7).
#ifndef JPSYNC_MUTEX_HPP
#define JPSYNC_MUTEX_HPP

#include <jpsync/cxx_common.hpp>
#include <jpsync/mutex.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace jpsync {

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

}  // namespace jpsync

#endif  // JPSYNC_MUTEX_HPP
