#pragma once
// Looking findings up by id in tests that judge rule output (doctor, nccl, …), and a listing for INFO.

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "report/finding.hpp"

namespace gpuenv::testing {

/// The first finding with `id`, or nullptr.
inline const report::Finding* find_finding(const std::vector<report::Finding>& findings, std::string_view id) {
  const auto it = std::find_if(findings.begin(), findings.end(), [&](const report::Finding& f) { return f.id == id; });
  return it == findings.end() ? nullptr : &*it;
}

/// A copy of the first finding with `id` (a copy: callers pass the temporary vector evaluate() returns); the test
/// case fails when there is none.
inline report::Finding require_finding(const std::vector<report::Finding>& findings, std::string_view id) {
  const report::Finding* found = find_finding(findings, id);
  if (found == nullptr) FAIL("no finding " << id);
  return *found;
}

/// Whether any finding has `id`.
inline bool has_finding(const std::vector<report::Finding>& findings, std::string_view id) {
  return find_finding(findings, id) != nullptr;
}

/// Every finding with `id`, in order.
inline std::vector<const report::Finding*> findings_with_id(const std::vector<report::Finding>& findings,
                                                            std::string_view id) {
  std::vector<const report::Finding*> out;
  for (const report::Finding& f : findings) {
    if (f.id == id) out.push_back(&f);
  }
  return out;
}

/// One line per finding ("  warn host.memory: … [remedy: …]"), for INFO.
inline std::string dump_findings(const std::vector<report::Finding>& findings) {
  std::string out;
  for (const report::Finding& f : findings) {
    out += "  " + std::string(report::to_string(f.status)) + " " + f.id + ": " + f.message;
    if (!f.remedy.empty()) out += " [remedy: " + f.remedy + "]";
    out += "\n";
  }
  return out;
}

}  // namespace gpuenv::testing
