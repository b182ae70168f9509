#pragma once
// Renderings of an install plan and of an apply report: text for people, JSON (docs/install.md).

#include <optional>
#include <string>

#include "install/apply.hpp"
#include "install/plan.hpp"

namespace gpuenv::cli {

/// The plan (and, after an apply, what happened to each step) as the JSON object of docs/install.md.
std::string install_json(const install::InstallPlan& plan, const std::optional<install::ApplyReport>& report);
/// The plan as text: each step, why, and the exact argv; refusals first.
std::string install_plan_text(const install::InstallPlan& plan);
/// One line per step with its result, then the outcome.
std::string install_report_text(const install::InstallPlan& plan, const install::ApplyReport& report);

}  // namespace gpuenv::cli
