#pragma once
// Renders findings for people (text) and programs (JSON). Returns strings; cli decides where they go.

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "report/finding.hpp"
#include "util/host_text.hpp"

namespace gpuenv::report {

/// Terminal styling; colour only when the caller knows stdout is a terminal and NO_COLOR is unset.
struct TextStyle {
  bool color = false;
};

/// "PASS", "WARN", "FAIL", "SKIP", coloured when asked.
std::string status_label(Status status, const TextStyle& style);
/// "READY"-style words are the caller's; this gives OK / DEGRADED / NOT OK.
std::string_view to_string(Verdict verdict);

/// A table of findings (status, id, message), then the remedies of the non-passing ones. Host text in them is
/// cleaned (util::clean_host_text); what was changed is added to `repairs`, or, without it, said in a closing note.
std::string render_findings(const std::vector<Finding>& findings, const TextStyle& style,
                            util::TextRepairs* repairs = nullptr);
/// "note: host text was cleaned for display: ...\n", or "" when nothing was changed.
std::string repairs_note(const util::TextRepairs& repairs);
/// Every string (values and keys) in `json` made valid UTF-8 and bounded (control characters are JSON's to escape);
/// what was changed is added to `repairs`.
void clean_json_strings(nlohmann::json& json, util::TextRepairs& repairs);
/// `json` cleaned, with `"host_text_cleaned": "<what>"` added to a top-level object when anything changed, dumped
/// with an indent of 2 and a final newline. Never throws on host text.
std::string dump_host_json(nlohmann::json json);

nlohmann::json to_json(const Finding& finding);
nlohmann::json to_json(const std::vector<Finding>& findings);

}  // namespace gpuenv::report
