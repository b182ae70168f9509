// `gpuenv install NAME|FILE --dry-run [--json] [--os DISTRO:VERSION] [--arch x86_64|arm64] [--repo-url URL]`
// `gpuenv install NAME|FILE [--resume] [--reboot] [--json] [--log FILE] [--state-dir DIR] [--repo-url URL]`

#include "cli/commands.hpp"
#include "cli/install_output.hpp"
#include "cli/trusted_paths.hpp"
#include "compat/knowledge_base.hpp"
#include "doctor/doctor.hpp"
#include "install/apply.hpp"
#include "install/node.hpp"
#include "install/planner.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"

namespace gpuenv::cli {
namespace {

struct InstallOptions {
  std::string profile;
  bool dry_run = false;
  bool json = false;
  std::string os;
  std::string arch;
  std::string repo_url;
  std::string toolkit_repo_url;
  bool resume = false;
  bool reboot = false;
  std::string log = "/var/log/gpuenv/install.log";
  std::string state_dir = "/var/lib/gpuenv";
};

std::string this_machine_arch() {
#if defined(__aarch64__)
  return "arm64";
#else
  return "x86_64";
#endif
}

/// The profile to install; a matrix profile installs its first cell (and says so).
util::Expected<profile::Profile> load_install_profile(Context& context, const std::string& name) {
  auto document = load_trusted_profile(context.system, name, "profile");
  if (!document) return document.error();
  if (document->matrix.empty()) return document->base;
  const std::vector<profile::Cell> cells = profile::expand_matrix(*document);
  if (cells.empty()) return util::Error::input(name + ": the matrix has no cells");
  context.err << "gpuenv: note: " << name << " is a matrix; installing its first cell, " << cells.front().label()
              << "\n";
  return cells.front().profile;
}

util::Expected<install::Target> target_of(const profile::Profile& profile, const InstallOptions& options) {
  install::Target target{profile.os_distro, profile.os_version,
                         options.arch.empty() ? this_machine_arch() : options.arch};
  if (options.os.empty()) return target;
  const std::size_t colon = options.os.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == options.os.size())
    return util::Error::usage("--os " + options.os + ": expected DISTRO:VERSION", "e.g. --os rockylinux:9");
  target.distro = options.os.substr(0, colon);
  target.version = options.os.substr(colon + 1);
  return target;
}

/// The flag, else the environment variable ("" when neither is set).
std::string override_of(Context& context, const std::string& flag, const char* variable) {
  if (!flag.empty()) return flag;
  return context.system.environment(variable).value_or("");
}

install::Verification verify_with_doctor(Context& context, const profile::Profile& profile) {
  doctor::DoctorRequest request;
  request.profile = profile;
  request.run_smoke = false;
  auto report = doctor::run_doctor(context.system, request);
  if (!report) return {report::Verdict::not_ok, "doctor failed: " + report.error().message};
  std::string summary(doctor::verdict_word(report->verdict));
  for (const report::Finding& finding : report->findings) {
    if (finding.status == report::Status::fail) summary += "; " + finding.id + ": " + finding.message;
  }
  return {report->verdict, summary};
}

ExitCode print_plan(Context& context, const InstallOptions& options, const install::InstallPlan& plan) {
  context.out << (options.json ? install_json(plan, std::nullopt) : install_plan_text(plan));
  return plan.refusals.empty() ? ExitCode::ok : ExitCode::not_ok;
}

ExitCode exit_code_of(install::Outcome outcome) {
  switch (outcome) {
    case install::Outcome::refused:
    case install::Outcome::failed:
    case install::Outcome::not_ready:
      return ExitCode::not_ok;
    default:
      return ExitCode::ok;  // converged, changed, verified, no_gpu and reboot_required (docs/install.md)
  }
}

ExitCode run_install(Context& context, const InstallOptions& options) {
  if (!options.dry_run && !options.os.empty())
    return report_error(context, util::Error::usage("--os plans for another machine: use it with --dry-run"));
  auto profile = load_install_profile(context, options.profile);
  if (!profile) return report_error(context, profile.error());
  auto target = target_of(*profile, options);
  if (!target) return report_error(context, target.error());
  auto data = install::builtin_install_data();
  if (!data) return report_error(context, data.error());
  auto kb = compat::builtin_knowledge_base();
  if (!kb) return report_error(context, kb.error());

  install::PlanRequest request{*target,
                               {},
                               override_of(context, options.repo_url, "GPUENV_CUDA_REPO_URL"),
                               override_of(context, options.toolkit_repo_url, "GPUENV_TOOLKIT_REPO_URL")};
  install::add_profile_mirrors(*profile, request);  // after the flag and the environment
  if (!options.dry_run) {
    if (install::effective_uid(context.system).value_or(-1) != 0)
      return report_error(context, util::Error::usage("install needs root", "run it with sudo, or use --dry-run"));
    if (auto wrong = install::check_node_os(context.system, *target)) return report_error(context, *wrong);
    const install::TargetRow* row = (*data)->find_target(target->distro, target->version);
    request.node = install::observe_node(context.system, row ? row->manager : "");
  }
  auto plan = install::plan_install(*profile, request, **data, **kb);
  if (!plan) return report_error(context, plan.error());
  if (options.dry_run) return print_plan(context, options, *plan);

  install::ApplyOptions apply;
  apply.log_path = options.log;
  apply.state_dir = options.state_dir;
  apply.resume = options.resume;
  apply.allow_reboot = options.reboot;
  apply.verify = [&context, &profile] { return verify_with_doctor(context, *profile); };
  for (const report::Finding& note : plan->notes) {
    context.err << "gpuenv: warning: " << note.id << ": " << note.message << "\n";
  }
  auto report = install::apply_plan(context.system, *plan, apply);
  if (!report) return report_error(context, report.error());
  context.out << (options.json ? install_json(*plan, *report) : install_report_text(*plan, *report));
  if (!options.json && !plan->refusals.empty()) context.err << install_plan_text(*plan);
  return exit_code_of(report->outcome);
}

}  // namespace

void add_install_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<InstallOptions>();
  CLI::App* command = app.add_subcommand(
      "install", "bring this node to a profile's driver, CUDA, cuDNN and container toolkit (docs/install.md)");
  command->add_option("profile", options->profile, "a shipped profile name or a profile file")->required();
  command->add_flag("--dry-run", options->dry_run, "print the plan; change nothing (no root needed)");
  command->add_flag("--json", options->json, "the plan or the report as JSON (docs/install.md)");
  command->add_option("--os", options->os, "with --dry-run: plan for DISTRO:VERSION (e.g. rockylinux:9)");
  command->add_option("--arch", options->arch, "plan for x86_64 or arm64 (default: this machine)")
      ->check(CLI::IsMember({"x86_64", "arm64"}));
  command->add_option("--repo-url", options->repo_url,
                      "CUDA repository base URL (a mirror, or file:///... for tests); env GPUENV_CUDA_REPO_URL");
  command->add_option("--toolkit-repo-url", options->toolkit_repo_url,
                      "container toolkit repository base URL; env GPUENV_TOOLKIT_REPO_URL");
  command->add_flag("--resume", options->resume, "continue after the steps the state file records as completed");
  command->add_flag("--reboot", options->reboot, "reboot when the installed module needs it (never otherwise)");
  command->add_option("--log", options->log, "command log (default /var/log/gpuenv/install.log)");
  command->add_option("--state-dir", options->state_dir, "state directory (default /var/lib/gpuenv)");
  command->callback(
      [options, &action] { action = [options](Context& context) { return run_install(context, *options); }; });
}

}  // namespace gpuenv::cli
