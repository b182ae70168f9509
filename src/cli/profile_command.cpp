// `gpuenv profile list | show | check`.

#include <algorithm>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/profile_output.hpp"
#include "compat/derive.hpp"
#include "compat/rules.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"
#include "profile/parser.hpp"

namespace gpuenv::cli {
namespace {

struct ProfileOptions {
  std::vector<std::string> profiles;
  bool json = false;
  bool all = false;  ///< check every shipped profile
};

util::Expected<ExitCode> run_list(Context& context, bool json) {
  nlohmann::json rows = nlohmann::json::array();
  std::ostringstream table;
  for (const profile::ShippedProfile& shipped : profile::shipped_profiles()) {
    auto document = profile::parse_profile(shipped.text, "builtin:" + shipped.name);
    if (!document) return util::Error::internal(document.error().message);
    const profile::Profile& p = document->base;
    const std::size_t cells = profile::expand_matrix(*document).size();
    std::string framework = p.framework_name.empty() ? "-" : p.framework_name + " " + p.framework_version;
    rows.push_back({{"name", p.name},
                    {"cuda", p.cuda_version},
                    {"os", p.os_distro + " " + p.os_version},
                    {"framework", p.framework_name.empty() ? nlohmann::json() : nlohmann::json(framework)},
                    {"cells", cells},
                    {"description", p.description}});
    table << std::left << std::setw(30) << p.name << std::setw(9)
          << (p.cuda_version.empty() ? "matrix" : p.cuda_version) << std::setw(15) << (p.os_distro + " " + p.os_version)
          << std::setw(18) << framework << (cells > 1 ? "[" + std::to_string(cells) + " cells] " : "") << p.description
          << "\n";
  }
  if (json) {
    context.out << rows.dump(2) << "\n";
  } else {
    context.out << table.str();
  }
  return ExitCode::ok;
}

util::Expected<ExitCode> run_show(Context& context, const std::string& name, bool json) {
  GPUENV_TRY_ASSIGN(auto kb, compat::builtin_knowledge_base());
  GPUENV_TRY_ASSIGN(auto document, profile::load_profile(name, context.system));
  const std::vector<profile::Cell> cells = profile::expand_matrix(document);
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const profile::Cell& cell : cells) out.push_back(resolved_json(cell, *kb));
    context.out << (cells.size() == 1 ? out[0] : out).dump(2) << "\n";
  } else {
    for (const profile::Cell& cell : cells) context.out << resolved_text(cell, *kb) << (cells.size() > 1 ? "\n" : "");
  }
  return ExitCode::ok;
}

util::Expected<ExitCode> run_check(Context& context, const ProfileOptions& options) {
  GPUENV_TRY_ASSIGN(auto kb, compat::builtin_knowledge_base());
  std::vector<std::string> names = options.profiles;
  if (options.all) {
    for (const profile::ShippedProfile& shipped : profile::shipped_profiles()) names.push_back(shipped.name);
  }
  if (names.empty()) return util::Error::usage("profile check: name at least one profile", "or pass --all");
  ExitCode worst = ExitCode::ok;
  nlohmann::json results = nlohmann::json::array();
  for (const std::string& name : names) {
    auto document = profile::load_profile(name, context.system);
    if (!document) {
      worst = std::max(worst, report_error(context, document.error()));
      continue;
    }
    const auto verdicts = compat::check_cells(profile::expand_matrix(*document), *kb);
    const bool all_valid = std::all_of(verdicts.begin(), verdicts.end(), [](const auto& v) { return v.valid; });
    if (!all_valid) worst = std::max(worst, ExitCode::not_ok);
    if (options.json) {
      results.push_back(check_json(document->base, verdicts));
    } else {
      context.out << check_text(document->base, verdicts, context.style);
    }
  }
  if (options.json && !results.empty()) context.out << (results.size() == 1 ? results[0] : results).dump(2) << "\n";
  return worst;
}

}  // namespace

void add_profile_command(CLI::App& app, Action& action) {
  CLI::App* command = app.add_subcommand("profile", "List, show and check environment profiles");
  command->require_subcommand(1);
  auto options = std::make_shared<ProfileOptions>();

  CLI::App* list = command->add_subcommand("list", "List the shipped profiles, one line each");
  list->add_flag("--json", options->json, "Print JSON");
  list->callback([&action, options] { action = [options](Context& c) { return run_list(c, options->json); }; });

  CLI::App* show = command->add_subcommand(
      "show", "Show a resolved profile with its derived values (image tag, wheel index, driver floor)");
  show->add_option("profile", options->profiles, "Shipped profile name or path to a .toml file")
      ->required()
      ->expected(1);
  show->add_flag("--json", options->json, "Print JSON");
  show->callback([&action, options] {
    action = [options](Context& c) { return run_show(c, options->profiles.front(), options->json); };
  });

  CLI::App* check = command->add_subcommand(
      "check", "Check profiles against the compatibility rules (exit 0 ok, 1 incompatible, 2 bad input)");
  check->add_option("profiles", options->profiles, "Shipped profile names or paths to .toml files");
  check->add_flag("--all", options->all, "Check every shipped profile");
  check->add_flag("--json", options->json, "Print JSON");
  check->callback([&action, options] { action = [options](Context& c) { return run_check(c, *options); }; });
}

}  // namespace gpuenv::cli
