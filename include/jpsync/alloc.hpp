// jpsync/alloc.hpp - jp_alloc for C++17 and C++20 containers (part of
// <jpsync.hpp>, and may be included alone):
//
//   jpsync::alloc_resource      jp_alloc as a std::pmr::memory_resource
//                               (jpsync::jp_alloc_resource(), the process's)
//   jpsync::allocator<T>        jp_alloc as a standard allocator
//
// Out of memory throws std::bad_alloc.  Link with -ljpsync; see
// jpsync-cxx(7).
#ifndef JPSYNC_ALLOC_HPP
#define JPSYNC_ALLOC_HPP

#include <jpsync/cxx_common.hpp>
#include <jpsync/alloc.h>

#include <cstddef>
#include <limits>
#include <memory_resource>
#include <new>

namespace jpsync {

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

#endif  // JPSYNC_ALLOC_HPP
