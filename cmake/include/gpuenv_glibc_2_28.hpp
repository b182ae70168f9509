// Force-included into every translation unit of the portable build (scripts/build-portable), which compiles against
// Debian 11's glibc 2.31 but must start on glibc 2.28 (RHEL/Rocky 8; docs/packaging.md, "glibc floor").
//
// libstdc++ built for glibc >= 2.30 defines these in <bits/c++config.h>, and its headers then wait on steady_clock
// with pthread_cond_clockwait, pthread_mutex_clocklock and pthread_rwlock_clock{rd,wr}lock, all GLIBC_2.30: every
// condition_variable::wait_for/wait_until on steady_clock, timed_mutex::try_lock_for and shared_timed_mutex. Without
// them the same headers take the path libstdc++ has on glibc < 2.30: pthread_cond_timedwait and friends on
// CLOCK_REALTIME, the steady deadline converted to a system_clock one (libstdc++'s <condition_variable>,
// __wait_until_impl). The one difference: a step of the wall clock during a wait lengthens or shortens it.
#pragma once

#include <bits/c++config.h>

#undef _GLIBCXX_USE_PTHREAD_COND_CLOCKWAIT
#undef _GLIBCXX_USE_PTHREAD_MUTEX_CLOCKLOCK
#undef _GLIBCXX_USE_PTHREAD_RWLOCK_CLOCKLOCK
