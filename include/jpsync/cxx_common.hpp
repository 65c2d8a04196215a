// jpsync/cxx_common.hpp - what every libjpsync C++ header shares: the
// C++17 check, how a failing C call becomes an exception
// (detail::throw_errno), and how a std::chrono duration or time point
// becomes the CLOCK_MONOTONIC deadline the C calls take
// (detail::deadline_after, detail::deadline_at).  Nothing here is meant to
// be called by users (namespace jpsync::detail); each component header
// includes it.
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
#ifndef JPSYNC_CXX_COMMON_HPP
#define JPSYNC_CXX_COMMON_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
# error "the libjpsync C++ headers (<jpsync.hpp>, <jpsync/*.hpp>) need C++17 or later"
#endif

#include <jpsync/deadline.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <limits>
#include <system_error>
#include <type_traits>

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

}  // namespace jpsync

#endif  // JPSYNC_CXX_COMMON_HPP
