#pragma once
// How a resident command waits: until a time, or until the service manager signals it. SIGTERM and SIGINT ask it to
// stop, SIGHUP to reload its settings (systemd's ExecReload convention). The signals are blocked in every thread and
// taken synchronously with sigtimedwait, so no handler runs in the middle of a library call or a database write.

#include <chrono>
#include <memory>

namespace gpuenv::system {

class Wakeups {
 public:
  enum class Reason { time, stop, reload };
  virtual ~Wakeups() = default;
  /// Waits until `when` (on the steady clock) or a signal, whichever comes first.
  virtual Reason wait_until(std::chrono::steady_clock::time_point when) = 0;
};

/// The process's signals. Blocks SIGTERM, SIGINT and SIGHUP in the calling thread: create it before any other
/// thread starts, so that they inherit the mask and the signals are left for wait_until.
std::unique_ptr<Wakeups> make_signal_wakeups();

}  // namespace gpuenv::system
