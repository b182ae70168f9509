#pragma once
// apply_plan: the only code that runs the install plan, command by command through System, with a log and a
// state file. A dry run does not come here: it prints the plan.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "install/plan.hpp"
#include "report/finding.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::install {

/// What doctor said when the install was verified (apply cannot depend on doctor: cli injects it).
struct Verification {
  report::Verdict verdict = report::Verdict::not_ok;
  std::string summary;  ///< "READY", "NOT READY: driver.loaded ..."
};

/// Doctor's report judged for the install: READY or DEGRADED verifies it, with the failures named. On an NVSwitch
/// plan doctor must also have confirmed the fabric manager (finding fabric.manager passing or warning: installed at
/// the loaded driver's version and running) and no GPU's fabric registration may fail (fabric.state): CUDA refuses
/// work until the fabric manager has initialised the fabric, so a doctor without those checks cannot verify it.
Verification judge_doctor(report::Verdict verdict, std::string_view verdict_word,
                          const std::vector<report::Finding>& findings, bool fabric_manager);

struct ApplyOptions {
  std::string log_path = "/var/log/gpuenv/install.log";
  std::string state_dir = "/var/lib/gpuenv";
  bool resume = false;                   ///< skip the steps the state file records as completed
  bool allow_reboot = false;             ///< run install.reboot when it is due
  std::function<std::string()> clock;    ///< UTC timestamps for the log and the state ("2026-01-01T00:00:00Z")
  std::function<Verification()> verify;  ///< runs doctor with the profile
};

/// What happened to one step.
enum class StepResult { planned, done, ran, failed, not_run };
std::string_view to_string(StepResult result);

/// How the apply ended; docs/install.md "outcome".
enum class Outcome { refused, converged, changed, reboot_required, no_gpu, failed, verified, not_ready };
std::string_view to_string(Outcome outcome);

struct StepReport {
  std::string id;
  StepResult result = StepResult::not_run;
  std::string detail;  ///< why it was skipped, or the failing command and its exit code
};

struct ApplyReport {
  std::vector<StepReport> steps;  ///< one per plan step, in order
  bool changed = false;
  bool reboot_required = false;
  Outcome outcome = Outcome::converged;
  std::string failed_step;
  std::string message;  ///< one line for the operator
  std::string log_path;
  std::string state_path;
};

/// Runs `plan` on the node behind `system`. An Error only when the log or state cannot be written or the state
/// file is unusable; a failing step is an ApplyReport with outcome failed.
util::Expected<ApplyReport> apply_plan(system::System& system, const InstallPlan& plan, const ApplyOptions& options);

/// The current UTC time as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now();

}  // namespace gpuenv::install
