#pragma once
// One interval of `gpuenv watch`, in order: read NVML (a session kept open, each read abandonable), follow the kernel
// log, derive events, watch the cloud's interruption notices, write the interval to the store. A source that fails or
// hangs costs only its own reading: the others are still taken and stored (docs/watch.md "Sampling").

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/nvml.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"
#include "watch/event.hpp"
#include "watch/interruptions.hpp"
#include "watch/kernel_log.hpp"
#include "watch/rules.hpp"
#include "watch/sample.hpp"
#include "watch/settings.hpp"
#include "watch/store.hpp"

namespace gpuenv::watch {

/// How long one metadata poll may take: well under an interval, so a slow service never delays sampling much.
inline constexpr std::chrono::milliseconds k_metadata_timeout{2000};

/// Where watch's messages go: cli writes them to stderr, which systemd sends to the journal. `priority` is
/// syslog's (3 error, 4 warning, 5 notice, 6 info).
using LogSink = std::function<void(int priority, const std::string& line)>;

/// What the exposition shows after an interval.
struct Snapshot {
  NodeSample sample;
  std::vector<std::int64_t> idle_ms;      ///< per GPU of `sample`, the time below the idle line
  std::vector<Event> events;              ///< raised this interval
  std::map<std::string, Condition> open;  ///< the conditions open now, keyed "<rule>|<GPU UUID>"
  std::vector<Notice> notices;            ///< the interruption notices active now
  bool history = false;                   ///< the store took this interval
  std::string kernel_log_source;
  bool kernel_log_readable = false;
  std::int64_t interval_ms = 0;
  double work_seconds = 0;                                                   ///< how long this interval's work took
  std::map<std::pair<std::string, std::string>, std::int64_t> events_total;  ///< (rule, status) -> since the start
};

class Monitor {
 public:
  /// `system` serves the sampling thread; `hook_system` the thread that drains Slurm and runs the hook (the real
  /// machine's System is safe to share; tests pass two). `unix_ms` is the wall clock.
  Monitor(system::System& system, system::System& hook_system, std::function<std::int64_t()> unix_ms, LogSink log);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  /// Opens NVML, the store (reloading the rules' window and state from it) and the cloud watcher, and learns what
  /// the kernel log already holds. Failures of a source are logged and leave it out; an Error only for settings
  /// that cannot work at all.
  util::Expected<util::Ok> start(const WatchSettings& settings, const RuleSettings& rules);
  /// One interval's work.
  Snapshot run_interval();
  /// New settings (SIGHUP): a changed database, NVML library or cloud is reopened; the rest applies at once.
  void reload(const WatchSettings& settings);
  /// Ends: waits up to `wait` for running hooks, then closes the store (every interval already committed).
  void stop(std::chrono::milliseconds wait);

  const WatchSettings& settings() const { return m_settings; }

  struct HookRun;

 private:
  /// Opens the database; `adopt_stored_state` (at start, or a new --db) takes the rules' window and state from it,
  /// otherwise (a retry, a file moved aside) the state in memory goes on.
  void open_store(bool adopt_stored_state = false);
  void adopt_state(std::int64_t now_ms);
  /// Opens the store again when an earlier attempt failed (a busy or full database) and a minute has passed.
  void retry_store(std::int64_t now_ms);
  void open_cloud_watcher();
  std::vector<Event> watch_interruptions(std::int64_t now_ms, std::vector<Notice>& active);
  void start_interruption_flow(const Notice& notice);
  void collect_finished_hooks();
  void store_interval(const NodeSample& sample, const std::vector<KernelRecord>& records,
                      const std::vector<Event>& events);
  void log(int priority, const std::string& line) const { m_log(priority, line); }

  system::System& m_system;
  system::System& m_hook_system;
  std::function<std::int64_t()> m_unix_ms;
  LogSink m_log;
  WatchSettings m_settings;
  RuleSettings m_rules;
  std::unique_ptr<probe::NvmlSession> m_nvml;
  std::string m_nvml_reason;  ///< why the session is not open
  std::shared_ptr<const sqlite::Library> m_sqlite;
  std::unique_ptr<Store> m_store;
  std::string m_store_problem;          ///< why there is no history now (logged once)
  std::int64_t m_store_attempt_ms = 0;  ///< when the store was last opened or tried
  KernelLogFollower m_kernel_log;
  std::unique_ptr<InterruptionWatcher> m_cloud;
  std::string m_cloud_problem;
  std::vector<std::string> m_handled_notices;    ///< notice ids whose flow ran (kept in the store across restarts)
  std::vector<std::string> m_announced_notices;  ///< notice ids whose event was raised (the flow may wait for its time)
  std::vector<std::shared_ptr<HookRun>> m_hooks;
  History m_history;
  RuleState m_state;
  std::string m_boot_id;
  std::int64_t m_last_maintenance_hour = -1;
  std::map<std::pair<std::string, std::string>, std::int64_t> m_events_total;
};

}  // namespace gpuenv::watch
