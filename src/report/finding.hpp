#pragma once
// The shared vocabulary of every check: a finding with a stable id, a status, what was observed and the fix.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuenv::report {

/// Outcome of one check, ordered from best to worst (skip sits apart: it says nothing was judged).
enum class Status { pass, skip, warn, fail };

std::string_view to_string(Status status);

/// What an operator or automation does about a finding, from least to most disruptive (docs/doctor-json.md
/// "Actions"): the vocabulary of HyperPod's and gpud's node actions, which DCGM leaves to its users.
enum class Action { none, restart_job, reset_gpu, reboot, drain_and_inspect, replace_hardware };

/// "none", "restart_job", "reset_gpu", "reboot", "drain_and_inspect", "replace_hardware".
std::string_view to_string(Action action);
/// The action named `text`, or nullopt.
std::optional<Action> parse_action(std::string_view text);
/// Every action, least disruptive first.
inline constexpr Action k_actions[] = {Action::none,   Action::restart_job,       Action::reset_gpu,
                                       Action::reboot, Action::drain_and_inspect, Action::replace_hardware};

/// One check's result. `id` is stable snake_case with dots for grouping ("compat.driver_cuda").
struct Finding {
  std::string id;
  Status status = Status::pass;
  std::string message;  ///< names the observed values
  std::string remedy;   ///< what to do about it; empty for pass
  std::string source;   ///< where the fact behind the rule comes from (optional)
  /// What to do about it, from data (doctor's actions table, the Xid table); unset: action_of() gives the default.
  /// Last, so the aggregate initialisers {id, status, message, remedy, source} stay valid.
  std::optional<Action> action = std::nullopt;
};

/// The finding's action: none for pass and skip; else its own, or for one without an action from data the default
/// by status: a failure takes the node out for a person to look at (drain_and_inspect), a warning changes nothing.
Action action_of(const Finding& finding);
/// The most disruptive action over the findings (none for none): what the node as a whole needs.
Action node_action(const std::vector<Finding>& findings);

/// The overall verdict of a list of findings.
enum class Verdict { ok, degraded, not_ok };

/// fail anywhere -> not_ok; otherwise warn anywhere -> degraded; otherwise ok.
Verdict verdict_of(const std::vector<Finding>& findings);
/// The worst status among the findings (pass for none).
Status worst_status(const std::vector<Finding>& findings);
/// Number of findings with that status.
std::size_t count_status(const std::vector<Finding>& findings, Status status);

}  // namespace gpuenv::report
