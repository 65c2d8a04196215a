/*
 * publish.h - PUBLISH(obj) and RECEIVE(obj) for the tests' own lock-free
 * code: helgrind and drd do not take C11 or C++ atomics as ordering
 * anything, so a program that hands an object over with a CAS or an
 * exchange tells them, as the library does for its own atomics.  Put
 * PUBLISH before the store that hands obj over, RECEIVE after the load
 * that takes it.  Inert outside valgrind, and nothing without
 * <valgrind/helgrind.h>.
 */
#ifndef JP_TESTS_PUBLISH_H
#define JP_TESTS_PUBLISH_H

#if defined(__has_include)
# if __has_include(<valgrind/helgrind.h>)
#  include <valgrind/helgrind.h>
#  define PUBLISH(obj) ANNOTATE_HAPPENS_BEFORE(obj)
#  define RECEIVE(obj) ANNOTATE_HAPPENS_AFTER(obj)
# endif
#endif
#ifndef PUBLISH
# define PUBLISH(obj) ((void)(obj))
# define RECEIVE(obj) ((void)(obj))
#endif

#endif /* JP_TESTS_PUBLISH_H */
