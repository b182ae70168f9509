#include "install/planner.hpp"

#include <algorithm>

#include "compat/derive.hpp"
#include "compat/mirrors.hpp"
#include "install/backend.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::install {
namespace {

using report::Finding;
using report::Status;

constexpr const char* k_unknown_kernel = "<running-kernel>";
constexpr const char* k_unknown_flavour = "<kernel-flavour>";
constexpr int k_open_default_from = 560;  // R560 made the open modules NVIDIA's default
constexpr int k_open_first = 515;         // the first branch with open kernel modules

Finding refusal(std::string id, std::string message, std::string remedy, std::string source = {}) {
  return Finding{std::move(id), Status::fail, std::move(message), std::move(remedy), std::move(source)};
}

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

std::string major_of(const std::string& version) { return version.substr(0, version.find('.')); }

bool pre_turing(const std::string& compute_capability) {
  const auto cc = util::Version::parse(compute_capability);
  return cc && *cc < util::Version({7, 5});
}

/// GPUs that cannot run the open modules: those present on the node, else those the profile names.
std::vector<std::string> pre_turing_gpus(const profile::Profile& profile, const NodeFacts& node) {
  const std::vector<std::string>& ccs =
      node.gpu_compute_capabilities.empty() ? profile.gpu_compute_capabilities : node.gpu_compute_capabilities;
  std::vector<std::string> out;
  std::copy_if(ccs.begin(), ccs.end(), std::back_inserter(out), pre_turing);
  return out;
}

DriverChoice choose_driver(const profile::Profile& profile, const compat::KnowledgeBase& kb, const NodeFacts& node) {
  DriverChoice choice;
  choice.branch = compat::derive(profile, kb).driver_branch;
  choice.source = profile.driver_source.empty() ? "nvidia" : profile.driver_source;
  choice.modules = profile.driver_modules;
  if (choice.modules.empty()) {
    const bool old_branch = !choice.branch.empty() && std::stoi(choice.branch) < k_open_default_from;
    choice.modules = old_branch || !pre_turing_gpus(profile, node).empty() ? "proprietary" : "open";
  }
  return choice;
}

/// Refusals that do not depend on the package rows: each stops the plan before anything changes.
std::vector<Finding> driver_refusals(const profile::Profile& profile, const InstallPlan& plan, const NodeFacts& node) {
  std::vector<Finding> out;
  const DriverChoice& driver = plan.driver;
  if (driver.branch.empty()) {
    out.push_back(refusal("install.driver.branch", "no driver branch: the profile sets none and none can be derived",
                          "set `branch = \"580\"` under [driver]"));
    return out;
  }
  if (driver.source == "distro" && plan.target.distro != "ubuntu") {
    out.push_back(refusal("install.driver.source",
                          "driver.source = \"distro\" is supported on Ubuntu only (its archive carries branch "
                          "packages and Canonical-signed modules); the target is " +
                              plan.target.label(),
                          "remove `source` from [driver] to install from NVIDIA's CUDA repository"));
  }
  if (driver.modules == "open") {
    const std::vector<std::string> old = pre_turing_gpus(profile, node);
    if (!old.empty()) {
      out.push_back(refusal("install.driver.modules",
                            "open kernel modules do not support GPUs older than Turing (compute capability " +
                                util::join(old, ", ") + " present)",
                            "set `modules = \"proprietary\"` under [driver] (R580 is the last branch for "
                            "Maxwell, Pascal and Volta)",
                            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/ (kernel modules)"));
    }
    if (std::stoi(driver.branch) < k_open_first) {
      out.push_back(refusal("install.driver.modules", "branch " + driver.branch + " has no open kernel modules",
                            "use branch 515 or newer, or `modules = \"proprietary\"`"));
    }
  }
  if (node.secure_boot.value_or(false) && driver.source == "nvidia") {
    out.push_back(refusal(
        "install.secure_boot",
        "Secure Boot is on and NVIDIA's repository builds the module with DKMS: the kernel would reject the unsigned "
        "module, and enrolling a key (MOK) needs the firmware console",
        "on Ubuntu set `source = \"distro\"` under [driver] (Canonical-signed linux-modules-nvidia-*); or sign with "
        "a key already enrolled in the UEFI db; or turn Secure Boot off; then re-run",
        "canonical/ubuntu-drivers-common UbuntuDrivers/kerneldetection.py; "
        "GoogleCloudPlatform/compute-gpu-installation"));
  }
  if (!profile.cudnn_version.empty() && std::stoi(major_of(profile.cudnn_version)) < 9) {
    out.push_back(
        refusal("install.cudnn",
                "cuDNN " + profile.cudnn_version + ": gpuenv installs cuDNN 9 and newer (cudnnN-cuda-M packages)",
                "use cudnn.version = \"9\", or install cuDNN 8 yourself and remove [cudnn]"));
  }
  if (!profile.cudnn_version.empty() && driver.source == "distro") {
    out.push_back(refusal("install.cudnn", "the Ubuntu archive has no cuDNN " + profile.cudnn_version + " package",
                          "remove [cudnn], or install from NVIDIA's repository (remove `source` from [driver])"));
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
  const std::string loaded = major_of(node.loaded_driver_version);
  if (loaded.empty() || loaded == plan.driver.branch) return std::nullopt;
  return Finding{"install.driver.branch_change", Status::warn,
                 "the loaded driver is " + node.loaded_driver_version + " (branch " + loaded +
                     "); the plan installs branch " + plan.driver.branch + ", which needs a reboot",
                 "", ""};
}

const DriverRow* find_driver_row(const InstallData& data, const std::string& manager, const DriverChoice& driver) {
  const int branch = std::stoi(driver.branch);
  for (const DriverRow& row : data.drivers) {
    if (row.manager == manager && row.origin == driver.source && row.modules == driver.modules &&
        branch >= row.first_branch && branch <= row.last_branch)
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

Step headers_step(const Backend& backend, const PlanContext& context) {
  return package_step(backend, "install.preflight.headers",
                      "DKMS builds the module against the headers of the running kernel (" +
                          context.expand(std::string("{kernel}")) + "); the newest headers may not match it",
                      context.expand(context.target.headers), std::chrono::seconds(900));
}

Step nouveau_step(const Backend& backend) {
  Step step{"install.nouveau",
            "nouveau is loaded and holds the GPU: blacklist it and rebuild the initramfs "
            "(it goes away at the reboot)"};
  step.files.push_back({"/etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\noptions nouveau modeset=0\n"});
  step.commands = {backend.rebuild_initramfs()};
  step.done_if = {"test", "-f", "/etc/modprobe.d/blacklist-nouveau.conf"};
  return step;
}

std::vector<Step> runtime_steps(const NodeFacts& node) {
  std::vector<Step> out;
  struct Runtime {
    const char* name;
    std::optional<bool> present;
    const char* config;
  };
  for (const Runtime& runtime : {Runtime{"docker", node.docker, "/etc/docker/daemon.json"},
                                 Runtime{"containerd", node.containerd, "/etc/containerd"}}) {
    if (!runtime.present.value_or(true)) continue;
    Step step{std::string("install.runtime_configure.") + runtime.name,
              std::string("register the nvidia runtime with ") + runtime.name +
                  " (nvidia-ctk), restarting it only when its configuration changes" +
                  (runtime.present ? "" : "; only where " + std::string(runtime.name) + " is installed")};
    step.commands = {{"nvidia-ctk", "runtime", "configure", std::string("--runtime=") + runtime.name},
                     {"systemctl", "restart", runtime.name}};
    step.done_if = {"grep", "-rqs", "nvidia", runtime.config};
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
        "cuDNN " + profile.cudnn_version + " for CUDA " + major_of(profile.cuda_version) + " (" + cudnn + ")",
        {cudnn}));
  }
  if (enabled(profile.install_cuda_compat, false)) {
    const std::string compat = context.expand(names.cuda_compat);
    steps.push_back(package_step(backend, "install.cuda_compat",
                                 "forward compatibility: CUDA " + profile.cuda_version + " on an older driver (" +
                                     compat + ", used through /usr/local/cuda-X.Y/compat)",
                                 {compat}));
  }
}

Step reboot_step() {
  Step step{"install.reboot",
            "the loaded kernel module is not the installed one: only a reboot loads it "
            "(runs only when that is so, and only with --reboot)"};
  step.commands = {{"systemctl", "reboot"}};
  step.reboots = true;
  return step;
}

Step verify_step() {
  return Step{"install.verify", "doctor with the profile: the install succeeds only on READY or DEGRADED"};
}

}  // namespace

std::string kernel_flavour(const std::string& kernel_release) {
  const std::size_t dash = kernel_release.rfind('-');
  if (dash == std::string::npos) return "";
  const std::string tail = kernel_release.substr(dash + 1);
  const bool alphabetic =
      !tail.empty() && std::all_of(tail.begin(), tail.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '+'; });
  return alphabetic ? tail : "";
}

std::string PlanContext::expand(const std::string& pattern) const {
  const std::string kernel = node.kernel_release.empty() ? k_unknown_kernel : node.kernel_release;
  const std::string flavour = node.kernel_release.empty() ? k_unknown_flavour : kernel_flavour(node.kernel_release);
  std::string out = pattern;
  out = replace_all(out, "{branch}", plan.driver.branch);
  out = replace_all(out, "{cuda_dash}", major_minor_dash(profile.cuda_version));
  out = replace_all(out, "{cuda_major}", major_of(profile.cuda_version));
  out = replace_all(out, "{cudnn_major}", major_of(profile.cudnn_version));
  out = replace_all(out, "{kernel}", kernel);
  out = replace_all(out, "{flavour}", flavour.empty() ? "generic" : flavour);
  out = replace_all(out, "{repo_dir}", target.repo_dir);
  out = replace_all(out, "{arch}", plan.target.repo_arch);
  out = replace_all(out, "{base}", cuda_base_url);
  return out;
}

std::vector<std::string> PlanContext::expand(const std::vector<std::string>& patterns) const {
  std::vector<std::string> out;
  for (const std::string& pattern : patterns) out.push_back(expand(pattern));
  return out;
}

void add_profile_mirrors(const profile::Profile& profile, PlanRequest& request) {
  const std::string cuda = compat::cuda_repo_base(profile);
  if (request.cuda_repo_url.empty() && cuda != compat::upstream::cuda_repo) request.cuda_repo_url = cuda;
  const std::string toolkit = compat::container_toolkit_base(profile);
  if (request.toolkit_repo_url.empty() && toolkit != compat::upstream::container_toolkit)
    request.toolkit_repo_url = toolkit;
}

std::string repository_arch(const std::string& arch) { return arch == "arm64" || arch == "aarch64" ? "sbsa" : arch; }

util::Expected<InstallPlan> plan_install(const profile::Profile& profile, const PlanRequest& request,
                                         const InstallData& data, const compat::KnowledgeBase& kb) {
  InstallPlan plan;
  plan.profile = profile.name;
  plan.target = request.target;
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
  plan.driver = choose_driver(profile, kb, request.node);
  plan.refusals = driver_refusals(profile, plan, request.node);
  if (!plan.refusals.empty()) return plan;
  const DriverRow* driver = find_driver_row(data, target->manager, plan.driver);
  if (driver == nullptr) {
    plan.refusals.push_back(refusal("install.driver.branch",
                                    "no " + plan.driver.modules + " driver packages for branch " + plan.driver.branch +
                                        " from " + plan.driver.source + " on " + target->manager,
                                    "choose another branch or module flavour (data/install/targets.toml lists them)"));
    return plan;
  }

  const std::unique_ptr<Backend> backend = target->manager == "apt" ? make_apt_backend() : make_dnf_backend();
  const std::string toolkit_base =
      request.toolkit_repo_url.empty() ? data.repository.toolkit_base_url : request.toolkit_repo_url;
  const PlanContext context{profile, data, *target, *driver, request.node, plan, base, toolkit_base};
  plan.driver.lock = backend->lock_description(context);
  if (auto held = held_refusal(plan, context.expand(driver->packages), request.node)) {
    plan.refusals.push_back(*held);
    return plan;
  }

  if (auto change = branch_change(plan, request.node)) plan.notes.push_back(*change);
  if (request.node.observed && !request.node.secure_boot && plan.driver.source == "nvidia") {
    plan.notes.push_back(Finding{"install.secure_boot", Status::warn,
                                 "the Secure Boot state is unknown (EFI variables unreadable): if it is on, the "
                                 "kernel will reject the DKMS-built module",
                                 "check `mokutil --sb-state` before the reboot", ""});
  }
  std::vector<Step> steps = backend->preflight(context);
  if (plan.driver.source == "nvidia") steps.push_back(headers_step(*backend, context));
  if (request.node.nouveau_loaded) steps.push_back(nouveau_step(*backend));
  if (plan.driver.source == "nvidia") {
    for (Step& step : backend->cuda_repository(context)) steps.push_back(std::move(step));
  }
  steps.push_back(backend->driver(context));
  add_stack_steps(*backend, context, steps);
  if (enabled(profile.install_container_toolkit, true)) {
    steps.push_back(backend->container_toolkit(context));
    for (Step& step : runtime_steps(request.node)) steps.push_back(std::move(step));
  }
  if (auto unattended = backend->unattended_upgrades(context)) steps.push_back(*unattended);
  steps.push_back(reboot_step());
  steps.push_back(verify_step());
  plan.steps = std::move(steps);
  return plan;
}

}  // namespace gpuenv::install
