#include "report/finding.hpp"

#include <algorithm>

namespace gpuenv::report {

std::string_view to_string(Status status) {
  switch (status) {
    case Status::pass:
      return "pass";
    case Status::skip:
      return "skip";
    case Status::warn:
      return "warn";
    case Status::fail:
      return "fail";
  }
  return "unknown";
}

std::string_view to_string(Action action) {
  switch (action) {
    case Action::none:
      return "none";
    case Action::restart_job:
      return "restart_job";
    case Action::reset_gpu:
      return "reset_gpu";
    case Action::reboot:
      return "reboot";
    case Action::drain_and_inspect:
      return "drain_and_inspect";
    case Action::replace_hardware:
      return "replace_hardware";
  }
  return "none";
}

std::optional<Action> parse_action(std::string_view text) {
  for (Action action : k_actions)
    if (to_string(action) == text) return action;
  return std::nullopt;
}

Action action_of(const Finding& finding) {
  if (finding.status == Status::pass || finding.status == Status::skip) return Action::none;
  if (finding.action) return *finding.action;
  return finding.status == Status::fail ? Action::drain_and_inspect : Action::none;
}

Action node_action(const std::vector<Finding>& findings) {
  Action worst = Action::none;
  for (const Finding& finding : findings) worst = std::max(worst, action_of(finding));
  return worst;
}

Status worst_status(const std::vector<Finding>& findings) {
  Status worst = Status::pass;
  for (const Finding& finding : findings) worst = std::max(worst, finding.status);
  return worst == Status::skip ? Status::pass : worst;
}

Verdict verdict_of(const std::vector<Finding>& findings) {
  switch (worst_status(findings)) {
    case Status::fail:
      return Verdict::not_ok;
    case Status::warn:
      return Verdict::degraded;
    default:
      return Verdict::ok;
  }
}

std::size_t count_status(const std::vector<Finding>& findings, Status status) {
  return static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(), [status](const Finding& f) { return f.status == status; }));
}

}  // namespace gpuenv::report
