#include "cli/cli.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/context.hpp"
#include "cli/version.hpp"
#include "system/abandon.hpp"
#include "util/host_text.hpp"

namespace gpuenv::cli {

ExitCode report_error(Context& context, const util::Error& error) {
  // Messages quote what the user or the host wrote (a profile value, a path): cleaned like any host text.
  util::TextRepairs repairs;
  const util::CleanOptions options{true, 2048};
  context.err << "gpuenv: " << util::clean_host_text(error.message, options, repairs) << "\n";
  if (!error.remedy.empty()) context.err << "  fix: " << util::clean_host_text(error.remedy, options, repairs) << "\n";
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
  auto system = system::make_real_system();
  Context context{*system, std::cout, std::cerr, terminal_style()};
  if (const auto verbose = run_version_verbose(context, argc, argv)) return static_cast<int>(*verbose);

  CLI::App app{"gpuenv: make a GPU server ready for work, and prove that it is."};
  app.set_version_flag("--version", "gpuenv " + gpuenv_version());
  app.require_subcommand(1);
  std::string data_dir;
  app.add_option("--data-dir", data_dir,
                 "Directory of data overlay files (*.toml named after a table; over $GPUENV_DATA_DIR and "
                 "/etc/gpuenv/data.d)");
  bool verbose = false;  // read by run_version_verbose before parsing; declared here for --help
  app.add_flag("--verbose", verbose, "With --version: print the knowledge base's horizon (newest row per table)");
  app.footer("Exit codes: 0 ok (warnings allowed), 1 not ok, 2 usage or bad input, 3 internal error.");

  Action action;
  add_doctor_command(app, action);
  add_profile_command(app, action);
  add_matrix_command(app, action);
  add_dockerfile_command(app, action);
  add_smoke_command(app, action);
  add_cloud_init_command(app, action);
  add_install_command(app, action);
  add_data_command(app, action);
  add_nccl_command(app, action);
  add_watch_command(app, action);
  add_events_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }

  ExitCode code = ExitCode::internal;
  try {
    // `data check DIR` judges DIR on its own; every other command runs with this machine's overlay.
    const bool checking_a_directory = app.got_subcommand("data") && app.get_subcommand("data")->got_subcommand("check");
    code = install_data_overlay(context, data_dir, !checking_a_directory);
    if (code == ExitCode::ok && !action) code = ExitCode::usage;
    if (code == ExitCode::ok) {
      const util::Expected<ExitCode> ran = action(context);
      code = ran ? *ran : report_error(context, ran.error());
    }
  } catch (const std::exception& e) {
    std::cerr << "gpuenv: internal error: " << e.what() << "\n";
    code = ExitCode::internal;
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
