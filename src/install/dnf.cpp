// The dnf backend: Rocky Linux / RHEL 8, 9, 10 and Amazon Linux 2023. Sources: data/install/targets.toml rows.

#include "install/backend.hpp"

namespace gpuenv::install {
namespace {

std::string repo_file(const PlanContext& context) {
  return "/etc/yum.repos.d/cuda-" + context.target.repo_dir + ".repo";
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

  std::vector<std::string> similar_packages(const std::string& package) const override {
    return {"dnf", "-q", "repoquery", "--qf", "%{name}", package_stem(package) + "*"};
  }

  std::vector<Step> preflight(const PlanContext& context) const override {
    if (context.target.prerequisites.empty()) return {};
    Step step{"install.preflight.prerequisites",
              "the driver's DKMS build needs packages from EPEL on this distribution (dkms)"};
    step.commands = {install(context.target.prerequisites)};
    return {installed_probe(step, context.target.prerequisites)};
  }

  std::vector<Step> cuda_repository(const PlanContext& context) const override {
    const std::string& url = context.plan.repo_url;
    Step step{"install.repo.cuda", "NVIDIA's CUDA repository (" + url + "), its packages signed with " +
                                       context.data.repository.rpm_key_file};
    const bool local = is_local_repository(url);
    step.files.push_back(
        {repo_file(context), "[cuda-" + context.target.repo_dir + "-" + context.plan.target.repo_arch + "]\n" +
                                 "name=cuda-" + context.target.repo_dir + "-" + context.plan.target.repo_arch + "\n" +
                                 "baseurl=" + url + "\nenabled=1\n" +
                                 (local ? std::string("gpgcheck=0\n")
                                        : "gpgcheck=1\ngpgkey=" + url + context.data.repository.rpm_key_file + "\n")});
    step.commands = {{"dnf", "-y", "makecache"}};
    step.changes_node = false;  // the file is written only when it differs; refreshing metadata changes nothing
    return {step};
  }

  Step driver(const PlanContext& context) const override {
    const std::string& branch = context.plan.driver.branch;
    Step step{"install.driver", "driver branch " + branch + " (" + context.plan.driver.modules +
                                    " modules from NVIDIA's repository), kept on the branch by " +
                                    lock_description(context)};
    step.timeout = std::chrono::seconds(1800);
    const std::vector<std::string> packages = context.expand(context.driver.packages);
    if (context.target.driver_lock == "module-stream") {
      step.commands.push_back(
          {"dnf", "-y", "module", "enable", "nvidia-driver:" + context.expand(context.driver.stream)});
    } else {
      step.commands.push_back(install({"python3-dnf-plugin-versionlock"}));
      step.commands.push_back({"dnf", "versionlock", "add", "*nvidia*" + branch + "*"});
    }
    step.commands.push_back(install(packages));
    step.explain_failure = similar_packages(packages.front());
    return installed_probe(step, packages);
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

  std::vector<std::string> rebuild_initramfs() const override { return {"dracut", "-f"}; }

  std::string lock_description(const PlanContext& context) const override {
    if (context.target.driver_lock == "module-stream")
      return "dnf module nvidia-driver:" + context.expand(context.driver.stream);
    return "dnf versionlock *nvidia*" + context.plan.driver.branch + "*";
  }
};

}  // namespace

std::unique_ptr<Backend> make_dnf_backend() { return std::make_unique<DnfBackend>(); }

}  // namespace gpuenv::install
