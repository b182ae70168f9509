#pragma once
// One function per subcommand: each registers its CLI11 options and sets `action` to run it.

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "cli/context.hpp"

namespace gpuenv::cli {

/// The command chosen on the command line, to run after parsing: its exit code, or the Error that stopped it (which
/// cli::run reports, once, with report_error).
using Action = std::function<util::Expected<ExitCode>(Context&)>;

void add_profile_command(CLI::App& app, Action& action);
void add_matrix_command(CLI::App& app, Action& action);
void add_doctor_command(CLI::App& app, Action& action);
void add_dockerfile_command(CLI::App& app, Action& action);
void add_smoke_command(CLI::App& app, Action& action);
void add_cloud_init_command(CLI::App& app, Action& action);
void add_install_command(CLI::App& app, Action& action);
void add_data_command(CLI::App& app, Action& action);
void add_nccl_command(CLI::App& app, Action& action);
void add_watch_command(CLI::App& app, Action& action);
void add_events_command(CLI::App& app, Action& action);

/// Finds this run's data overlay (/etc/gpuenv/data.d, $GPUENV_DATA_DIR, `data_dir`) and installs it for every
/// table read after; with `validate`, every table is parsed with it first, so a bad overlay is exit 2 for any command.
ExitCode install_data_overlay(Context& context, const std::string& data_dir, bool validate);
/// Handles `gpuenv --version --verbose [--data-dir DIR]`: the version and each table's horizon; nullopt for any
/// other command line.
std::optional<ExitCode> run_version_verbose(Context& context, int argc, char** argv);

}  // namespace gpuenv::cli
