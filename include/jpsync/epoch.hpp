// jpsync/epoch.hpp - jp_epoch_t for C++17 and C++20 (part of
// <jpsync.hpp>, and may be included alone):
//
//   jpsync::epoch               jp_epoch_t, with an RAII read guard and retire
//
// Errors as every libjpsync C++ header: see <jpsync/cxx_common.hpp>.  Link
// with -ljpsync; see jpsync-cxx(7).
#ifndef JPSYNC_EPOCH_HPP
#define JPSYNC_EPOCH_HPP

#include <jpsync/cxx_common.hpp>
#include <jpsync/epoch.h>

#include <cerrno>
#include <utility>

namespace jpsync {

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

}  // namespace jpsync

#endif  // JPSYNC_EPOCH_HPP
