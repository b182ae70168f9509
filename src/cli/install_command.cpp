// `gpuenv install NAME|FILE --dry-run [--json] [--set FIELD=VALUE...] [--os DISTRO:VERSION] [--arch x86_64|arm64]
// [--root DIR] [--repo-url URL]` `gpuenv install NAME|FILE [--set FIELD=VALUE...] [--resume] [--reboot] [--json]
// [--log FILE] [--state-dir DIR] [--repo-url URL]`

#include "cli/commands.hpp"
#include "cli/install_output.hpp"
#include "cli/trusted_paths.hpp"
#include "compat/knowledge_base.hpp"
#include "doctor/doctor.hpp"
#include "install/apply.hpp"
#include "install/node.hpp"
#include "install/planner.hpp"
#include "install/repository_url.hpp"
#include "profile/catalog.hpp"
#include "profile/matrix.hpp"

namespace gpuenv::cli {
namespace {

struct InstallOptions {
  std::string profile;
  bool dry_run = false;
  bool json = false;
  std::vector<std::string> set;
  std::string os;
  std::string arch;
  std::string root;
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

/// The profile to install: the one cell --set picks (profile::resolve_cell, as doctor and cloud-init), or, with no
/// --set, a matrix profile's first cell (said so).
util::Expected<profile::Profile> load_install_profile(Context& context, const std::string& name,
                                                      const std::vector<std::string>& set, const std::string& arch) {
  GPUENV_TRY_ASSIGN(auto document, load_trusted_profile(context.system, name, "profile"));
  GPUENV_TRY_ASSIGN(auto assignments, profile::parse_assignments(set));
  for (const auto& [field, value] : assignments) {
    // --arch would replace the picked cell's os.arch afterwards: a plan for one architecture from another's cell.
    if (field == "os.arch" && !arch.empty() && value != arch)
      return util::Error::usage("--arch " + arch + " and --set os.arch=" + value + " disagree", "drop one of them");
  }
  if (!assignments.empty()) return profile::resolve_cell(document, assignments, name);
  if (document.matrix.empty()) return document.base;
  const std::vector<profile::Cell> cells = profile::pick_cells(document, {}).cells;
  if (cells.empty()) return util::Error::input(name + ": the matrix has no cells");
  context.err << "gpuenv: note: " << name << " is a matrix; installing its first cell, " << cells.front().label()
              << " (pick one with --set)\n";
  return cells.front().profile;
}

/// The architecture planned for: --arch, else the captured node's, else the profile's os.arch, else this machine's.
/// Where two of them are stated they must agree (a live node's is this machine's).
util::Expected<std::string> planned_arch(const profile::Profile& profile, const InstallOptions& options,
                                         const std::string& node_arch, bool live_node) {
  const std::string node = live_node ? this_machine_arch() : node_arch;
  if (!options.arch.empty() && !node.empty() && options.arch != node)
    return util::Error::usage("--arch " + options.arch + ": the node is " + node);
  const std::string chosen = !options.arch.empty() ? options.arch : !node.empty() ? node : profile.os_arch;
  if (!profile.os_arch.empty() && !chosen.empty() && chosen != profile.os_arch && options.arch.empty())
    return util::Error::usage(profile.origin + ": os.arch is " + profile.os_arch + "; the node is " + chosen,
                              "plan for another architecture with --dry-run --arch, or use the node's profile");
  return chosen.empty() ? this_machine_arch() : chosen;
}

util::Expected<install::Target> target_of(const profile::Profile& profile, const InstallOptions& options,
                                          const std::string& arch) {
  install::Target target{profile.os_distro, profile.os_version, arch};
  if (options.os.empty()) return target;
  const std::size_t colon = options.os.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == options.os.size())
    return util::Error::usage("--os " + options.os + ": expected DISTRO:VERSION", "e.g. --os rockylinux:9");
  target.distro = options.os.substr(0, colon);
  target.version = options.os.substr(colon + 1);
  return target;
}

/// The flag, else the environment variable, checked as every repository URL is ("" when neither is set).
util::Expected<std::string> override_of(Context& context, const std::string& flag, const std::string& flag_name,
                                        const char* variable) {
  if (!flag.empty()) return install::checked_repository_url(flag, flag_name);
  const std::string value = context.system.environment(variable).value_or("");
  if (value.empty()) return value;
  return install::checked_repository_url(value, variable);
}

/// The repository bases: the flags, the environment, then the profile's [mirrors]; each checked.
util::Expected<install::PlanRequest> repository_request(Context& context, const InstallOptions& options,
                                                        const profile::Profile& profile, install::Target target) {
  GPUENV_TRY_ASSIGN(auto cuda, override_of(context, options.repo_url, "--repo-url", "GPUENV_CUDA_REPO_URL"));
  GPUENV_TRY_ASSIGN(auto toolkit,
                    override_of(context, options.toolkit_repo_url, "--toolkit-repo-url", "GPUENV_TOOLKIT_REPO_URL"));
  install::PlanRequest request{std::move(target), {}, cuda, toolkit};
  install::add_profile_mirrors(profile, request);  // after the flag and the environment
  for (std::string* url : {&request.cuda_repo_url, &request.toolkit_repo_url}) {
    if (url->empty()) continue;
    GPUENV_TRY_ASSIGN(auto checked, install::checked_repository_url(*url, "[mirrors]"));
    *url = checked;
  }
  return request;
}

/// The captured node's architecture (dpkg's own package, or an EL kernel's release); "" when it does not say.
std::string captured_arch(system::System& system, const install::NodeFacts& node) {
  if (auto status = system.read_file("/var/lib/dpkg/status")) {
    const std::size_t at = status->find("Package: dpkg\n");
    const std::size_t arch = at == std::string::npos ? at : status->find("Architecture: ", at);
    if (arch != std::string::npos) {
      const std::string value = status->substr(arch + 14, status->find('\n', arch) - arch - 14);
      if (value == "amd64") return "x86_64";
      if (value == "arm64") return "arm64";
    }
  }
  if (node.kernel_release.ends_with(".x86_64")) return "x86_64";
  if (node.kernel_release.ends_with(".aarch64")) return "arm64";
  return "";
}

install::Verification verify_with_doctor(Context& context, const profile::Profile& profile, bool fabric_manager) {
  doctor::DoctorRequest request;
  request.profile = profile;
  request.run_smoke = false;
  auto report = doctor::run_doctor(context.system, request);
  if (!report) return {report::Verdict::not_ok, "doctor failed: " + report.error().message};
  return install::judge_doctor(report->verdict, doctor::verdict_word(report->verdict), report->findings,
                               fabric_manager);
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

util::Expected<ExitCode> apply_install(Context& context, const InstallOptions& options, const profile::Profile& profile,
                                       const install::InstallPlan& plan) {
  install::ApplyOptions apply;
  apply.log_path = options.log;
  apply.state_dir = options.state_dir;
  apply.resume = options.resume;
  apply.allow_reboot = options.reboot;
  apply.verify = [&context, &profile, &plan] { return verify_with_doctor(context, profile, plan.fabric_manager); };
  for (const report::Finding& note : plan.notes) {
    context.err << "gpuenv: warning: " << note.id << ": " << note.message << "\n";
  }
  GPUENV_TRY_ASSIGN(auto report, install::apply_plan(context.system, plan, apply));
  context.out << (options.json ? install_json(plan, report) : install_report_text(plan, report));
  if (!options.json && !plan.refusals.empty()) context.err << install_plan_text(plan);
  return exit_code_of(report.outcome);
}

/// The node the plan is for: this one (apply), a captured tree (--dry-run --root), or none (a plain dry run).
struct PlannedNode {
  std::unique_ptr<system::System> captured;  ///< the tree under --root
  install::NodeFacts facts;
  std::string arch;  ///< the captured node's architecture, when it tells
};

util::Expected<PlannedNode> planned_node(Context& context, const InstallOptions& options, const std::string& manager) {
  PlannedNode out;
  if (!options.root.empty()) {
    GPUENV_TRY_ASSIGN(auto rooted, system::make_rooted_system(options.root));
    out.captured = std::move(rooted);
    out.facts = install::observe_node(*out.captured, manager, true);
    out.arch = captured_arch(*out.captured, out.facts);
    return out;
  }
  if (!options.dry_run) out.facts = install::observe_node(context.system, manager);
  return out;
}

util::Expected<ExitCode> run_install(Context& context, const InstallOptions& options) {
  if (!options.dry_run && (!options.os.empty() || !options.root.empty()))
    return util::Error::usage(
        "--os and --root plan for another machine: use them with "
        "--dry-run");
  GPUENV_TRY_ASSIGN(auto profile, load_install_profile(context, options.profile, options.set, options.arch));
  GPUENV_TRY_ASSIGN(auto data, install::builtin_install_data());
  GPUENV_TRY_ASSIGN(auto kb, compat::builtin_knowledge_base());
  if (!options.dry_run && install::effective_uid(context.system).value_or(-1) != 0)
    return util::Error::usage("install needs root", "run it with sudo, or use --dry-run");

  GPUENV_TRY_ASSIGN(auto first_target, target_of(profile, options, this_machine_arch()));
  // Every repository URL is checked before anything is read from the node or done to it.
  GPUENV_TRY_ASSIGN(auto request, repository_request(context, options, profile, first_target));
  if (!options.dry_run) {
    for (const std::string& url : {request.cuda_repo_url, request.toolkit_repo_url}) {
      if (auto untrusted = install::check_local_repository(context.system, url)) return *untrusted;
    }
  }
  const install::TargetRow* row = data->find_target(first_target.distro, first_target.version);
  GPUENV_TRY_ASSIGN(auto node, planned_node(context, options, row ? row->manager : ""));
  GPUENV_TRY_ASSIGN(auto arch, planned_arch(profile, options, node.arch, !options.dry_run));
  GPUENV_TRY_ASSIGN(auto target, target_of(profile, options, arch));
  profile.os_arch = arch;  // --arch sets os.arch in the profile the plan and its verify see
  system::System& node_system = node.captured ? *node.captured : context.system;
  const bool on_a_node = options.root.empty() ? !options.dry_run : options.os.empty();
  if (on_a_node) {
    if (auto wrong = install::check_node_os(node_system, target)) return *wrong;
  }
  request.target = target;
  request.node = node.facts;
  GPUENV_TRY_ASSIGN(auto plan, install::plan_install(profile, request, *data, *kb));
  if (options.dry_run) return print_plan(context, options, plan);
  return apply_install(context, options, profile, plan);
}

}  // namespace

void add_install_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<InstallOptions>();
  CLI::App* command = app.add_subcommand(
      "install", "bring this node to a profile's driver, CUDA, cuDNN and container toolkit (docs/install.md)");
  command->add_option("profile", options->profile, "a shipped profile name or a profile file")->required();
  command->add_flag("--dry-run", options->dry_run, "print the plan; change nothing (no root needed)");
  command->add_flag("--json", options->json, "the plan or the report as JSON (docs/install.md)");
  command->add_option("--set", options->set, "Pick a matrix cell or override a field (FIELD=VALUE; repeatable)")
      ->allow_extra_args(false);
  command->add_option("--os", options->os, "with --dry-run: plan for DISTRO:VERSION (e.g. rockylinux:9)");
  command
      ->add_option(
          "--arch", options->arch,
          "plan for x86_64 or arm64 (sets os.arch; default: the captured node's, the profile's os.arch, or this "
          "machine's)")
      ->check(CLI::IsMember({"x86_64", "arm64"}));
  command->add_option("--root", options->root,
                      "with --dry-run: plan for the node captured under DIR (its os-release, kernel, PCI devices, "
                      "packages)");
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
