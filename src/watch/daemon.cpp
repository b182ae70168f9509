#include "watch/daemon.hpp"

namespace gpuenv::watch {

void run_daemon(Monitor& monitor, system::Wakeups& wakeups, const DaemonCallbacks& callbacks, const LogSink& log,
                std::uint64_t max_intervals) {
  using Clock = std::chrono::steady_clock;
  auto next = Clock::now();
  for (std::uint64_t done = 0; max_intervals == 0 || done < max_intervals; ++done) {
    callbacks.publish(monitor.run_interval());
    next += monitor.settings().interval;
    // A tick missed (an interval that took longer than the interval) is skipped, not made up in a burst.
    if (next < Clock::now()) next = Clock::now() + monitor.settings().interval;
    bool stop = false;
    for (;;) {
      const system::Wakeups::Reason reason = wakeups.wait_until(next);
      if (reason == system::Wakeups::Reason::time) break;
      if (reason == system::Wakeups::Reason::stop) {
        stop = true;
        break;
      }
      auto settings = callbacks.load_settings();
      if (!settings) {
        log(3, "settings not reloaded: " + settings.error().message);
        continue;
      }
      if (auto valid = validate(*settings); !valid) {
        log(3, "settings not reloaded: " + valid.error().message);
        continue;
      }
      const auto before = monitor.settings().interval;
      monitor.reload(*settings);
      next += settings->interval - before;
    }
    if (stop) break;
  }
  log(5, "stopping");
  monitor.stop(std::chrono::seconds(5));
}

}  // namespace gpuenv::watch
