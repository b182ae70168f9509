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
