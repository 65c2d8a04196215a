// jpsync/rwlock.hpp - jp_rwlock_t for C++17 and C++20 (part of
// <jpsync.hpp>, and may be included alone):
//
//   jpsync::shared_mutex        jp_rwlock_t: Lockable, TimedLockable and
//                               SharedTimedLockable, for std::unique_lock
//                               and std::shared_lock
//
// Errors and timeouts as every libjpsync C++ header: see
// <jpsync/cxx_common.hpp>.  Link with -ljpsync; see jpsync-cxx(7).
#ifndef JPSYNC_RWLOCK_HPP
#define JPSYNC_RWLOCK_HPP

#include <jpsync/cxx_common.hpp>
#include <jpsync/rwlock.h>

#include <cerrno>
#include <chrono>

namespace jpsync {

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

}  // namespace jpsync

#endif  // JPSYNC_RWLOCK_HPP
