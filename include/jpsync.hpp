// jpsync.hpp - libjpsync for C++17 and C++20: header-only wrappers of the
// C library (libjpsync 1.1), so that its locks work with std::lock_guard,
// std::unique_lock, std::scoped_lock and std::shared_lock, its queues carry
// any movable type, and its allocator and arenas serve standard containers.
//
// This header includes every C++ header of libjpsync, and <jpsync.h>; each
// of those may also be included alone:
//
//   <jpsync/mutex.hpp>    jpsync::mutex               jp_mutex_t: Lockable, TimedLockable
//                         jpsync::condition_variable  jp_cond_t, with std::unique_lock<jpsync::mutex>
//   <jpsync/rwlock.hpp>   jpsync::shared_mutex        jp_rwlock_t: also SharedTimedLockable
//   <jpsync/sem.hpp>      jpsync::counting_semaphore  jp_sem_t (and binary_semaphore)
//   <jpsync/barrier.hpp>  jpsync::barrier             jp_barrier_t
//   <jpsync/queue.hpp>    jpsync::spsc_queue<T>       jp_spsc_t, jp_mpsc_t, jp_mpmc_t of any
//                         jpsync::mpsc_queue<T>         movable T: try_push, push (blocking, or
//                         jpsync::mpmc_queue<T>         until a duration or a time point), pop
//                                                       returning std::optional<T>, close
//   <jpsync/pool.hpp>     jpsync::object_pool<T>      jp_pool_t of T constructed in place
//                         jpsync::thread_cached_object_pool<T>   the same with per-thread caches
//                         jpsync::arena_resource      jp_arena_t as a std::pmr::memory_resource
//   <jpsync/epoch.hpp>    jpsync::epoch               jp_epoch_t, with an RAII read guard and retire
//   <jpsync/alloc.hpp>    jpsync::alloc_resource      jp_alloc as a std::pmr::memory_resource
//                         jpsync::allocator<T>        jp_alloc as a standard allocator
//
// What they share, <jpsync/cxx_common.hpp>, says how errors become
// exceptions, what a wrapper costs over its C call (nothing), and how
// std::chrono timeouts become CLOCK_MONOTONIC deadlines.
//
// Link with -ljpsync (pkg-config --libs jpsync); see jpsync-cxx(7).
#ifndef JPSYNC_HPP
#define JPSYNC_HPP

#include <jpsync/cxx_common.hpp>

#include <jpsync.h>

#include <jpsync/mutex.hpp>
#include <jpsync/rwlock.hpp>
#include <jpsync/sem.hpp>
#include <jpsync/barrier.hpp>
#include <jpsync/queue.hpp>
#include <jpsync/pool.hpp>
#include <jpsync/epoch.hpp>
#include <jpsync/alloc.hpp>

// The standard headers <jpsync.hpp> has always included, so that a program
// that relied on one of them builds unchanged.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <limits>
#include <memory_resource>
#include <mutex>
#include <new>
#include <optional>
#include <system_error>
#include <type_traits>
#include <utility>

#endif  // JPSYNC_HPP
