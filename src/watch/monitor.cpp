#include "watch/monitor.hpp"

#include <algorithm>
#include <thread>

#include "probe/collect.hpp"
#include "system/abandon.hpp"
#include "util/strings.hpp"

namespace gpuenv::watch {
namespace {

std::string describe(const Event& event) {
  return event.finding.id + " " + std::string(report::to_string(event.finding.status)) + " (action " + event.action +
         "): " + event.finding.message;
}

int priority_of(report::Status status) {
  switch (status) {
    case report::Status::fail:
      return 3;
    case report::Status::warn:
      return 4;
    default:
      return 5;
  }
}

/// The id of the running boot; "" when unreadable (the GPU count is then never started anew).
std::string read_boot_id(system::System& system) {
  auto text = system.read_file("/proc/sys/kernel/random/boot_id");
  return text ? std::string(util::trim(*text)) : std::string();
}

}  // namespace

Monitor::Monitor(system::System& system, system::System& hook_system, std::function<std::int64_t()> unix_ms,
                 LogSink log)
    : m_system(system), m_hook_system(hook_system), m_unix_ms(std::move(unix_ms)), m_log(std::move(log)) {}

Monitor::~Monitor() = default;

// ------------------------------------------------------------------------------------------------ start

util::Expected<util::Ok> Monitor::start(const WatchSettings& settings, const RuleSettings& rules) {
  GPUENV_TRY(validate(settings));
  m_settings = settings;
  m_rules = rules;
  m_boot_id = read_boot_id(m_system);
  probe::Availability why_not;
  m_nvml = probe::NvmlSession::open(m_system, m_settings.nvml_library, m_settings.nvml_timeout, why_not);
  if (!m_nvml) {
    m_nvml_reason = why_not.reason;
    log(4, "NVML: " + m_nvml_reason + " (tried again each interval)");
  }
  open_store(/*adopt_stored_state=*/true);
  open_cloud_watcher();
  (void)m_kernel_log.poll(m_system, m_unix_ms());  // learns what the log holds: that is doctor's to judge
  log(6, "kernel log: " + m_kernel_log.source());
  return util::Ok{};
}

void Monitor::open_store(bool adopt_stored_state) {
  m_store.reset();
  if (m_settings.db.empty() || m_settings.db == "none") {
    m_store_problem = "no history (--db none)";
    return;
  }
  if (!m_sqlite) {
    auto library = sqlite::Library::load(m_system);
    if (!library) {
      m_store_problem = library.error().message;
      log(3, "history: " + m_store_problem + "; watching without one");
      return;
    }
    m_sqlite = *library;
  }
  const std::int64_t now = m_unix_ms();
  m_store_attempt_ms = now;
  OpenNotes notes;
  auto store = Store::open(m_system, m_sqlite, m_settings.db, now, notes);
  for (const std::string& line : notes.lines) log(notes.moved_aside ? 4 : 6, "history: " + line);
  if (!store) {
    // Said once per problem: a database busy or on a full disk is tried again each minute (retry_store).
    if (store.error().message != m_store_problem)
      log(3, "history: " + store.error().message + "; watching without one, trying again each minute");
    m_store_problem = store.error().message;
    return;
  }
  m_store = std::move(*store);
  m_store_problem.clear();
  if (adopt_stored_state) adopt_state(now);
  if (notes.moved_aside) {
    Event event;
    event.time_ms = now;
    event.finding = report::Finding{"watch.store",
                                    report::Status::warn,
                                    util::join(notes.lines, "; "),
                                    "the old file is kept beside the new one for inspection (`sqlite3 FILE "
                                    "'PRAGMA integrity_check'`); delete it once it is no longer needed",
                                    {}};
    store_interval(NodeSample{now, false, "(database moved aside)", std::nullopt, {}, {}}, {}, {event});
  }
  log(6, "history: " + m_settings.db + " (SQLite " + m_sqlite->version() + ")");
}

void Monitor::adopt_state(std::int64_t now_ms) {
  // The rules' window and state as the last run left them, so a restart neither forgets an idle hour nor raises
  // an open condition again.
  m_history = History();
  if (auto samples = m_store->samples_since(now_ms - m_rules.longest_window_ms())) {
    for (NodeSample& sample : *samples) m_history.add(std::move(sample), m_rules.longest_window_ms());
  }
  if (auto state = m_store->rule_state()) m_state = *state;
  if (auto handled = m_store->state("notices")) {
    m_handled_notices.clear();
    for (std::string_view line : util::split_lines(*handled)) {
      if (!line.empty()) m_handled_notices.emplace_back(line);
    }
  }
}

void Monitor::retry_store(std::int64_t now_ms) {
  constexpr std::int64_t k_retry_ms = 60'000;
  if (m_store || m_settings.db.empty() || m_settings.db == "none" || !m_sqlite) return;
  if (now_ms - m_store_attempt_ms < k_retry_ms) return;
  open_store();
  if (m_store) log(5, "history: " + m_settings.db + " is open again");
}

void Monitor::open_cloud_watcher() {
  m_cloud.reset();
  if (!m_settings.cloud_metadata) return;
  std::string cloud = m_settings.cloud;
  if (cloud.empty()) cloud = probe::classify_cloud(probe::read_dmi_strings(m_system)).cloud;
  if (!InterruptionWatcher::supported(cloud)) {
    m_cloud_problem = cloud.empty() ? "no cloud recognised in DMI (set cloud = \"aws\", \"gcp\" or \"azure\")"
                                    : "no interruption notices are known for " + cloud;
    log(4, "interruptions: " + m_cloud_problem);
    return;
  }
  auto endpoint = m_settings.metadata_endpoint ? m_settings.metadata_endpoint : probe::default_metadata_endpoint(cloud);
  m_cloud = std::make_unique<InterruptionWatcher>(cloud, *endpoint);
  log(6, "interruptions: watching " + cloud + "'s metadata service at " + endpoint->host + ":" +
             std::to_string(endpoint->port));
}

// ------------------------------------------------------------------------------------------------ interval

Snapshot Monitor::run_interval() {
  const auto started = m_system.now();
  Snapshot snapshot;
  const std::int64_t now = m_unix_ms();
  if (!m_nvml) {
    probe::Availability why_not;
    m_nvml = probe::NvmlSession::open(m_system, m_settings.nvml_library, m_settings.nvml_timeout, why_not);
    if (m_nvml) {
      log(5, "NVML: opened");
    } else {
      m_nvml_reason = why_not.reason;
    }
  }
  probe::GpuInventory inventory;
  std::vector<probe::GpuLinkCounters> links;
  if (m_nvml) {
    inventory = m_nvml->read(m_settings.nvml_timeout, &links);
  } else {
    inventory.availability.reason = m_nvml_reason;
  }
  NodeSample sample = sample_from_inventory(inventory, links, now);
  sample.boot_id = m_boot_id;
  count_nvlink_errors(sample, m_state);
  const std::vector<KernelRecord> records = m_kernel_log.poll(m_system, now);

  m_history.add(sample, m_rules.longest_window_ms());
  std::vector<Event> events = derive_events(m_history, records, m_rules, m_state);
  std::vector<Notice> active;
  if (m_cloud) {
    std::vector<Event> notices = watch_interruptions(now, active);
    events.insert(events.end(), notices.begin(), notices.end());
  }
  collect_finished_hooks();
  for (const Event& event : events) {
    log(priority_of(event.finding.status), describe(event));
    ++m_events_total[{event.finding.id, std::string(report::to_string(event.finding.status))}];
  }
  retry_store(now);
  store_interval(sample, records, events);
  if (m_store && now / k_hour_ms != m_last_maintenance_hour) {
    m_last_maintenance_hour = now / k_hour_ms;
    const unsigned judged = m_rules.throttle_fail_bits | m_rules.throttle_warn_bits;
    auto done = m_store->maintain(now, m_rules.raw_retention_ms, m_rules.hourly_retention_ms,
                                  m_rules.idle_below_percent, judged);
    if (!done) {
      log(3, "history: hourly upkeep failed: " + done.error().message);
    } else if (done->hours_rolled_up > 0 || done->raw_rows_deleted > 0) {
      log(6, "history: rolled up " + std::to_string(done->hours_rolled_up) + " hour(s), deleted " +
                 std::to_string(done->raw_rows_deleted) + " raw sample(s) past retention");
    }
  }

  for (const GpuSample& gpu : sample.gpus) snapshot.idle_ms.push_back(idle_ms(m_state, gpu, now));
  snapshot.sample = std::move(sample);
  snapshot.events = std::move(events);
  snapshot.open = m_state.open;
  snapshot.notices = std::move(active);
  snapshot.history = m_store != nullptr;
  snapshot.kernel_log_source = m_kernel_log.source();
  snapshot.kernel_log_readable = m_kernel_log.readable();
  snapshot.interval_ms = m_settings.interval.count();
  snapshot.events_total = m_events_total;
  snapshot.work_seconds = std::chrono::duration<double>(m_system.now() - started).count();
  return snapshot;
}

void Monitor::store_interval(const NodeSample& sample, const std::vector<KernelRecord>& records,
                             const std::vector<Event>& events) {
  if (!m_store) return;
  auto recorded = m_store->record(sample, records, events, m_state);
  if (recorded) return;
  if (m_store->corrupt()) {
    // Reopening moves the damaged file aside and starts a new one; this interval goes into the new one.
    log(3, "history: " + recorded.error().message + "; reopening");
    open_store();
    if (m_store && m_store->record(sample, records, events, m_state)) return;
  }
  log(3, "history: this interval was not stored: " + recorded.error().message);
}

// ------------------------------------------------------------------------------------------------ settings

void Monitor::reload(const WatchSettings& settings) {
  const WatchSettings before = m_settings;
  m_settings = settings;
  if (settings.db != before.db) open_store(/*adopt_stored_state=*/true);
  if (settings.nvml_library != before.nvml_library) m_nvml.reset();
  if (settings.cloud_metadata != before.cloud_metadata || settings.cloud != before.cloud ||
      settings.metadata_endpoint.has_value() != before.metadata_endpoint.has_value())
    open_cloud_watcher();
  log(5, "settings reloaded");
}

void Monitor::stop(std::chrono::milliseconds wait) {
  const auto until = m_system.now() + wait;
  while (!m_hooks.empty() && m_system.now() < until) {
    collect_finished_hooks();
    if (!m_hooks.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  collect_finished_hooks();
  if (!m_hooks.empty()) {
    // Their threads still use the System: the process must leave with _Exit (system/abandon.hpp).
    system::note_abandoned_work();
    log(4, std::to_string(m_hooks.size()) + " interruption hook(s) still running are left to finish");
  }
  m_store.reset();
}

}  // namespace gpuenv::watch
