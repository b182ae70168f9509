#pragma once
// The resident loop of `gpuenv watch`: an interval's work, its exposition, then a wait until the next tick or a
// signal. SIGTERM ends it after the interval in hand is stored (each interval is its own transaction: nothing
// committed is lost); SIGHUP re-reads the settings without missing a tick.

#include <functional>

#include "system/signals.hpp"
#include "util/expected.hpp"
#include "watch/monitor.hpp"

namespace gpuenv::watch {

struct DaemonCallbacks {
  /// The settings as the file and the command line say now (SIGHUP); an Error keeps the running ones.
  std::function<util::Expected<WatchSettings>()> load_settings;
  /// Shows an interval's snapshot (the Prometheus textfile or the listener's page).
  std::function<void(const Snapshot&)> publish;
};

/// Runs intervals until a stop signal, or `max_intervals` (0: no limit); then stops the monitor.
void run_daemon(Monitor& monitor, system::Wakeups& wakeups, const DaemonCallbacks& callbacks, const LogSink& log,
                std::uint64_t max_intervals = 0);

}  // namespace gpuenv::watch
