// jpsync/pool.hpp - jp_pool_t and jp_arena_t for C++17 and C++20 (part of
// <jpsync.hpp>, and may be included alone), as <jpsync/pool.h> holds both:
//
//   jpsync::object_pool<T>      jp_pool_t of T constructed in place
//   jpsync::thread_cached_object_pool<T>   the same with per-thread caches
//   jpsync::arena_resource      jp_arena_t as a std::pmr::memory_resource
//
// Errors as every libjpsync C++ header: see <jpsync/cxx_common.hpp>.  Link
// with -ljpsync; see jpsync-cxx(7).
#ifndef JPSYNC_POOL_HPP
#define JPSYNC_POOL_HPP

#include <jpsync/cxx_common.hpp>
#include <jpsync/pool.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>
#include <utility>

namespace jpsync {

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

// ---- arenas ------------------------------------------------------------------

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

}  // namespace jpsync

#endif  // JPSYNC_POOL_HPP
