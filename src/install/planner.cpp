#include "install/planner.hpp"

#include <algorithm>

#include "compat/mirrors.hpp"
#include "install/apt.hpp"
#include "install/backend.hpp"
#include "install/choice.hpp"
#include "install/node_text.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::install {
namespace {

using report::Finding;
using report::Status;

constexpr const char* k_unknown_kernel = "<running-kernel>";
constexpr const char* k_unknown_flavour = "<kernel-flavour>";
constexpr const char* k_unknown_kernel_package = "<kernel-package>";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

bool enabled(const std::string& flag, bool by_default) { return flag.empty() ? by_default : flag == "true"; }

std::string major_minor_dash(const std::string& version) {
  const auto parsed = util::Version::parse(version);
  if (!parsed || parsed->components().size() < 2) return version;
  return std::to_string(parsed->components()[0]) + "-" + std::to_string(parsed->components()[1]);
}

/// Refusals that do not depend on the package rows: each stops the plan before anything changes.
std::vector<Finding> profile_refusals(const profile::Profile& profile, const InstallPlan& plan, const NodeFacts& node,
                                      bool dkms) {
  std::vector<Finding> out;
  const DriverChoice& driver = plan.driver;
  if (driver.source == "distro" && plan.target.distro != "ubuntu") {
    out.push_back(refusal("install.driver.source",
                          "driver.source = \"distro\" is supported on Ubuntu only (its archive carries branch "
                          "packages and Canonical-signed modules); the target is " +
                              plan.target.label(),
                          "remove `source` from [driver] to install from NVIDIA's CUDA repository"));
  }
  if (node.secure_boot.value_or(false) && dkms) {
    out.push_back(refusal(
        "install.secure_boot",
        "Secure Boot is on and the driver's module is built with DKMS: the kernel would reject the unsigned "
        "module, and enrolling a key (MOK) needs the firmware console",
        "on Ubuntu set `source = \"distro\"` under [driver] (Canonical-signed linux-modules-nvidia-*, where the "
        "running kernel has them); or sign with a key already enrolled in the UEFI db; or turn Secure Boot off; "
        "then re-run",
        "canonical/ubuntu-drivers-common UbuntuDrivers/kerneldetection.py; "
        "GoogleCloudPlatform/compute-gpu-installation"));
  }
  if (!profile.cudnn_version.empty() && util::parse_int(util::major_of(profile.cudnn_version)).value_or(0) < 9) {
    out.push_back(
        refusal("install.cudnn",
                "cuDNN " + profile.cudnn_version + ": gpuenv installs cuDNN 9 and newer (cudnnN-cuda-M packages)",
                "use cudnn.version = \"9\", or install cuDNN 8 yourself and remove [cudnn]"));
  }
  if (!profile.cudnn_version.empty() && driver.source == "distro") {
    out.push_back(refusal("install.cudnn", "the Ubuntu archive has no cuDNN " + profile.cudnn_version + " package",
                          "remove [cudnn], or install from NVIDIA's repository (remove `source` from [driver])"));
  }
  if (enabled(profile.install_dcgm, false) && driver.source == "distro") {
    out.push_back(refusal("install.dcgm",
                          "DCGM comes from NVIDIA's repository, which `source = \"distro\"` does not "
                          "configure",
                          "remove `dcgm` from [install], or install from NVIDIA's repository"));
  }
  return out;
}

/// A package held by apt that a branch change would have to move.
std::optional<Finding> held_refusal(const InstallPlan& plan, const std::vector<std::string>& wanted,
                                    const NodeFacts& node) {
  std::vector<std::string> blocking;
  for (const std::string& held : node.held_packages) {
    const bool nvidia = held.find("nvidia") != std::string::npos || held.rfind("cuda-drivers", 0) == 0;
    if (nvidia && std::find(wanted.begin(), wanted.end(), held) == wanted.end()) blocking.push_back(held);
  }
  if (blocking.empty()) return std::nullopt;
  std::vector<std::string> release = {"apt-mark", "unhold"};
  release.insert(release.end(), blocking.begin(), blocking.end());
  return refusal("install.driver.held",
                 "held package(s) " + util::join(blocking, ", ") + " would block the change to driver branch " +
                     plan.driver.branch,
                 "release them with `" + util::join(release, " ") + "`, then re-run");
}

/// A loaded driver of another branch: the plan changes branches (and the reboot step will be due).
std::optional<Finding> branch_change(const InstallPlan& plan, const NodeFacts& node) {
  const std::string loaded = util::major_of(node.loaded_driver_version);
  if (loaded.empty() || loaded == plan.driver.branch) return std::nullopt;
  return warning("install.driver.branch_change", "the loaded driver is " + node.loaded_driver_version + " (branch " +
                                                     loaded + "); the plan installs branch " + plan.driver.branch +
                                                     ", which needs a reboot");
}

const DriverRow* find_driver_row(const InstallData& data, const TargetRow& target, const DriverChoice& driver) {
  const int branch = branch_number(driver.branch);
  for (const DriverRow& row : data.drivers) {
    if (row.manager == target.manager && (row.distro.empty() || row.distro == target.distro) &&
        row.origin == driver.source && row.modules == driver.modules && branch >= row.first_branch &&
        branch <= row.last_branch)
      return &row;
  }
  return nullptr;
}

Step package_step(const Backend& backend, std::string id, std::string why, std::vector<std::string> packages,
                  std::chrono::seconds timeout = std::chrono::seconds(1800)) {
  Step step{std::move(id), std::move(why)};
  step.commands = {backend.install(packages)};
  step.explain_failure = backend.similar_packages(packages.front());
  step.timeout = timeout;
  return backend.installed_probe(step, packages);
}

Step nouveau_step(const Backend& backend, const PlanContext& context) {
  const std::string kernel = context.expand(std::string("{kernel}"));
  Step step{"install.nouveau",
            "nouveau is loaded and holds the GPU: blacklist it in every kernel's initramfs (it goes away at the "
            "reboot); done once the running kernel's initramfs carries the blacklist"};
  step.files.push_back({"/etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\noptions nouveau modeset=0\n"});
  step.commands = {backend.rebuild_initramfs()};
  step.done_if = backend.list_initramfs(kernel);
  step.done_if_stdout = "modprobe.d/blacklist-nouveau.conf";
  step.done_if_match = OutputMatch::has_line;
  step.timeout = std::chrono::seconds(1800);
  return step;
}

std::vector<Step> runtime_steps(const NodeFacts& node) {
  std::vector<Step> out;
  struct Runtime {
    const char* name;
    std::optional<bool> present;
    std::vector<std::string> lists;  ///< what the runtime itself says it has
    const char* nvidia;              ///< how the nvidia runtime shows in it
  };
  const std::vector<Runtime> runtimes = {
      {"docker", node.docker, {"docker", "info", "--format", "{{json .Runtimes}}"}, "\"nvidia\":"},
      {"containerd", node.containerd, {"containerd", "config", "dump"}, ".runtimes.nvidia]"}};
  for (const Runtime& runtime : runtimes) {
    if (!runtime.present.value_or(true)) continue;
    Step step{std::string("install.runtime_configure.") + runtime.name,
              std::string("register the nvidia runtime with ") + runtime.name +
                  " (nvidia-ctk) and restart it; done when the running " + runtime.name + " lists the nvidia runtime" +
                  (runtime.present ? "" : "; only where " + std::string(runtime.name) + " is installed")};
    step.commands = {{"nvidia-ctk", "runtime", "configure", std::string("--runtime=") + runtime.name},
                     {"systemctl", "restart", runtime.name}};
    step.done_if = runtime.lists;
    step.done_if_stdout = runtime.nvidia;
    step.done_if_match = OutputMatch::has_line;
    out.push_back(step);
  }
  return out;
}

void add_stack_steps(const Backend& backend, const PlanContext& context, std::vector<Step>& steps) {
  const profile::Profile& profile = context.profile;
  const PackageNames& names = context.data.packages;
  if (context.plan.driver.source == "distro") {
    steps.push_back(package_step(backend, "install.cuda_toolkit",
                                 "the distribution's CUDA toolkit (its version is the archive's, not the profile's)",
                                 {names.distro_cuda_toolkit}));
  } else {
    const std::string toolkit = context.expand(names.cuda_toolkit);
    steps.push_back(package_step(backend, "install.cuda_toolkit",
                                 "CUDA " + profile.cuda_version + " as " + toolkit +
                                     " (never the `cuda` meta package, which also installs a driver)",
                                 {toolkit}));
  }
  if (!profile.cudnn_version.empty()) {
    const std::string cudnn = context.expand(names.cudnn);
    steps.push_back(package_step(
        backend, "install.cudnn",
        "cuDNN " + profile.cudnn_version + " for CUDA " + util::major_of(profile.cuda_version) + " (" + cudnn + ")",
        {cudnn}));
  }
  if (enabled(profile.install_cuda_compat, false)) {
    const std::string compat = context.expand(names.cuda_compat);
    steps.push_back(package_step(backend, "install.cuda_compat",
                                 "forward compatibility: CUDA " + profile.cuda_version + " on an older driver (" +
                                     compat + ", used through /usr/local/cuda-X.Y/compat)",
                                 {compat}));
  }
  if (enabled(profile.install_dcgm, false)) {
    const std::string dcgm = context.expand(names.dcgm);
    steps.push_back(package_step(backend, "install.dcgm",
                                 "[install] dcgm: NVIDIA DCGM (" + dcgm + ") for health and telemetry", {dcgm}));
  }
}

/// NVLink5 (Blackwell) systems: NVLSM and ib_umad besides the fabric manager (which the driver step installs).
void add_nvlink5_steps(const Backend& backend, const PlanContext& context, std::vector<Step>& steps) {
  if (!context.plan.fabric_manager || !context.node.nvlink5) return;
  const FabricService& service = context.data.fabric_service;
  Step step = package_step(backend, "install.fabric_manager.nvlink5",
                           "an NVLink5 system: fabric manager drives the switches through NVLSM over the InfiniBand "
                           "management devices, which need the ib_umad module at boot",
                           service.nvlink5_packages);
  std::string modules;
  for (const std::string& module : service.nvlink5_modules) modules += module + "\n";
  step.files.push_back({"/etc/modules-load.d/gpuenv-nvlink5.conf", modules});
  steps.push_back(step);
}

/// The services enabled and started by name: fabric manager and DCGM where installed (their units have [Install]).
/// nvidia-persistenced has its own step (persistence_step).
std::vector<std::string> services(const PlanContext& context) {
  std::vector<std::string> out;
  if (context.plan.fabric_manager) out.push_back(context.data.fabric_service.service);
  if (enabled(context.profile.install_dcgm, false)) out.push_back(context.data.packages.dcgm_service);
  return out;
}

/// `systemctl <verb> <units>` done when `systemctl <query> <units>` prints `state` once per unit.
Step service_step(std::string id, std::string why, const std::vector<std::string>& units, const std::string& verb,
                  const std::string& query, const std::string& state) {
  Step step{std::move(id), std::move(why)};
  std::vector<std::string> argv = {"systemctl", verb};
  argv.insert(argv.end(), units.begin(), units.end());
  step.commands = {argv};
  step.done_if = {"systemctl", query};
  step.done_if.insert(step.done_if.end(), units.begin(), units.end());
  std::string expected;
  for (std::size_t i = 0; i < units.size(); ++i) expected += state + "\n";
  step.done_if_stdout = expected;
  return step;
}

/// Persistence mode on every GPU, now and after each boot. `systemctl enable nvidia-persistenced` cannot do it on
/// Ubuntu: Canonical's unit has no [Install] section (enable leaves it `static`), is started by a udev rule
/// (71-nvidia.rules: ENV{SYSTEMD_WANTS}="nvidia-persistenced.service"), has StopWhenUnneeded=true and runs the daemon
/// with --no-persistence-mode (canonical/nvidia-graphics-drivers debian/templates/
/// nvidia-compute-utils-flavour.nvidia-persistenced.service.in @9c04f0b, PR #34). So: a drop-in that keeps the
/// unit up and turns persistence on through the running daemon (nvidia-smi asks it over its RPC interface,
/// NVIDIA/nvidia-persistenced nvpd_rpc_server.c nvPdSetPersistenceMode), a multi-user.target wants link that does
/// not depend on [Install], and done only when nvidia-smi reports every GPU Enabled.
Step persistence_step(const PlanContext& context) {
  const std::string unit = context.data.packages.persistenced_service + ".service";
  Step step{"install.persistence",
            "persistence mode on every GPU (" + unit +
                " keeps the driver initialised between jobs): a drop-in and a multi-user.target wants link, since "
                "Ubuntu's unit is static and runs with --no-persistence-mode; done when nvidia-smi reports Enabled"};
  step.files.push_back({"/etc/systemd/system/" + unit + ".d/gpuenv-persistence.conf",
                        "# Written by gpuenv install (docs/install.md \"Persistence\").\n"
                        "[Unit]\nStopWhenUnneeded=false\n\n"
                        "[Service]\nExecStartPost=-/usr/bin/nvidia-smi --persistence-mode=1\n"});
  step.commands = {{"systemctl", "daemon-reload"},
                   {"systemctl", "add-wants", "multi-user.target", unit},
                   {"systemctl", "restart", unit}};
  step.checks = {{{"systemctl", "show", "--property=WantedBy", "--value", unit},
                  OutputMatch::has_line,
                  "multi-user.target",
                  unit + " is not wanted by multi-user.target: it would not start at the next boot"}};
  step.done_if = {"nvidia-smi", "--query-gpu=persistence_mode", "--format=csv,noheader"};
  step.done_if_stdout = "Enabled";
  step.done_if_match = OutputMatch::lines_prefixed;
  step.remedy = "persistence mode is still off; see `systemctl status " + unit + "` and `journalctl -u " + unit + "`";
  return step;
}

Step reboot_step() {
  Step step{"install.reboot",
            "the loaded kernel module is not the installed one: only a reboot loads it "
            "(runs only when that is so, and only with --reboot)"};
  step.commands = {{"systemctl", "reboot"}};
  step.reboots = true;
  return step;
}

Step verify_step(bool fabric) {
  return Step{"install.verify", std::string("doctor with the profile: the install succeeds only on READY or DEGRADED") +
                                    (fabric ? " (fabric manager running at the driver's version, fabric state "
                                              "Completed: doctor's fabric.manager and fabric.state)"
                                            : "")};
}

/// Every step, in order, once the plan's decisions are made.
std::vector<Step> plan_steps(const Backend& backend, const PlanContext& context, const std::vector<Step>& fixes) {
  const profile::Profile& profile = context.profile;
  const NodeFacts& node = context.node;
  const bool nvidia = context.plan.driver.source == "nvidia";
  std::vector<Step> steps = backend.preflight(context);
  steps.insert(steps.end(), fixes.begin(), fixes.end());
  const bool dkms = nvidia || !signed_modules_available(context);
  if (dkms) steps.push_back(backend.headers(context));
  if (enabled(profile.install_hold_kernel, false)) steps.push_back(backend.hold_kernel(context));
  if (node.nouveau_loaded) steps.push_back(nouveau_step(backend, context));
  if (nvidia) {
    for (Step& step : backend.cuda_repository(context)) steps.push_back(std::move(step));
  }
  for (Step& step : backend.driver(context)) steps.push_back(std::move(step));
  add_nvlink5_steps(backend, context, steps);
  add_stack_steps(backend, context, steps);
  const std::vector<std::string> units = services(context);
  if (!units.empty())
    steps.push_back(service_step("install.services", "enable " + util::join(units, ", ") + " at boot", units, "enable",
                                 "is-enabled", "enabled"));
  if (enabled(profile.install_container_toolkit, true)) {
    steps.push_back(backend.container_toolkit(context));
    for (Step& step : runtime_steps(node)) steps.push_back(std::move(step));
  }
  if (auto unattended = backend.unattended_upgrades(context)) steps.push_back(*unattended);
  steps.push_back(reboot_step());
  steps.push_back(persistence_step(context));
  if (!units.empty())
    steps.push_back(service_step("install.services.start",
                                 "start " + util::join(units, ", ") + " now that the installed module is loaded", units,
                                 "start", "is-active", "active"));
  steps.push_back(verify_step(context.plan.fabric_manager));
  return steps;
}

}  // namespace

std::string PlanContext::expand(const std::string& pattern) const {
  const std::string kernel = node.kernel_release.empty() ? k_unknown_kernel : node.kernel_release;
  std::string out = pattern;
  out = replace_all(out, "{branch}", plan.driver.branch);
  out = replace_all(out, "{cuda_dash}", major_minor_dash(profile.cuda_version));
  out = replace_all(out, "{cuda_major}", util::major_of(profile.cuda_version));
  out = replace_all(out, "{cudnn_major}", util::major_of(profile.cudnn_version));
  out = replace_all(out, "{kernel}", kernel);
  // RHEL's 64k-page aarch64 kernel ("...aarch64+64k") is packaged as kernel-64k-* (targets.toml {kernel_variant}).
  out = replace_all(out, "{kernel_variant}", util::ends_with(kernel, "+64k") ? "kernel-64k" : "kernel");
  // On the node itself a kernel no RPM owns (rpm -qf failed) is taken as the standard "kernel" package.
  const std::string kernel_package = !node.kernel_package.empty()      ? node.kernel_package
                                     : node.observed && !node.captured ? "kernel"
                                                                       : k_unknown_kernel_package;
  out = replace_all(out, "{kernel_package}", kernel_package);
  out = replace_all(out, "{flavour}", flavour.empty() ? k_unknown_flavour : flavour);
  out = replace_all(out, "{repo_dir}", target.repo_dir);
  out = replace_all(out, "{arch}", plan.target.repo_arch);
  out = replace_all(out, "{rpm_arch}", plan.target.repo_arch == "sbsa" ? "aarch64" : plan.target.repo_arch);
  return out;
}

std::vector<std::string> PlanContext::expand(const std::vector<std::string>& patterns) const {
  std::vector<std::string> out;
  for (const std::string& pattern : patterns) out.push_back(expand(pattern));
  return out;
}

std::vector<std::string> PlanContext::future_headers() const {
  std::vector<std::string> out;
  for (const std::string& pattern : target.future_headers) {
    if (node.observed && flavour.empty() && pattern.find("{flavour}") != std::string::npos) continue;
    out.push_back(expand(pattern));
  }
  return out;
}

std::string PlanContext::upstream_repo_url() const {
  return data.repository.cuda_base_url + "/" + target.repo_dir + "/" + plan.target.repo_arch + "/";
}

bool PlanContext::local_cuda_repository() const { return is_local_repository(cuda_base_url); }

void add_profile_mirrors(const profile::Profile& profile, PlanRequest& request) {
  const std::string cuda = compat::cuda_repo_base(profile);
  if (request.cuda_repo_url.empty() && cuda != compat::upstream::cuda_repo) request.cuda_repo_url = cuda;
  const std::string toolkit = compat::container_toolkit_base(profile);
  if (request.toolkit_repo_url.empty() && toolkit != compat::upstream::container_toolkit)
    request.toolkit_repo_url = toolkit;
}

util::Expected<InstallPlan> plan_install(const profile::Profile& profile, const PlanRequest& request,
                                         const InstallData& data, const compat::KnowledgeBase& kb) {
  InstallPlan plan;
  plan.profile = profile.name;
  plan.target = request.target;
  const NodeFacts& node = request.node;
  const TargetRow* target = data.find_target(request.target.distro, request.target.version);
  if (target == nullptr) {
    plan.refusals.push_back(
        refusal("install.os", "gpuenv install does not support " + request.target.distro + " " + request.target.version,
                "use one of: " + data.supported_list()));
    return plan;
  }
  plan.target.manager = target->manager;
  plan.target.repo_dir = target->repo_dir;
  plan.target.repo_arch = repository_arch(request.target.arch);
  if (std::find(target->arches.begin(), target->arches.end(), plan.target.repo_arch) == target->arches.end()) {
    plan.refusals.push_back(
        refusal("install.arch", "NVIDIA's repository has no " + target->repo_dir + "/" + plan.target.repo_arch,
                "this target is supported on: " + util::join(target->arches, ", "), target->source));
    return plan;
  }
  const std::string base = request.cuda_repo_url.empty() ? data.repository.cuda_base_url : request.cuda_repo_url;
  plan.repo_url = base + "/" + target->repo_dir + "/" + plan.target.repo_arch + "/";
  const GpuView gpus = gpu_view(profile, node, data, kb);
  DriverDecision decision = choose_driver(profile, kb, data, *target, gpus);
  plan.driver = decision.choice;
  plan.refusals = decision.refusals;
  plan.notes = decision.notes;
  if (plan.driver.branch.empty()) return plan;
  plan.fabric_manager = node.nvswitches > 0 || node.nvlink5;

  const DriverRow* driver = find_driver_row(data, *target, plan.driver);
  if (driver == nullptr) {
    plan.refusals.push_back(refusal("install.driver.branch",
                                    "no " + plan.driver.modules + " driver packages for branch " + plan.driver.branch +
                                        " from " + plan.driver.source + " on " + target->distro + " (" +
                                        target->manager + ")",
                                    "choose another branch or module flavour (data/install/drivers.toml lists them)"));
  }
  for (Finding& finding : repository_refusals(profile, plan, *target, data)) plan.refusals.push_back(finding);
  const Conflicts conflicts = conflicting_installs(node);
  for (const Finding& finding : conflicts.refusals) plan.refusals.push_back(finding);
  if (driver == nullptr) return plan;

  const std::unique_ptr<Backend> backend = target->manager == "apt" ? make_apt_backend() : make_dnf_backend();
  const std::string toolkit_base =
      request.toolkit_repo_url.empty() ? data.repository.toolkit_base_url : request.toolkit_repo_url;
  const PlanContext context{
      profile, data, *target, *driver, node, plan, base, toolkit_base, kernel_meta_flavour(node, *target)};
  plan.driver.lock = backend->lock_description(context);
  const bool dkms = plan.driver.source == "nvidia" || !signed_modules_available(context);
  for (Finding& finding : profile_refusals(profile, plan, node, dkms)) plan.refusals.push_back(finding);
  if (auto held = held_refusal(plan, context.expand(driver->packages), node)) plan.refusals.push_back(*held);
  if (!plan.refusals.empty()) return plan;

  if (auto change = branch_change(plan, node)) plan.notes.push_back(*change);
  for (Finding& finding : distro_source_notes(profile, plan, *target)) plan.notes.push_back(finding);
  for (const Finding& finding : conflicts.notes) plan.notes.push_back(finding);
  if (node.observed && !node.secure_boot && dkms) {
    plan.notes.push_back(warning("install.secure_boot",
                                 "the Secure Boot state is unknown (EFI variables unreadable): if it is on, the "
                                 "kernel will reject the DKMS-built module",
                                 "check `mokutil --sb-state` before the reboot"));
  }
  if (plan.driver.source == "distro" && !dkms && !node.signed_module_packages) {
    plan.notes.push_back(warning("install.driver.signed_modules",
                                 "whether Ubuntu's archive has signed modules for the running kernel is decided on "
                                 "the node (apt-cache); without them the plan installs the DKMS package instead",
                                 "", driver->source));
  }
  if (node.observed && !node.kernel_release.empty() && context.flavour.empty() && target->manager == "apt" && dkms) {
    plan.notes.push_back(warning("install.headers.future",
                                 "the running kernel's flavour (" + node.kernel_release +
                                     ") has no headers meta package gpuenv knows: DKMS builds for the next kernel "
                                     "need its headers installed with it",
                                 "install the headers meta package of your kernel flavour"));
  }
  if (!target->crb_rhui.empty() && !node.dnf_repositories && plan.driver.source == "nvidia") {
    plan.notes.push_back(warning("install.preflight.crb",
                                 "the plan enables CodeReady Builder with subscription-manager; on a cloud "
                                 "pay-as-you-go RHEL node (Red Hat Update Infrastructure) gpuenv enables the RHUI "
                                 "repository the node defines instead, which only the node shows",
                                 "plan on the node, or for a captured node with --root"));
  }
  if (const KeyRow* key = data.find_key(target->key); key != nullptr && key->fingerprint.empty() &&
                                                      plan.driver.source == "nvidia" &&
                                                      !context.local_cuda_repository()) {
    plan.notes.push_back(warning("install.repo.key_fingerprint",
                                 "no published fingerprint of NVIDIA's key " + key->id +
                                     " is known: it is fetched from NVIDIA's host over https, but not checked",
                                 "", key->source));
  }
  plan.steps = plan_steps(*backend, context, conflicts.fixes);
  return plan;
}

}  // namespace gpuenv::install
