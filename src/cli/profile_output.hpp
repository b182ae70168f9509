#pragma once
// Text and JSON renderings of profiles and their check results (shared by profile, matrix and later commands).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "compat/rules.hpp"
#include "profile/profile.hpp"
#include "report/render.hpp"

namespace gpuenv::cli {

/// A cell's fields and derived values, one "key: value" line each.
std::string resolved_text(const profile::Cell& cell, const compat::KnowledgeBase& kb);
nlohmann::json resolved_json(const profile::Cell& cell, const compat::KnowledgeBase& kb);

/// `profile check` output for one document: each cell's findings and verdict.
std::string check_text(const profile::Profile& base, const std::vector<compat::CellVerdict>& verdicts,
                       const report::TextStyle& style);
nlohmann::json check_json(const profile::Profile& base, const std::vector<compat::CellVerdict>& verdicts);

/// A cell's assignments as a JSON object ({"cuda.version": "12.4.1"}).
nlohmann::json assignments_json(const profile::Assignments& assignments);

}  // namespace gpuenv::cli
