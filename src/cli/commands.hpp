#pragma once
// One function per subcommand: each registers its CLI11 options and sets `action` to run it.

#include <CLI/CLI.hpp>
#include <functional>

#include "cli/context.hpp"

namespace gpuenv::cli {

/// The command chosen on the command line, to run after parsing.
using Action = std::function<ExitCode(Context&)>;

void add_profile_command(CLI::App& app, Action& action);
void add_matrix_command(CLI::App& app, Action& action);
void add_doctor_command(CLI::App& app, Action& action);
void add_dockerfile_command(CLI::App& app, Action& action);
void add_smoke_command(CLI::App& app, Action& action);
void add_cloud_init_command(CLI::App& app, Action& action);
void add_install_command(CLI::App& app, Action& action);

}  // namespace gpuenv::cli
