#include "cli/cli.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/context.hpp"
#include "system/abandon.hpp"

#ifndef GPUENV_VERSION
#define GPUENV_VERSION "0.0.0"
#endif

namespace gpuenv::cli {

ExitCode report_error(Context& context, const util::Error& error) {
  context.err << "gpuenv: " << error.message << "\n";
  if (!error.remedy.empty()) context.err << "  fix: " << error.remedy << "\n";
  return error.kind == util::ErrorKind::internal ? ExitCode::internal : ExitCode::usage;
}

namespace {

/// Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org).
report::TextStyle terminal_style() {
  const char* no_color = std::getenv("NO_COLOR");
  return {::isatty(STDOUT_FILENO) == 1 && (no_color == nullptr || *no_color == '\0')};
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"gpuenv: make a GPU server ready for work, and prove that it is."};
  app.set_version_flag("--version", std::string("gpuenv ") + GPUENV_VERSION);
  app.require_subcommand(1);
  app.footer("Exit codes: 0 ok (warnings allowed), 1 not ok, 2 usage or bad input, 3 internal error.");

  Action action;
  add_doctor_command(app, action);
  add_profile_command(app, action);
  add_matrix_command(app, action);
  add_dockerfile_command(app, action);
  add_smoke_command(app, action);
  add_cloud_init_command(app, action);
  add_install_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }

  auto system = system::make_real_system();
  Context context{*system, std::cout, std::cerr, terminal_style()};
  ExitCode code = ExitCode::internal;
  try {
    code = action ? action(context) : ExitCode::usage;
  } catch (const std::exception& e) {
    std::cerr << "gpuenv: internal error: " << e.what() << "\n";
  }
  return leave(code);
}

int leave(ExitCode code) {
  std::cout.flush();
  std::cerr.flush();
  // A thread abandoned inside NVML or libcuda (or a child that would not die) is still running: exit() would run
  // static destructors and the libraries' teardown under it, a crash or a hang that turns the exit code into 139
  // or 124. Leave without them; everything printed has been flushed.
  if (system::work_was_abandoned()) {
    std::fflush(nullptr);
    std::_Exit(static_cast<int>(code));
  }
  return static_cast<int>(code);
}

}  // namespace gpuenv::cli
