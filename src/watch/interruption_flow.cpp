// What watch does when the cloud announces an interruption (docs/watch.md "Interruptions"), once per notice:
//   1. a watch.interruption event;
//   2. the readiness marker removed, so that nothing new is scheduled here by tools that wait on it;
//   3. the node drained in Slurm through fleet's Slurm code, with a "gpuenv-interruption:" reason the health check
//      does not resume (the node is healthy until it is taken away);
//   4. the user's hook run as an argv, never through a shell, with the notice in its environment
//      (GPUENV_INTERRUPTION_DEADLINE and friends), so the job can checkpoint before the deadline;
//   5. on Azure, when configured, the event acknowledged once the hook is done.
// Steps 3 and 4 run on their own thread: sampling goes on while the job checkpoints.

#include <algorithm>
#include <mutex>
#include <thread>

#include "fleet/slurm.hpp"
#include "probe/kernel_log_window.hpp"
#include "util/strings.hpp"
#include "watch/monitor.hpp"

namespace gpuenv::watch {

/// One notice's drain and hook, shared with the thread that runs them.
struct Monitor::HookRun {
  Notice notice;
  std::mutex mutex;
  bool done = false;
  std::vector<std::pair<int, std::string>> lines;  ///< (priority, message) for the journal
  void say(int priority, std::string line) {
    const std::lock_guard<std::mutex> lock(mutex);
    lines.emplace_back(priority, std::move(line));
  }
};

namespace {

/// How long before a notice's time the node is drained and the hook run: GCP gives GPU VMs an hour's notice
/// (cloud.google.com/compute/docs/gpus/gpu-host-maintenance), so those start at once, while AWS and Azure announce
/// scheduled events days ahead (gpuenv's choice of window; AWS's node-termination-handler likewise drains near the
/// event's time, not at its announcement).
constexpr std::int64_t k_flow_lead_ms = 60 * 60 * 1000;

/// A hook may run until the deadline, and at least this long (a notice whose deadline has passed or is unknown).
constexpr std::chrono::milliseconds k_hook_floor{std::chrono::seconds(30)};
constexpr std::chrono::milliseconds k_hook_ceiling{std::chrono::hours(1)};
constexpr std::chrono::milliseconds k_scontrol_timeout{std::chrono::seconds(10)};

/// The hook's argv: /usr/bin/env sets the notice's variables and execs the hook (no shell reads any of it).
std::vector<std::string> hook_argv(const std::vector<std::string>& hook, const Notice& notice, std::int64_t now_ms) {
  std::vector<std::string> argv{"/usr/bin/env", "GPUENV_INTERRUPTION_CLOUD=" + notice.cloud,
                                "GPUENV_INTERRUPTION_KIND=" + notice.kind, "GPUENV_INTERRUPTION_ID=" + notice.id,
                                "GPUENV_INTERRUPTION_DESCRIPTION=" + notice.description};
  if (notice.deadline_ms) {
    argv.push_back("GPUENV_INTERRUPTION_DEADLINE=" + probe::iso_utc(*notice.deadline_ms / 1000));
    argv.push_back("GPUENV_INTERRUPTION_DEADLINE_UNIX=" + std::to_string(*notice.deadline_ms / 1000));
    argv.push_back("GPUENV_INTERRUPTION_SECONDS_LEFT=" +
                   std::to_string(std::max<std::int64_t>(0, (*notice.deadline_ms - now_ms) / 1000)));
  }
  argv.insert(argv.end(), hook.begin(), hook.end());
  return argv;
}

std::chrono::milliseconds hook_timeout(const Notice& notice, std::int64_t now_ms) {
  if (!notice.deadline_ms) return k_hook_floor;
  return std::clamp(std::chrono::milliseconds(*notice.deadline_ms - now_ms), k_hook_floor, k_hook_ceiling);
}

void drain_slurm(system::System& system, const WatchSettings& settings, Monitor::HookRun& run) {
  auto node = fleet::slurm_node_name(system, settings.slurm_node);
  if (!node) {
    run.say(4, "Slurm drain: " + node.error().message);
    return;
  }
  const std::string reason = run.notice.cloud + " " + run.notice.kind + " interruption" +
                             (run.notice.deadline_ms ? " at " + probe::iso_utc(*run.notice.deadline_ms / 1000) : "");
  auto outcome = fleet::drain_for_interruption(system, *node, reason, k_scontrol_timeout);
  if (!outcome) {
    run.say(5, "Slurm drain of " + *node + " not done: " + outcome.error().message);
    return;
  }
  run.say(5, "Slurm: " + outcome->action.why);
}

void run_hook(system::System& system, const WatchSettings& settings, std::int64_t now_ms, Monitor::HookRun& run) {
  // Checked again now: the file may have changed since the settings were read.
  if (auto trusted = hook_trusted(system, settings.on_interruption); !trusted) {
    run.say(3, "interruption hook not run: " + trusted.error().message);
    return;
  }
  const auto argv = hook_argv(settings.on_interruption, run.notice, now_ms);
  const system::CommandResult result = system.run(argv, hook_timeout(run.notice, now_ms));
  const std::string name = settings.on_interruption.front();
  if (result.not_found) {
    run.say(3, "interruption hook " + name + " was not found");
  } else if (result.timed_out) {
    run.say(3, "interruption hook " + name + " did not finish before the deadline and was stopped");
  } else if (result.exit_code != 0) {
    const std::string tail(util::trim(result.err.substr(result.err.size() > 400 ? result.err.size() - 400 : 0)));
    run.say(3, "interruption hook " + name + " exited with " + std::to_string(result.exit_code) +
                   (tail.empty() ? "" : ": " + tail));
  } else {
    run.say(5, "interruption hook " + name + " finished");
  }
}

}  // namespace

std::vector<Event> Monitor::watch_interruptions(std::int64_t now_ms, std::vector<Notice>& active) {
  auto notices = m_cloud->poll(m_system, now_ms, k_metadata_timeout);
  if (!notices) {
    if (m_cloud_problem != notices.error().message) log(4, "interruptions: " + notices.error().message);
    m_cloud_problem = notices.error().message;
    return {};
  }
  m_cloud_problem.clear();
  active = *notices;
  std::vector<Event> events;
  const auto listed = [](const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  for (const Notice& notice : active) {
    if (listed(m_handled_notices, notice.id)) continue;
    // A notice announced days ahead (AWS scheduled events, Azure's) is said at once, but the node is drained and the
    // hook run only within k_flow_lead of its time: a cancelled event then costs nothing.
    const bool due = !notice.disruptive || !notice.deadline_ms || *notice.deadline_ms - now_ms <= k_flow_lead_ms;
    if (due) m_handled_notices.push_back(notice.id);
    if (due && listed(m_announced_notices, notice.id)) {  // said earlier, its time has come
      if (notice.disruptive) start_interruption_flow(notice);
      continue;
    }
    if (listed(m_announced_notices, notice.id)) continue;
    m_announced_notices.push_back(notice.id);
    Event event;
    event.time_ms = now_ms;
    event.action = notice.disruptive ? "restart_job" : "none";
    event.finding = report::Finding{
        "watch.interruption", notice.disruptive ? report::Status::warn : report::Status::pass,
        notice.description +
            (notice.deadline_ms ? " (deadline " + probe::iso_utc(*notice.deadline_ms / 1000) + ")" : std::string()),
        !notice.disruptive ? ""
        : due ? "the node leaves service: checkpoint and move the work (watch ran the on_interruption hook, if set, "
                "and drained the node in Slurm)"
              : "the node leaves service then: watch drains it in Slurm and runs the on_interruption hook, if set, an "
                "hour before",
        notice.cloud + " metadata service (docs/watch.md \"Interruptions\")"};
    events.push_back(std::move(event));
    if (notice.disruptive && due) start_interruption_flow(notice);
  }
  // Only ids still announced are kept: a list that cannot grow without bound, and a notice that ended and comes back
  // (GCP's value returns to NONE between events) is handled again, with or without a database.
  const auto still_active = [&active](std::vector<std::string>& ids) {
    std::erase_if(ids, [&active](const std::string& id) {
      return std::none_of(active.begin(), active.end(), [&id](const Notice& n) { return n.id == id; });
    });
  };
  still_active(m_handled_notices);
  still_active(m_announced_notices);
  if (m_store) {
    if (auto saved = m_store->set_state("notices", util::join(m_handled_notices, "\n")); !saved)
      log(3, "history: " + saved.error().message);
  }
  return events;
}

void Monitor::start_interruption_flow(const Notice& notice) {
  if (!m_settings.ready_marker.empty()) {
    if (auto removed = m_system.remove_file(m_settings.ready_marker); removed) {
      log(5, "interruption: readiness marker " + m_settings.ready_marker + " removed");
    } else {
      log(3, "interruption: " + removed.error().message);
    }
  }
  auto run = std::make_shared<HookRun>();
  run->notice = notice;
  m_hooks.push_back(run);
  // The thread owns copies of what it reads; hook_system outlives the monitor (cli owns it).
  std::thread([&system = m_hook_system, settings = m_settings, now = m_unix_ms(), run] {
    if (settings.slurm_drain) drain_slurm(system, settings, *run);
    if (!settings.on_interruption.empty()) run_hook(system, settings, now, *run);
    const std::lock_guard<std::mutex> lock(run->mutex);
    run->done = true;
  }).detach();
}

void Monitor::collect_finished_hooks() {
  for (auto it = m_hooks.begin(); it != m_hooks.end();) {
    HookRun& run = **it;
    bool done = false;
    {
      const std::lock_guard<std::mutex> lock(run.mutex);
      for (const auto& [priority, line] : run.lines) log(priority, line);
      run.lines.clear();
      done = run.done;
    }
    if (!done) {
      ++it;
      continue;
    }
    if (m_cloud && m_settings.azure_acknowledge && run.notice.cloud == "azure") {
      if (auto acknowledged = m_cloud->acknowledge(m_system, run.notice, k_metadata_timeout); acknowledged) {
        log(5, "interruption: Azure event " + run.notice.id + " acknowledged");
      } else {
        log(3, "interruption: " + acknowledged.error().message);
      }
    }
    it = m_hooks.erase(it);
  }
}

}  // namespace gpuenv::watch
