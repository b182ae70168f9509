// The dnf backend: Rocky Linux / RHEL 8, 9, 10 and Amazon Linux 2023. Sources: data/install/*.toml rows;
// NVIDIA/cuda-repo-management genmodules.py for the module streams and their profiles; the driver installation
// guide's advanced-options.html (`dnf module switch-to nvidia-driver:<stream> --allowerasing`) and
// version-locking.html (`dnf versionlock '*nvidia*<branch>*'`, python3-dnf-plugin-versionlock).

#include <fnmatch.h>

#include <algorithm>

#include "install/backend.hpp"
#include "install/choice.hpp"
#include "util/strings.hpp"

namespace gpuenv::install {
namespace {

constexpr const char* k_versionlock_plugin = "python3-dnf-plugin-versionlock";

std::string repo_file(const PlanContext& context) {
  return "/etc/yum.repos.d/cuda-" + context.target.repo_dir + ".repo";
}

std::string key_path(const KeyRow& key) { return "/etc/pki/rpm-gpg/RPM-GPG-KEY-NVIDIA-CUDA-" + key.id; }

bool module_streams(const PlanContext& context) { return context.target.driver_lock == "module-stream"; }

/// How CodeReady Builder is enabled on the node, and its repository id.
struct CrbRepository {
  std::vector<std::string> enable;
  std::string id;
  bool rhui = false;
};

/// A repository id that can only be read as one by dnf: letters, digits, '.', '_', ':', '-', not starting with '-'
/// (never an option, whatever a .repo file's section says).
bool plain_repository_id(const std::string& id) {
  if (id.empty() || id.front() == '-') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == ':' || c == '-';
  });
}

/// A cloud pay-as-you-go RHEL node gets its repositories from RHUI and is not registered, so
/// `subscription-manager repos --enable` fails there: the RHUI CodeReady Builder repository the node defines is
/// enabled with `dnf config-manager` instead (targets.toml crb_rhui). Elsewhere, the target's own command.
CrbRepository crb_repository(const PlanContext& context) {
  if (!context.target.crb_rhui.empty() && context.node.dnf_repositories) {
    const std::string glob = context.expand(context.target.crb_rhui);
    for (const std::string& id : *context.node.dnf_repositories) {
      if (plain_repository_id(id) && fnmatch(glob.c_str(), id.c_str(), 0) == 0)
        return {{"dnf", "config-manager", "--set-enabled", id}, id, true};
    }
  }
  return {context.expand(context.target.crb), context.expand(context.target.crb_repo), false};
}

class DnfBackend : public Backend {
 public:
  std::vector<std::string> install(const std::vector<std::string>& packages) const override {
    std::vector<std::string> argv = {"dnf", "-y", "install"};
    argv.insert(argv.end(), packages.begin(), packages.end());
    return argv;
  }

  Step installed_probe(Step step, const std::vector<std::string>& packages) const override {
    step.done_if = {"rpm", "-q"};
    step.done_if.insert(step.done_if.end(), packages.begin(), packages.end());
    return step;
  }

  Step branch_probe(Step step, const std::vector<std::string>& packages, const std::string& branch) const override {
    // rpm -q exits 1 naming a package that is not installed; every installed one prints its version.
    step.done_if = {"rpm", "-q", "--qf", "%{VERSION}\\n"};
    step.done_if.insert(step.done_if.end(), packages.begin(), packages.end());
    step.done_if_stdout = branch + ".";
    step.done_if_match = OutputMatch::lines_prefixed;
    return step;
  }

  std::vector<std::string> similar_packages(const std::string& package) const override {
    return {"dnf", "-q", "repoquery", "--qf", "%{name}", package_stem(package) + "*"};
  }

  std::vector<Step> preflight(const PlanContext& context) const override {
    std::vector<Step> out;
    if (context.plan.driver.source != "nvidia") return out;
    if (!context.target.crb.empty()) {
      const CrbRepository crb = crb_repository(context);
      const std::string& repo = crb.id;
      Step step{"install.preflight.crb",
                "EPEL's packages (dkms among them) need the CodeReady Builder repository (" + repo +
                    (crb.rhui ? ", served by the cloud's Red Hat Update Infrastructure" : "") + ")"};
      step.commands = {crb.enable};
      step.done_if = {"dnf", "-q", "repolist", "--enabled", repo};
      step.done_if_stdout = repo;
      step.done_if_match = OutputMatch::has_line;
      out.push_back(step);
    }
    if (!context.target.epel.empty()) {
      Step step{"install.preflight.epel", "the driver's DKMS build needs dkms, which comes from EPEL"};
      step.commands = {context.expand(context.target.epel)};
      out.push_back(installed_probe(step, {"epel-release"}));
    }
    return out;
  }

  Step headers(const PlanContext& context) const override {
    const std::vector<std::string> packages =
        util::append_missing(context.expand(context.target.headers), context.future_headers());
    Step step{"install.preflight.headers",
              "DKMS builds the module against the running kernel's headers (" +
                  context.expand(std::string("{kernel}")) +
                  "), and against each later kernel's: these packages follow kernel updates"};
    step.commands = {install(packages)};
    step.explain_failure = similar_packages(packages.front());
    step.timeout = std::chrono::seconds(900);
    return installed_probe(step, packages);
  }

  Step hold_kernel(const PlanContext&) const override {
    Step step{"install.hold_kernel",
              "[install] hold_kernel: the kernel stays where the driver was built (unhold: `dnf versionlock delete "
              "'kernel*'`)"};
    step.commands = {install({k_versionlock_plugin}), {"dnf", "versionlock", "add", "kernel*"}};
    step.done_if = {"dnf", "-q", "versionlock", "list"};
    step.done_if_stdout = "kernel";
    step.done_if_match = OutputMatch::has_line;
    return step;
  }

  std::vector<Step> cuda_repository(const PlanContext& context) const override {
    const std::string& url = context.plan.repo_url;
    const KeyRow* key = context.data.find_key(context.target.key);
    std::vector<Step> out;
    const bool local = context.local_cuda_repository();
    if (!local) out.push_back(key_step(context, *key));
    Step step{"install.repo.cuda", "NVIDIA's CUDA repository (" + url + "), its packages signed with " + key->id +
                                       (local ? " (a local directory: trusted as it is)" : "")};
    step.files.push_back(
        {repo_file(context),
         "[cuda-" + context.target.repo_dir + "-" + context.plan.target.repo_arch + "]\n" + "name=cuda-" +
             context.target.repo_dir + "-" + context.plan.target.repo_arch + "\n" + "baseurl=" + url + "\nenabled=1\n" +
             (local ? std::string("gpgcheck=0\n") : "gpgcheck=1\ngpgkey=file://" + key_path(*key) + "\n")});
    step.commands = {{"dnf", "-y", "makecache"}};
    step.changes_node = false;  // the file is written only when it differs; refreshing metadata changes nothing
    out.push_back(step);
    return out;
  }

  std::vector<Step> driver(const PlanContext& context) const override {
    const std::string& branch = context.plan.driver.branch;
    const DriverRow& row = context.driver;
    const std::string stream = context.expand(row.stream);
    const bool compute_only =
        branch_number(branch) >= context.data.limits.compute_only_from && !row.compute_only.empty();
    std::vector<std::string> packages = context.expand(compute_only ? row.compute_only : row.packages);
    std::vector<std::string> probed = context.expand(row.verify);
    const FabricRow* fabric = fabric_row(context.data, "dnf", row.origin, branch);
    if (context.plan.fabric_manager && fabric != nullptr) {
      packages = util::append_missing(packages, context.expand(fabric->packages));
      probed = util::append_missing(probed, context.expand(fabric->packages));
    }
    Step step{"install.driver", "driver branch " + branch + " (" + context.plan.driver.modules +
                                    (compute_only ? " modules, compute-only packages" : " modules") +
                                    " from NVIDIA's repository), kept on the branch by " + lock_description(context)};
    step.timeout = std::chrono::seconds(1800);
    if (module_streams(context)) {
      // switch-to both enables a stream on a fresh node and moves an installed one to the new stream.
      const std::string profile = context.plan.fabric_manager ? "/fm" : "";
      step.commands.push_back(
          {"dnf", "-y", "module", "switch-to", "--allowerasing", "nvidia-driver:" + stream + profile});
      step.commands.push_back(install(packages));
    } else {
      // EL10 has no module streams: the versionlock is replaced by the branch's before installing, and each package
      // is named with the branch's version. A bare `dnf install nvidia-driver-cuda` on a node of another branch is
      // "already installed" and exits 0 without moving it (with best=False; with best=True, RHEL's dnf.conf, it
      // moves up but never down): with the real dnf 4.14 a node at 590 stayed at 590 under 580's lock, while
      // `nvidia-driver-cuda-580.*` moved it down, `-590.*` up, and a converged node saw no transaction
      // (tests/install_integration el10_versionlock).
      step.commands.push_back(install({k_versionlock_plugin}));
      step.commands.push_back({"dnf", "versionlock", "delete", "*nvidia*"});
      step.commands.push_back({"dnf", "versionlock", "add", "*nvidia*" + branch + "*"});
      std::vector<std::string> versioned;
      for (const std::string& package : packages) versioned.push_back(package + "-" + branch + ".*");
      std::vector<std::string> argv = install(versioned);
      argv.insert(argv.begin() + 2, "--allowerasing");
      step.commands.push_back(argv);
    }
    step.explain_failure = similar_packages(packages.front());
    return {branch_probe(step, probed, branch)};
  }

  Step container_toolkit(const PlanContext& context) const override {
    const std::string& url = context.toolkit_base_url;
    Step step{"install.container_toolkit",
              "the NVIDIA Container Toolkit from its repository (" + url + "), so containers get the GPUs"};
    // Written here, not downloaded: NVIDIA's .repo file names its own host, which a mirror must replace.
    const Repository& repository = context.data.repository;
    const bool local = is_local_repository(url);
    step.files.push_back(
        {"/etc/yum.repos.d/nvidia-container-toolkit.repo",
         "[nvidia-container-toolkit]\nname=nvidia-container-toolkit\nbaseurl=" + url + repository.toolkit_rpm_path +
             "\nenabled=1\ngpgcheck=0\n" +
             (local ? std::string("repo_gpgcheck=0\n")
                    : "repo_gpgcheck=1\ngpgkey=" + repository.toolkit_base_url + repository.toolkit_key_path + "\n")});
    step.commands.push_back(install({context.data.packages.container_toolkit}));
    return installed_probe(step, {context.data.packages.container_toolkit});
  }

  std::optional<Step> unattended_upgrades(const PlanContext&) const override {
    return std::nullopt;  // the module stream or the versionlock already keeps dnf-automatic on the branch
  }

  std::vector<std::string> rebuild_initramfs() const override { return {"dracut", "-f", "--regenerate-all"}; }

  std::vector<std::string> list_initramfs(const std::string& kernel) const override {
    return {"lsinitrd", "/boot/initramfs-" + kernel + ".img"};
  }

  std::string lock_description(const PlanContext& context) const override {
    if (module_streams(context)) return "dnf module nvidia-driver:" + context.expand(context.driver.stream);
    return "dnf versionlock *nvidia*" + context.plan.driver.branch + "*";
  }

 private:
  /// The repository key, from NVIDIA's own host over https only; the key with the pinned fingerprint is kept.
  static Step key_step(const PlanContext& context, const KeyRow& key) {
    const std::string dest = key_path(key);
    const std::string url = context.upstream_repo_url() + key.file;
    if (key.fingerprint.empty()) {
      // No published fingerprint known (data/install/keys.toml): NVIDIA's host over https is all that is checked.
      Step step{"install.repo.cuda_key", "NVIDIA's repository key " + key.id +
                                             " from NVIDIA's own host over https only (no published fingerprint is "
                                             "known to check it against)"};
      step.commands = {https_download(url, dest)};
      step.done_if = {"test", "-s", dest};
      return step;
    }
    const std::string downloaded = "/var/cache/gpuenv/keys/" + key.file;
    const PinnedKey pinned = pin_key(downloaded, key.fingerprint, dest, true);
    Step step{"install.repo.cuda_key", "NVIDIA's repository key " + key.id +
                                           " from NVIDIA's own host over https only (never a mirror); only the key "
                                           "with fingerprint " +
                                           key.fingerprint + " is kept (data/install/keys.toml)"};
    step.commands = {https_download(url, downloaded)};
    step.commands.insert(step.commands.end(), pinned.commands.begin(), pinned.commands.end());
    step.checks = {pinned.check};
    step.done_if = pinned.check.argv;
    step.done_if_stdout = pinned.check.text;
    step.done_if_match = pinned.check.match;
    return step;
  }
};

}  // namespace

std::unique_ptr<Backend> make_dnf_backend() { return std::make_unique<DnfBackend>(); }

}  // namespace gpuenv::install
