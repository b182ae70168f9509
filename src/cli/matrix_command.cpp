// `gpuenv matrix NAME|FILE [--format table|json|github]`.

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/profile_output.hpp"
#include "compat/rules.hpp"
#include "dockerfile/dockerfile.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"

namespace gpuenv::cli {
namespace {

struct MatrixOptions {
  std::string profile;
  std::string format = "table";
};

std::string render_table(const std::vector<compat::CellVerdict>& verdicts, const report::TextStyle& style) {
  std::string out;
  std::size_t index = 0;
  for (const compat::CellVerdict& v : verdicts) {
    const std::string label = v.cell.assignments.empty() ? "(base profile)" : v.cell.label();
    const std::string state = v.valid ? report::status_label(report::worst_status(v.findings), style)
                                      : report::status_label(report::Status::fail, style);
    out += std::to_string(++index) + ". " + state + "  " + (v.valid ? "valid    " : "invalid  ") + label +
           (v.cell.requested && !v.cell.assignments.empty() ? "  (include)" : "") + "\n";
    for (const report::Finding& f : v.findings) {
      if (f.status == report::Status::fail || f.status == report::Status::warn) {
        out += "     " + report::status_label(f.status, style) + " " + f.id + ": " + f.message + "\n";
      }
    }
  }
  return out;
}

nlohmann::json render_json(const profile::Profile& base, const std::vector<compat::CellVerdict>& verdicts) {
  nlohmann::json out = check_json(base, verdicts);
  for (std::size_t i = 0; i < verdicts.size(); ++i) out["cells"][i]["requested"] = verdicts[i].cell.requested;
  return out;
}

/// Where a cell's image is built: its Docker platform and the GitHub-hosted runner of that architecture (arm64
/// builds run natively on ubuntu-24.04-arm instead of under QEMU emulation).
struct BuildPlatform {
  const char* platform;
  const char* runner;
};

BuildPlatform build_platform(const profile::Profile& cell) {
  if (profile::effective_arch(cell) == "arm64") return {"linux/arm64", "ubuntu-24.04-arm"};
  return {"linux/amd64", "ubuntu-24.04"};
}

nlohmann::json render_github(const profile::Profile& base, const std::vector<compat::CellVerdict>& verdicts) {
  nlohmann::json include = nlohmann::json::array();
  for (const compat::CellVerdict& v : verdicts) {
    if (!v.valid) continue;
    nlohmann::json cell = assignments_json(v.cell.assignments);
    cell["profile"] = base.origin.rfind("builtin:", 0) == 0 ? base.name : base.origin;
    cell["label"] = v.cell.assignments.empty() ? base.name : v.cell.label();
    cell["set"] = dockerfile::set_arguments(v.cell.assignments);
    const BuildPlatform platform = build_platform(v.cell.profile);
    cell["platform"] = platform.platform;
    cell["runner"] = platform.runner;
    // The file `gpuenv dockerfile --all` writes for the cell, and its stem as an image tag (at most 128 characters).
    const std::string file = dockerfile::cell_file_name(base.name, v.cell.assignments);
    cell["file"] = file;
    cell["tag"] = file.substr(0, std::min<std::size_t>(file.size() - std::string_view(".Dockerfile").size(), 128));
    include.push_back(cell);
  }
  return {{"include", include}};
}

util::Expected<ExitCode> run_matrix(Context& context, const MatrixOptions& options) {
  GPUENV_TRY_ASSIGN(auto kb, compat::builtin_knowledge_base());
  GPUENV_TRY_ASSIGN(auto document, profile::load_profile(options.profile, context.system));
  const auto verdicts = compat::check_cells(profile::expand_matrix(document), *kb);
  if (options.format == "json") {
    context.out << render_json(document.base, verdicts).dump(2) << "\n";
  } else if (options.format == "github") {
    context.out << render_github(document.base, verdicts).dump() << "\n";
  } else {
    context.out << render_table(verdicts, context.style);
  }
  // Cells from the product may be invalid (they are filtered out); a requested cell or an empty result is not ok.
  bool any_valid = false;
  for (const auto& v : verdicts) {
    if (v.valid) any_valid = true;
    if (!v.valid && v.cell.requested) return ExitCode::not_ok;
  }
  return any_valid ? ExitCode::ok : ExitCode::not_ok;
}

}  // namespace

void add_matrix_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<MatrixOptions>();
  CLI::App* command = app.add_subcommand("matrix", "Expand a profile's matrix and mark each cell valid or invalid");
  command->add_option("profile", options->profile, "Shipped profile name or path to a .toml file")->required();
  command
      ->add_option("--format", options->format,
                   "table, json, or github ({\"include\":[...]} of the valid cells with platform, runner, file, tag)")
      ->check(CLI::IsMember({"table", "json", "github"}));
  command->add_flag_callback(
      "--json", [options] { options->format = "json"; }, "Same as --format json");
  command->callback([&action, options] { action = [options](Context& c) { return run_matrix(c, *options); }; });
}

}  // namespace gpuenv::cli
