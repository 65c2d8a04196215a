// jpsync/sem.hpp - jp_sem_t for C++17 and C++20 (part of <jpsync.hpp>,
// and may be included alone):
//
//   jpsync::counting_semaphore  jp_sem_t, as std::counting_semaphore
//   jpsync::binary_semaphore    counting_semaphore<1>
//
// Errors and timeouts as every libjpsync C++ header: see
// <jpsync/cxx_common.hpp>.  Link with -ljpsync; see jpsync-cxx(7).
#ifndef JPSYNC_SEM_HPP
#define JPSYNC_SEM_HPP

#include <jpsync/cxx_common.hpp>
#include <jpsync/sem.h>

#include <cerrno>
#include <chrono>
#include <cstddef>

namespace jpsync {

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

}  // namespace jpsync

#endif  // JPSYNC_SEM_HPP
