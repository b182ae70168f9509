#include "install/apply.hpp"

#include <algorithm>
#include <ctime>
#include <optional>

#include "install/checkpoint.hpp"
#include "install/node.hpp"
#include "util/strings.hpp"

namespace gpuenv::install {
namespace {

constexpr const char* k_reboot = "install.reboot";
constexpr const char* k_verify = "install.verify";
/// apt-get's exit code when it cannot get a lock (also its code for other failures: the retries are bounded).
constexpr int k_lock_held = 100;
/// Reboots gpuenv makes for one plan before a module that still does not load is a failure (no reboot loop).
constexpr std::size_t k_max_reboots = 1;

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

/// Whether a probe's output is what `match` and `text` ask for (plan.hpp OutputMatch).
bool output_matches(const std::string& out, OutputMatch match, const std::string& text) {
  if (match == OutputMatch::exact) return out == text;
  bool any = false;
  for (std::string_view line : util::split_lines(out)) {
    if (util::trim(line).empty()) continue;
    any = true;
    if (match == OutputMatch::has_line && line.find(text) != std::string_view::npos) return true;
    if (match == OutputMatch::lines_prefixed && !util::starts_with(line, text)) return false;
  }
  return match == OutputMatch::lines_prefixed && any;
}

/// A plan's octal mode ("0644") as permission bits; 0644 when it is not octal (plans are made by code, not users).
unsigned file_mode(const std::string& mode) {
  unsigned bits = 0;
  for (const char c : mode) {
    if (c < '0' || c > '7' || bits > 07777) return 0644;
    bits = bits * 8 + static_cast<unsigned>(c - '0');
  }
  return mode.empty() || bits > 07777 ? 0644 : bits;
}

/// The run's log: previous runs' text plus this run's lines, rewritten atomically after each command.
class CommandLog {
 public:
  CommandLog(system::System& system, std::string path, std::function<std::string()> clock)
      : m_system(system), m_path(std::move(path)), m_clock(std::move(clock)) {
    if (auto previous = m_system.read_file(m_path)) m_text = *previous;
  }

  util::Expected<util::Ok> line(const std::string& step, const std::string& text) {
    m_text += m_clock() + " " + step + " " + text + "\n";
    return m_system.write_file_atomic(m_path, m_text);
  }

  util::Expected<util::Ok> result(const std::string& step, const system::CommandResult& result) {
    std::string text = "exit " + std::to_string(result.exit_code);
    if (result.timed_out) text += " (timed out)";
    if (result.not_found) text += " (program not found)";
    m_text += m_clock() + " " + step + " " + text + "\n";
    for (const std::string* stream : {&result.out, &result.err}) {
      for (std::string_view output : util::split_lines(*stream)) m_text += "  " + std::string(output) + "\n";
    }
    return m_system.write_file_atomic(m_path, m_text);
  }

 private:
  system::System& m_system;
  std::string m_path;
  std::function<std::string()> m_clock;
  std::string m_text;
};

/// One apply run: the plan, the seam, the log and the state, and the report being filled.
class Run {
 public:
  Run(system::System& system, const InstallPlan& plan, const ApplyOptions& options)
      : m_system(system),
        m_plan(plan),
        m_options(options),
        m_clock(options.clock ? options.clock : utc_now),
        m_log(system, options.log_path, m_clock) {
    m_report.log_path = options.log_path;
    m_report.state_path = options.state_dir + "/install-state.json";
    m_state.profile = plan.profile;
    m_state.target = plan.target.label();
  }

  util::Expected<ApplyReport> go() {
    for (const Step& step : m_plan.steps) m_report.steps.push_back({step.id, StepResult::not_run, ""});
    if (!m_plan.refusals.empty())
      return finish(Outcome::refused, "the plan was refused: " + m_plan.refusals[0].message);
    GPUENV_TRY(load());
    for (std::size_t i = 0; i < m_plan.steps.size(); ++i) {
      const Step& step = m_plan.steps[i];
      StepReport& report = m_report.steps[i];
      if (step.id == k_reboot) {
        GPUENV_TRY_ASSIGN(auto due, reboot(step, report));
        if (due) return m_report;  // rebooting, waiting for one, or stopped: reboot() finished the report
        continue;
      }
      if (step.id == k_verify) {
        GPUENV_TRY(verify(report));
        if (report.result == StepResult::failed) return finish(Outcome::not_ready, report.detail);
        if (report.result == StepResult::ran) return finish(Outcome::verified, "doctor: " + report.detail);
        continue;
      }
      GPUENV_TRY(run_step(step, report));
      if (report.result == StepResult::failed && step.failure_stops) {
        m_report.failed_step = step.id;
        return finish(Outcome::failed, "step " + step.id + " failed (" + report.detail + "); see " +
                                           m_options.log_path + ", fix it and re-run (or --resume)");
      }
    }
    return finish(m_report.changed ? Outcome::changed : Outcome::converged, "every step is done");
  }

 private:
  util::Expected<util::Ok> load() {
    for (const std::string& dir : {parent_of(m_options.log_path), m_options.state_dir}) {
      if (!m_system.exists(dir)) m_system.run({"mkdir", "-p", dir}, std::chrono::seconds(30));
    }
    GPUENV_TRY_ASSIGN(auto previous, load_state(m_system, m_report.state_path));
    const bool same_plan = previous && previous->profile == m_state.profile && previous->target == m_state.target;
    // Reboots are counted on every run (a per-boot hook need not pass --resume): see reboot().
    if (same_plan) m_state.reboots = previous->reboots;
    if (m_options.resume && previous) {
      if (previous->profile != m_state.profile || previous->target != m_state.target) {
        return util::Error::input(m_report.state_path + " is for " + previous->profile + " on " + previous->target +
                                      ", not " + m_state.profile + " on " + m_state.target,
                                  "run without --resume to start over");
      }
      m_state.completed = previous->completed;
    }
    return m_log.line("-", "gpuenv install " + m_plan.profile + " on " + m_plan.target.label() +
                               (m_options.resume ? " (resume)" : ""));
  }

  util::Expected<util::Ok> run_step(const Step& step, StepReport& report) {
    if (m_options.resume && m_state.is_completed(step.id) && step.done_if.empty()) {
      report = {step.id, StepResult::done, "completed in an earlier run"};
      return util::Ok{};
    }
    if (!step.done_if.empty() && probe(step)) {
      report = {step.id, StepResult::done, "already done"};
      return mark_completed(step.id);
    }
    for (const FileToWrite& file : step.files) {
      if (auto existing = m_system.read_file(file.path); existing && *existing == file.content) continue;
      if (!m_system.exists(parent_of(file.path))) m_system.run({"mkdir", "-p", parent_of(file.path)}, step.timeout);
      GPUENV_TRY(m_log.line(step.id, "write " + file.path));
      if (auto written = m_system.write_file_atomic(file.path, file.content, file_mode(file.mode)); !written) {
        report = {step.id, StepResult::failed, "cannot write " + file.path + ": " + written.error().message};
        return save_failed(step.id);
      }
      m_report.changed = true;
    }
    for (const std::vector<std::string>& argv : step.commands) {
      GPUENV_TRY_ASSIGN(auto result, run_command(step, argv));
      if (result.exit_code != 0) {
        report = {step.id, StepResult::failed,
                  "`" + util::join(argv, " ") + "` exited " + std::to_string(result.exit_code) +
                      (result.timed_out ? " after the timeout" : "") + explain(step)};
        if (!step.failure_stops) {
          if (auto log = m_log.line(step.id, "failed; going on: a later step may repair it"); !log) return log;
        }
        return save_failed(step.id);
      }
    }
    for (const Check& check : step.checks) {
      const system::CommandResult result = m_system.run(check.argv, step.timeout);
      const bool held = result.exit_code == 0 && output_matches(result.out, check.match, check.text);
      GPUENV_TRY(m_log.line(step.id, "check `" + util::join(check.argv, " ") + "`: " + (held ? "ok" : "FAILED")));
      if (!held) {
        report = {step.id, StepResult::failed, check.meaning};
        return save_failed(step.id);
      }
    }
    // What the step is for must now hold: a command that exits 0 without achieving it (a unit that `enable` leaves
    // static, an initramfs that still loads nouveau) is a failure now, not a surprise at the next run.
    if (!step.done_if.empty() && !probe(step)) {
      report = {step.id, StepResult::failed,
                "it ran, but `" + util::join(step.done_if, " ") + "` still does not show it done" +
                    (step.remedy.empty() ? "" : ": " + step.remedy)};
      return save_failed(step.id);
    }
    report = {step.id, StepResult::ran, ""};
    return mark_completed(step.id);
  }

  /// Runs one command of a step, logged; exit 100 (apt's "could not get lock") is retried step.retries times.
  util::Expected<system::CommandResult> run_command(const Step& step, const std::vector<std::string>& argv) {
    for (int attempt = 0;; ++attempt) {
      GPUENV_TRY(m_log.line(step.id, "$ " + util::join(argv, " ")));
      system::CommandResult result = m_system.run(argv, step.timeout);
      GPUENV_TRY(m_log.result(step.id, result));
      m_report.changed = m_report.changed || step.changes_node;
      if (result.exit_code != k_lock_held || attempt >= step.retries) return result;
      GPUENV_TRY(m_log.line(step.id, "retrying in " + std::to_string(step.retry_delay.count()) + " s (" +
                                         std::to_string(step.retries - attempt) + " more)"));
      m_system.sleep_for(step.retry_delay);
    }
  }

  /// "; the repositories have: a, b" from the step's explain_failure command ("" when it has none).
  std::string explain(const Step& step) {
    if (step.explain_failure.empty()) return "";
    const system::CommandResult result = m_system.run(step.explain_failure, step.timeout);
    std::vector<std::string> names;
    for (std::string_view line : util::split_lines(result.out)) {
      if (!util::trim(line).empty()) names.emplace_back(util::trim(line));
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    if (names.empty()) return "; the repositories have no package named like it";
    constexpr std::size_t k_shown = 20;
    const std::size_t more = names.size() > k_shown ? names.size() - k_shown : 0;
    names.resize(std::min(names.size(), k_shown));
    return "; the repositories have: " + util::join(names, ", ") +
           (more > 0 ? " and " + std::to_string(more) + " more" : "");
  }

  bool probe(const Step& step) {
    const system::CommandResult result = m_system.run(step.done_if, step.timeout);
    const bool done = result.exit_code == 0 &&
                      (!step.done_if_stdout || output_matches(result.out, step.done_if_match, *step.done_if_stdout));
    (void)m_log.line(step.id, "done_if `" + util::join(step.done_if, " ") + "`: " + (done ? "done" : "to do"));
    return done;
  }

  /// The reboot decision. True when the run ends here (no GPU, a reboot required, issued or pending, or a module
  /// that a reboot did not load); false when the installed module is loaded and the run goes on.
  util::Expected<bool> reboot(const Step& step, StepReport& report) {
    if (!nvidia_gpu_present(m_system)) {
      report = {step.id, StepResult::not_run, "no NVIDIA GPU on the PCI bus"};
      (void)finish(Outcome::no_gpu, "no GPU to verify: every step up to " + std::string(k_reboot) +
                                        " is done; reboot and verification need an NVIDIA GPU");
      return true;
    }
    const ModuleVersions versions = module_versions(m_system);
    if (!versions.loaded.empty() && versions.loaded == versions.installed) {
      report = {step.id, StepResult::done, "the loaded module is the installed one (" + versions.loaded + ")"};
      m_state.reboots.clear();  // the reboots worked: a later change (another branch) gets its own bound
      GPUENV_TRY(save());
      return false;
    }
    m_report.reboot_required = true;
    const std::string why = "loaded module " + (versions.loaded.empty() ? "none" : versions.loaded) + ", installed " +
                            (versions.installed.empty() ? "none" : versions.installed);
    const std::string boot = boot_id(m_system);
    const auto& history = m_state.reboots;
    if (!boot.empty() && std::find(history.begin(), history.end(), boot) != history.end()) {
      // This boot is the one gpuenv asked to end: the reboot has not happened yet, and asking again would loop.
      report = {step.id, StepResult::not_run, why + "; a reboot was already requested in this boot"};
      (void)finish(Outcome::reboot_required, "a reboot requested by gpuenv is still pending (" + why + ")");
      return true;
    }
    if (history.size() >= k_max_reboots) {  // rebooted for this already: another reboot would loop
      report = {step.id, StepResult::failed, why + " after " + std::to_string(history.size()) + " reboot(s) by gpuenv"};
      m_report.failed_step = step.id;
      GPUENV_TRY(save_failed(step.id));
      (void)finish(Outcome::failed,
                   "the installed module is still not loaded after " + std::to_string(history.size()) +
                       " reboot(s) by gpuenv (" + why +
                       "); see dmesg and the DKMS build log under /var/lib/dkms, fix it, then remove " +
                       m_report.state_path + " to allow another reboot");
      return true;
    }
    if (!m_options.allow_reboot) {
      report = {step.id, StepResult::not_run, why};
      (void)finish(Outcome::reboot_required, "reboot required (" + why + "); then run `gpuenv install --resume`");
      return true;
    }
    m_state.reboots.push_back(boot.empty() ? "unknown-boot-" + std::to_string(history.size()) : boot);
    GPUENV_TRY(save());
    GPUENV_TRY(
        run_step(Step{step.id, step.why, step.commands, {}, {}, {}, OutputMatch::exact, step.timeout, true}, report));
    (void)finish(Outcome::reboot_required, "rebooting (" + why + "); run `gpuenv install --resume` after the boot");
    return true;
  }

  util::Expected<util::Ok> verify(StepReport& report) {
    if (!m_options.verify) {
      report = {k_verify, StepResult::not_run, "no verifier"};
      return util::Ok{};
    }
    const Verification result = m_options.verify();
    const bool ok = result.verdict != report::Verdict::not_ok;
    report = {k_verify, ok ? StepResult::ran : StepResult::failed, result.summary};
    GPUENV_TRY(m_log.line(k_verify, "doctor: " + result.summary));
    return ok ? mark_completed(k_verify) : save_failed(k_verify);
  }

  util::Expected<util::Ok> mark_completed(const std::string& id) {
    if (!m_state.is_completed(id)) m_state.completed.push_back(id);
    m_state.failed.clear();
    return save();
  }

  util::Expected<util::Ok> save_failed(const std::string& id) {
    m_state.failed = id;
    return save();
  }

  util::Expected<util::Ok> save() {
    m_state.updated = m_clock();
    return save_state(m_system, m_report.state_path, m_state);
  }

  util::Expected<ApplyReport> finish(Outcome outcome, std::string message) {
    m_report.outcome = outcome;
    m_report.message = std::move(message);
    (void)m_log.line("-", std::string("outcome ") + std::string(to_string(outcome)) + ": " + m_report.message);
    return m_report;
  }

  system::System& m_system;
  const InstallPlan& m_plan;
  const ApplyOptions& m_options;
  std::function<std::string()> m_clock;
  CommandLog m_log;
  InstallState m_state;
  ApplyReport m_report;
};

}  // namespace

std::string_view to_string(StepResult result) {
  switch (result) {
    case StepResult::planned:
      return "planned";
    case StepResult::done:
      return "done";
    case StepResult::ran:
      return "ran";
    case StepResult::failed:
      return "failed";
    case StepResult::not_run:
      break;
  }
  return "not_run";
}

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::refused:
      return "refused";
    case Outcome::converged:
      return "converged";
    case Outcome::changed:
      return "changed";
    case Outcome::reboot_required:
      return "reboot_required";
    case Outcome::no_gpu:
      return "no_gpu";
    case Outcome::failed:
      return "failed";
    case Outcome::verified:
      return "verified";
    case Outcome::not_ready:
      break;
  }
  return "not_ready";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

Verification judge_doctor(report::Verdict verdict, std::string_view verdict_word,
                          const std::vector<report::Finding>& findings, bool fabric_manager) {
  Verification out{verdict, std::string(verdict_word)};
  std::optional<report::Status> manager;  // doctor's fabric.manager finding, where this doctor has the check
  for (const report::Finding& finding : findings) {
    if (finding.status == report::Status::fail) out.summary += "; " + finding.id + ": " + finding.message;
    if (finding.id == "fabric.manager") manager = finding.status;
  }
  if (!fabric_manager) return out;
  if (!manager) {
    // A doctor without the fabric check cannot confirm the fabric, nor show it broken (CUDA's own start, cuInit 802,
    // is what fails then): unverified is a warning, never a failure of a node that may well be healthy.
    if (out.verdict == report::Verdict::ok) out.verdict = report::Verdict::degraded;
    out.summary +=
        "; the NVSwitch fabric is unverified: this doctor has no fabric manager check (fabric.manager); "
        "check `systemctl status nvidia-fabricmanager` and `nvidia-smi -q | grep -A2 Fabric`";
  } else if (*manager != report::Status::pass && *manager != report::Status::warn) {
    out.verdict = report::Verdict::not_ok;
    out.summary +=
        "; the NVSwitch fabric is not confirmed: doctor did not report fabric manager running at the "
        "driver's version (fabric.manager); CUDA cannot start until it has initialised the fabric";
  }
  return out;
}

util::Expected<ApplyReport> apply_plan(system::System& system, const InstallPlan& plan, const ApplyOptions& options) {
  Run run(system, plan, options);
  return run.go();
}

}  // namespace gpuenv::install
