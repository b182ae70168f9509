#pragma once
// The shared vocabulary of every check: a finding with a stable id, a status, what was observed and the fix.

#include <string>
#include <string_view>
#include <vector>

namespace gpuenv::report {

/// Outcome of one check, ordered from best to worst (skip sits apart: it says nothing was judged).
enum class Status { pass, skip, warn, fail };

std::string_view to_string(Status status);

/// One check's result. `id` is stable snake_case with dots for grouping ("compat.driver_cuda").
struct Finding {
  std::string id;
  Status status = Status::pass;
  std::string message;  ///< names the observed values
  std::string remedy;   ///< what to do about it; empty for pass
  std::string source;   ///< where the fact behind the rule comes from (optional)
};

/// The overall verdict of a list of findings.
enum class Verdict { ok, degraded, not_ok };

/// fail anywhere -> not_ok; otherwise warn anywhere -> degraded; otherwise ok.
Verdict verdict_of(const std::vector<Finding>& findings);
/// The worst status among the findings (pass for none).
Status worst_status(const std::vector<Finding>& findings);
/// Number of findings with that status.
std::size_t count_status(const std::vector<Finding>& findings, Status status);

}  // namespace gpuenv::report
