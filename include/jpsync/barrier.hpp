// jpsync/barrier.hpp - jp_barrier_t for C++17 and C++20 (part of
// <jpsync.hpp>, and may be included alone):
//
//   jpsync::barrier             jp_barrier_t: a fixed set of threads meets
//                               at it, round after round
//
// Errors as every libjpsync C++ header: see <jpsync/cxx_common.hpp>.  Link
// with -ljpsync; see jpsync-cxx(7).
#ifndef JPSYNC_BARRIER_HPP
#define JPSYNC_BARRIER_HPP

#include <jpsync/cxx_common.hpp>
#include <jpsync/barrier.h>

#include <cerrno>
#include <cstddef>

namespace jpsync {

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

}  // namespace jpsync

#endif  // JPSYNC_BARRIER_HPP
