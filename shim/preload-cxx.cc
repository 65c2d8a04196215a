/*
 * preload-cxx.cc - the replaceable C++ allocation functions of the preload
 * module: operator new and delete, plain, array, nothrow, sized, aligned and
 * aligned + sized/nothrow (C++17), forwarded to jp_alloc.
 *
 * The module must not depend on libstdc++: it is preloaded into every
 * program, C ones included (sort, xz, the compilers), and linking it to the
 * C++ runtime would load that into all of them.  So this file is compiled
 * with -fno-exceptions -fno-rtti (plus unwind tables, so that an exception
 * thrown below passes through these frames) and linked with the C linker.
 * The two things operator new needs from the runtime, the new_handler and a
 * std::bad_alloc to throw, are looked up with dlsym on the failure path only:
 * a program that calls operator new has a C++ runtime loaded (libstdc++ or
 * libc++, both export std::get_new_handler; libstdc++ exports
 * std::__throw_bad_alloc).  Without one, an allocation failure prints one
 * line and aborts, which is what an uncaught std::bad_alloc would do.
 */
#include "config.h"

#include <jpsync/alloc.h>

#include <dlfcn.h>
#include <new>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#define SHIM_EXPORT __attribute__((visibility("default")))

namespace {

typedef std::new_handler (*get_handler_fn)();
typedef void (*throw_fn)();

/* The mangled names do not depend on the ABI's size_t. */
const char get_new_handler_name[] = "_ZSt15get_new_handlerv";
const char throw_bad_alloc_name[] = "_ZSt17__throw_bad_allocv";

std::new_handler current_new_handler()
{
	get_handler_fn get = reinterpret_cast<get_handler_fn>(
		dlsym(RTLD_DEFAULT, get_new_handler_name));
	return get != nullptr ? get() : nullptr;
}

[[noreturn]] __attribute__((cold, noinline)) void throw_bad_alloc()
{
	throw_fn thr = reinterpret_cast<throw_fn>(
		dlsym(RTLD_DEFAULT, throw_bad_alloc_name));
	if (thr != nullptr)
		thr();
	static const char msg[] =
		"jpsync: operator new: out of memory and no C++ runtime to throw std::bad_alloc\n";
	ssize_t r = write(2, msg, sizeof msg - 1);
	(void)r;
	abort();
}

/*
 * [new.delete.single]: on failure call the current new_handler and try
 * again; with no handler, throw std::bad_alloc (nothrow: return NULL).
 */
__attribute__((cold, noinline)) void *new_retry(size_t size, size_t align, bool nothrow)
{
	for (;;) {
		std::new_handler h = current_new_handler();
		if (h == nullptr) {
			if (nothrow)
				return nullptr;
			throw_bad_alloc();
		}
		/* A handler may throw; the nothrow forms would then have to catch
		 * it, which needs the C++ runtime we do not link: like libstdc++
		 * before GCC 9, let it propagate. */
		h();
		void *p = align != 0 ? jp_alloc_aligned(align, size) : jp_alloc(size);
		if (p != nullptr)
			return p;
	}
}

inline void *new_impl(size_t size, bool nothrow)
{
	void *p = jp_alloc(size);
	if (__builtin_expect(p != nullptr, 1))
		return p;
	return new_retry(size, 0, nothrow);
}

inline void *new_aligned_impl(size_t size, std::align_val_t al, bool nothrow)
{
	size_t align = static_cast<size_t>(al);
	/* The standard requires a power of two; anything else is undefined,
	 * and failing is the safe reading of it. */
	if (align == 0 || (align & (align - 1)) != 0) {
		if (nothrow)
			return nullptr;
		throw_bad_alloc();
	}
	void *p = jp_alloc_aligned(align, size);
	if (__builtin_expect(p != nullptr, 1))
		return p;
	return new_retry(size, align, nothrow);
}

} // namespace

SHIM_EXPORT void *operator new(size_t size)
{
	return new_impl(size, false);
}

SHIM_EXPORT void *operator new[](size_t size)
{
	return new_impl(size, false);
}

SHIM_EXPORT void *operator new(size_t size, const std::nothrow_t &) noexcept
{
	return new_impl(size, true);
}

SHIM_EXPORT void *operator new[](size_t size, const std::nothrow_t &) noexcept
{
	return new_impl(size, true);
}

SHIM_EXPORT void operator delete(void *ptr) noexcept
{
	jp_free(ptr);
}

SHIM_EXPORT void operator delete[](void *ptr) noexcept
{
	jp_free(ptr);
}

SHIM_EXPORT void operator delete(void *ptr, const std::nothrow_t &) noexcept
{
	jp_free(ptr);
}

SHIM_EXPORT void operator delete[](void *ptr, const std::nothrow_t &) noexcept
{
	jp_free(ptr);
}

/* Sized delete: the size is the one given to new, so it names the class. */
SHIM_EXPORT void operator delete(void *ptr, size_t size) noexcept
{
	jp_free_sized(ptr, size);
}

SHIM_EXPORT void operator delete[](void *ptr, size_t size) noexcept
{
	jp_free_sized(ptr, size);
}

SHIM_EXPORT void *operator new(size_t size, std::align_val_t al)
{
	return new_aligned_impl(size, al, false);
}

SHIM_EXPORT void *operator new[](size_t size, std::align_val_t al)
{
	return new_aligned_impl(size, al, false);
}

SHIM_EXPORT void *operator new(size_t size, std::align_val_t al,
			       const std::nothrow_t &) noexcept
{
	return new_aligned_impl(size, al, true);
}

SHIM_EXPORT void *operator new[](size_t size, std::align_val_t al,
				 const std::nothrow_t &) noexcept
{
	return new_aligned_impl(size, al, true);
}

/* Aligned deletes: the size is no class hint (an over-aligned block may sit
 * in a larger class than the size alone names), but jp_free_sized only
 * compares it with the block (which is at least that big), and check mode
 * with the size new was given. */
SHIM_EXPORT void operator delete(void *ptr, std::align_val_t) noexcept
{
	jp_free(ptr);
}

SHIM_EXPORT void operator delete[](void *ptr, std::align_val_t) noexcept
{
	jp_free(ptr);
}

SHIM_EXPORT void operator delete(void *ptr, size_t size, std::align_val_t) noexcept
{
	jp_free_sized(ptr, size);
}

SHIM_EXPORT void operator delete[](void *ptr, size_t size, std::align_val_t) noexcept
{
	jp_free_sized(ptr, size);
}

SHIM_EXPORT void operator delete(void *ptr, std::align_val_t,
				 const std::nothrow_t &) noexcept
{
	jp_free(ptr);
}

SHIM_EXPORT void operator delete[](void *ptr, std::align_val_t,
				   const std::nothrow_t &) noexcept
{
	jp_free(ptr);
}
