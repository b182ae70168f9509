#pragma once
// Renders findings for people (text) and programs (JSON). Returns strings; cli decides where they go.

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "report/finding.hpp"

namespace gpuenv::report {

/// Terminal styling; colour only when the caller knows stdout is a terminal and NO_COLOR is unset.
struct TextStyle {
  bool color = false;
};

/// "PASS", "WARN", "FAIL", "SKIP", coloured when asked.
std::string status_label(Status status, const TextStyle& style);
/// "READY"-style words are the caller's; this gives OK / DEGRADED / NOT OK.
std::string_view to_string(Verdict verdict);

/// A table of findings (status, id, message), then the remedies of the non-passing ones.
std::string render_findings(const std::vector<Finding>& findings, const TextStyle& style);

nlohmann::json to_json(const Finding& finding);
nlohmann::json to_json(const std::vector<Finding>& findings);

}  // namespace gpuenv::report
