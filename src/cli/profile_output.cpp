#include "cli/profile_output.hpp"

#include "compat/derive.hpp"
#include "compat/mirrors.hpp"
#include "profile/fields.hpp"
#include "util/strings.hpp"

namespace gpuenv::cli {
namespace {

std::string verdict_word(const compat::CellVerdict& verdict) {
  if (!verdict.valid) return "INCOMPATIBLE";
  return report::verdict_of(verdict.findings) == report::Verdict::degraded ? "OK (with warnings)" : "OK";
}

/// Where each download comes from once [mirrors] is applied (mirror or upstream); only for profiles with mirrors.
nlohmann::json sources_json(const profile::Profile& p, const compat::Derived& derived) {
  nlohmann::json out = nlohmann::json::object();
  if (!derived.image_tag.empty()) out["image"] = compat::cuda_image_reference(p, derived.image_tag);
  out["cuda_repo"] = compat::cuda_repo_base(p);
  out["container_toolkit"] = compat::container_toolkit_base(p);
  out["pypi"] = compat::pypi_index(p);
  if (!derived.torch_variant.empty()) {
    const compat::WheelSource wheels = compat::torch_wheels(p, derived.torch_variant);
    out["torch_wheels"] = wheels.url;
    out["torch_wheels_style"] = wheels.style == compat::WheelStyle::find_links ? "find-links" : "index";
  }
  if (const std::string archive = compat::distro_archive_mirror(p); !archive.empty()) out["distro_archive"] = archive;
  const std::string python = compat::python_downloads_mirror(p);
  out["python_downloads"] = python.empty() ? std::string(compat::upstream::python_downloads) : python;
  return out;
}

}  // namespace

nlohmann::json assignments_json(const profile::Assignments& assignments) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : assignments) out[key] = value;
  return out;
}

nlohmann::json resolved_json(const profile::Cell& cell, const compat::KnowledgeBase& kb) {
  const profile::Profile& p = cell.profile;
  nlohmann::json fields = nlohmann::json::object();
  for (const profile::FieldSpec& spec : profile::scalar_fields()) {
    const std::string value = profile::get_field(p, spec.key);
    if (!value.empty()) fields[std::string(spec.key)] = value;
  }
  if (!p.gpu_compute_capabilities.empty()) fields["gpu.compute_capabilities"] = p.gpu_compute_capabilities;
  if (!p.gpu_models.empty()) fields["gpu.models"] = p.gpu_models;
  const compat::Derived derived = compat::derive(p, kb);
  nlohmann::json out = {{"origin", p.origin}, {"fields", fields}};
  if (!cell.assignments.empty()) out["cell"] = assignments_json(cell.assignments);
  nlohmann::json d = nlohmann::json::object();
  if (!derived.image_tag.empty()) d["image"] = "nvidia/cuda:" + derived.image_tag;
  if (!derived.wheel_index_url.empty()) {
    d["torch_variant"] = derived.torch_variant;
    d["wheel_index_url"] = derived.wheel_index_url;
  }
  if (derived.driver_floor.version) d["driver_floor"] = derived.driver_floor.version->str();
  d["driver_floor_reason"] = derived.driver_floor.reason;
  if (!derived.driver_branch.empty()) d["driver_branch"] = derived.driver_branch;
  out["derived"] = d;
  if (compat::has_mirrors(p)) out["sources"] = sources_json(p, derived);
  return out;
}

std::string resolved_text(const profile::Cell& cell, const compat::KnowledgeBase& kb) {
  const nlohmann::json json = resolved_json(cell, kb);
  std::string out;
  out += "# " + cell.profile.name + " (" + cell.profile.origin + ")" +
         (cell.assignments.empty() ? "" : " cell " + cell.label()) + "\n";
  for (const profile::FieldSpec& spec : profile::scalar_fields()) {
    const std::string value = profile::get_field(cell.profile, spec.key);
    if (!value.empty()) out += std::string(spec.key) + ": " + value + "\n";
  }
  if (!cell.profile.gpu_compute_capabilities.empty()) {
    out += "gpu.compute_capabilities: " + util::join(cell.profile.gpu_compute_capabilities, ", ") + "\n";
  }
  if (!cell.profile.gpu_models.empty()) out += "gpu.models: " + util::join(cell.profile.gpu_models, ", ") + "\n";
  out += "derived:\n";
  for (const auto& [key, value] : json["derived"].items()) {
    out += "  " + key + ": " + value.get<std::string>() + "\n";
  }
  if (json.contains("sources")) {
    out += "sources ([mirrors] applied):\n";
    for (const auto& [key, value] : json["sources"].items()) out += "  " + key + ": " + value.get<std::string>() + "\n";
  }
  return out;
}

std::string check_text(const profile::Profile& base, const std::vector<compat::CellVerdict>& verdicts,
                       const report::TextStyle& style) {
  std::string out;
  for (const compat::CellVerdict& verdict : verdicts) {
    out += base.name + " (" + base.origin + ")" +
           (verdict.cell.assignments.empty() ? "" : " [" + verdict.cell.label() + "]") + "\n";
    out += report::render_findings(verdict.findings, style);
    out += "verdict: " + verdict_word(verdict) + " (" +
           std::to_string(report::count_status(verdict.findings, report::Status::fail)) + " failed, " +
           std::to_string(report::count_status(verdict.findings, report::Status::warn)) + " warnings)\n\n";
  }
  return out;
}

nlohmann::json check_json(const profile::Profile& base, const std::vector<compat::CellVerdict>& verdicts) {
  nlohmann::json cells = nlohmann::json::array();
  bool all_valid = true;
  for (const compat::CellVerdict& verdict : verdicts) {
    all_valid = all_valid && verdict.valid;
    cells.push_back({{"cell", assignments_json(verdict.cell.assignments)},
                     {"valid", verdict.valid},
                     {"verdict", report::to_string(report::verdict_of(verdict.findings))},
                     {"findings", report::to_json(verdict.findings)}});
  }
  return {{"schema", 1}, {"profile", base.name}, {"origin", base.origin}, {"valid", all_valid}, {"cells", cells}};
}

}  // namespace gpuenv::cli
