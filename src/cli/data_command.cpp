// `gpuenv data check DIR`, `gpuenv data show TABLE [--json]`, the global `--data-dir DIR` and
// `gpuenv --version --verbose` (the knowledge base's horizon).

#include <string_view>

#include "cli/commands.hpp"
#include "cli/data_overlay.hpp"
#include "cli/version.hpp"
#include "compat/horizon.hpp"
#include "compat/knowledge_base.hpp"
#include "util/strings.hpp"

namespace gpuenv::cli {
namespace {

struct DataOptions {
  std::string directory;
  std::string table;
  bool json = false;
};

util::Expected<ExitCode> run_data_check(Context& context, const DataOptions& options) {
  if (!context.system.exists(options.directory)) return util::Error::usage(options.directory + ": no such directory");
  GPUENV_TRY_ASSIGN(auto overlay, read_overlay_directory(context.system, options.directory, all_data_tables()));
  GPUENV_TRY(check_overlay(overlay));
  std::vector<std::string> files;
  for (const util::OverlayFile& file : overlay) files.push_back(file.table);
  context.out << options.directory << ": "
              << (files.empty() ? std::string("no overlay files (*.toml named after a table)")
                                : std::to_string(files.size()) + " overlay file(s) valid: " + util::join(files, ", "))
              << "\n";
  return ExitCode::ok;
}

util::Expected<ExitCode> run_data_show(Context& context, const DataOptions& options) {
  const std::string name = util::ends_with(options.table, ".toml") ? options.table : options.table + ".toml";
  const std::vector<util::DataTable> tables = all_data_tables();
  const util::DataTable* table = util::find_table(tables, name);
  if (table == nullptr) {
    std::vector<std::string> names;
    for (const util::DataTable& t : tables) names.emplace_back(t.name);
    return util::Error::usage("no data table " + name, "name one of " + util::join(names, ", "));
  }
  GPUENV_TRY_ASSIGN(auto merged, util::read_data_table(*table, util::installed_overlay()));
  context.out << (options.json ? merged.to_json() : merged.to_toml());
  return ExitCode::ok;
}

/// "--version --verbose" in any order, optionally with --data-dir DIR; the DIR in `data_dir`.
bool wants_verbose_version(int argc, char** argv, std::string& data_dir) {
  bool version = false;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--version") {
      version = true;
    } else if (arg == "--verbose") {
      verbose = true;
    } else if (arg == "--data-dir" && i + 1 < argc) {
      data_dir = argv[++i];
    } else if (util::starts_with(arg, "--data-dir=")) {
      data_dir = std::string(arg.substr(std::string_view("--data-dir=").size()));
    } else {
      return false;
    }
  }
  return version && verbose;
}

}  // namespace

ExitCode install_data_overlay(Context& context, const std::string& data_dir, bool validate) {
  auto overlay = find_overlay(context.system, data_dir);
  if (!overlay) return report_error(context, overlay.error());
  // A bad overlay row is bad input for every command, not only for the one that happens to read its table.
  if (validate && !overlay->empty()) {
    if (auto checked = check_overlay(*overlay); !checked) return report_error(context, checked.error());
  }
  util::install_overlay(std::move(*overlay));
  return ExitCode::ok;
}

std::optional<ExitCode> run_version_verbose(Context& context, int argc, char** argv) {
  std::string data_dir;
  if (!wants_verbose_version(argc, argv, data_dir)) return std::nullopt;
  if (const ExitCode code = install_data_overlay(context, data_dir, true); code != ExitCode::ok) return code;
  auto kb = compat::builtin_knowledge_base();
  if (!kb) return report_error(context, kb.error());
  context.out << "gpuenv " << gpuenv_version() << "\n";
  for (const compat::Horizon& horizon : compat::horizons(**kb)) {
    context.out << "  " << horizon.table << ": " << horizon.what << " up to "
                << (horizon.newest ? horizon.newest->str() : std::string("-"))
                << (horizon.as_of.empty() ? std::string() : ", data as of " + horizon.as_of) << "\n";
  }
  for (const util::OverlayFile& file : util::installed_overlay()) context.out << "  overlay: " << file.path << "\n";
  return ExitCode::ok;
}

void add_data_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<DataOptions>();
  CLI::App* command = app.add_subcommand("data", "Check a data overlay, or show a data table with overlays merged");
  command->require_subcommand(1);
  CLI::App* check = command->add_subcommand("check", "Validate the overlay files of a directory (exit 0 or 2)");
  check->add_option("directory", options->directory, "Directory of *.toml overlay files")->required();
  check->callback([&action, options] { action = [options](Context& c) { return run_data_check(c, *options); }; });
  CLI::App* show = command->add_subcommand("show", "Print a data table with the overlays of this run merged in");
  show->add_option("table", options->table, "Table name, e.g. cuda or cuda.toml")->required();
  show->add_flag("--json", options->json, "Print JSON instead of TOML");
  show->callback([&action, options] { action = [options](Context& c) { return run_data_show(c, *options); }; });
}

}  // namespace gpuenv::cli
