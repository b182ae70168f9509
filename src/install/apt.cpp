// The apt backend: Ubuntu and Debian. Sources: data/install/targets.toml rows and docs/install.md.

#include <cctype>

#include "install/backend.hpp"

namespace gpuenv::install {
namespace {

constexpr const char* k_lock_timeout = "DPkg::Lock::Timeout=600";
constexpr const char* k_toolkit_key = "/usr/share/keyrings/nvidia-container-toolkit-keyring.asc";
constexpr const char* k_toolkit_list = "/etc/apt/sources.list.d/nvidia-container-toolkit.list";
constexpr const char* k_unattended = "/etc/apt/apt.conf.d/51gpuenv-unattended-upgrades";

std::vector<std::string> apt_get(std::vector<std::string> arguments) {
  std::vector<std::string> argv = {"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", k_lock_timeout};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return argv;
}

std::string host_of(const std::string& url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  const std::size_t start = scheme + 3;
  return url.substr(start, url.find('/', start) - start);
}

/// "deb [signed-by=KEY] URL /", or [trusted=yes] for a local file: repository.
std::string deb_line(const std::string& url, const std::string& key) {
  const std::string option = is_local_repository(url) ? "trusted=yes" : "signed-by=" + key;
  return "deb [" + option + "] " + url + " /\n";
}

class AptBackend : public Backend {
 public:
  std::vector<std::string> install(const std::vector<std::string>& packages) const override {
    std::vector<std::string> arguments = {"install", "-y"};
    arguments.insert(arguments.end(), packages.begin(), packages.end());
    return apt_get(arguments);
  }

  Step installed_probe(Step step, const std::vector<std::string>& packages) const override {
    // db:Status-Status, not Status: a held package reads "hold ok installed".
    step.done_if = {"dpkg-query", "-W", "-f=${db:Status-Status}\\n"};
    step.done_if.insert(step.done_if.end(), packages.begin(), packages.end());
    std::string expected;
    for (std::size_t i = 0; i < packages.size(); ++i) expected += "installed\n";
    step.done_if_stdout = expected;
    return step;
  }

  std::vector<std::string> similar_packages(const std::string& package) const override {
    return {"apt-cache", "pkgnames", package_stem(package)};
  }

  std::vector<Step> preflight(const PlanContext&) const override {
    Step lock{"install.preflight.lock",
              "first boot runs unattended-upgrades: wait (at most 600 s) for the dpkg lock instead of failing"};
    lock.commands = {apt_get({"check"})};
    lock.timeout = std::chrono::seconds(660);
    lock.changes_node = false;
    Step dpkg{"install.preflight.dpkg",
              "an interrupted dpkg (dpkg --audit reports packages) must be finished before installing anything"};
    dpkg.commands = {{"dpkg", "--configure", "-a"}};
    dpkg.done_if = {"dpkg", "--audit"};
    dpkg.done_if_stdout = "";
    // A package whose own maintainer script fails stays half-configured until a fixed version replaces it: the
    // step that installs that package does so, so a failure here is logged and the run goes on.
    dpkg.failure_stops = false;
    dpkg.timeout = std::chrono::seconds(1800);
    return {lock, dpkg};
  }

  std::vector<Step> cuda_repository(const PlanContext& context) const override {
    const std::string& url = context.plan.repo_url;
    const Repository& repository = context.data.repository;
    Step keyring{"install.repo.cuda_keyring",
                 "NVIDIA's keyring package " + repository.apt_keyring_file +
                     " (the repository's key and its apt source), fetched to a file and installed with dpkg"};
    const std::string file = "/var/cache/gpuenv/" + repository.apt_keyring_file;
    keyring.commands = {{"curl", "-fsSL", "--create-dirs", "-o", file, url + repository.apt_keyring_file},
                        {"dpkg", "-i", file}};  // right after install.preflight.lock has waited for the lock
    Step source{"install.repo.cuda", "NVIDIA's CUDA repository (" + url +
                                         ") with a pin so it wins over the archive; the package lists refreshed"};
    if (context.cuda_base_url != repository.cuda_base_url) {
      // A mirror or a local repository replaces the source the keyring package wrote (same file).
      source.files.push_back(
          {"/etc/apt/sources.list.d/cuda-" + context.target.repo_dir + "-" + context.plan.target.repo_arch + ".list",
           deb_line(url, repository.apt_keyring_path)});
    }
    source.files.push_back({"/etc/apt/preferences.d/gpuenv-cuda-repository-pin-600",
                            "Package: *\nPin: origin \"" + host_of(context.cuda_base_url) + "\"\nPin-Priority: 600\n"});
    source.commands = {apt_get({"update"})};
    source.changes_node = false;  // files are written only when they differ; refreshing the lists changes nothing
    return {installed_probe(keyring, {"cuda-keyring"}), source};
  }

  Step driver(const PlanContext& context) const override {
    const std::string& branch = context.plan.driver.branch;
    Step step{"install.driver", "driver branch " + branch + " (" + context.plan.driver.modules + " modules, from " +
                                    (context.driver.origin == "distro" ? "the Ubuntu archive" : "NVIDIA's repository") +
                                    "), kept on the branch by " + lock_description(context)};
    step.timeout = std::chrono::seconds(1800);
    const std::vector<std::string> packages = context.expand(context.driver.packages);
    std::vector<std::string> probed = packages;
    if (context.driver.lock == "pinning-package") {
      const std::string pinning = "nvidia-driver-pinning-" + branch;
      step.commands.push_back(install({pinning}));  // before the driver, as NVIDIA's guide requires
      probed.insert(probed.begin(), pinning);
    }
    step.commands.push_back(install(packages));
    step.explain_failure = similar_packages(packages.front());
    if (context.driver.lock == "hold") {
      std::vector<std::string> hold = {"apt-mark", "hold"};
      hold.insert(hold.end(), packages.begin(), packages.end());
      step.commands.push_back(hold);
    }
    return installed_probe(step, probed);
  }

  Step container_toolkit(const PlanContext& context) const override {
    const std::string& url = context.toolkit_base_url;
    const std::string repo = url + context.data.repository.toolkit_deb_path;
    Step step{"install.container_toolkit",
              "the NVIDIA Container Toolkit from its repository (" + url + "), so containers get the GPUs"};
    step.files.push_back({k_toolkit_list, deb_line(repo, k_toolkit_key)});
    if (!is_local_repository(url)) {
      const Repository& repository = context.data.repository;  // the key stays upstream's with a mirror
      step.commands.push_back({"curl", "-fsSL", "--create-dirs", "-o", k_toolkit_key,
                               repository.toolkit_base_url + repository.toolkit_key_path});
    }
    step.commands.push_back(apt_get({"update"}));
    step.commands.push_back(install({context.data.packages.container_toolkit}));
    return installed_probe(step, {context.data.packages.container_toolkit});
  }

  std::optional<Step> unattended_upgrades(const PlanContext&) const override {
    Step step{"install.unattended_upgrades",
              "unattended-upgrades must not replace the user-space driver under the running module "
              "(\"Driver/library version mismatch\")"};
    step.files.push_back({k_unattended,
                          "// Written by gpuenv install: unattended-upgrades leaves the NVIDIA driver and CUDA alone.\n"
                          "Unattended-Upgrade::Package-Blacklist {\n"
                          "    \"nvidia-.*\";\n    \"libnvidia-.*\";\n    \"cuda-.*\";\n    \"libcudnn.*\";\n"
                          "    \"cudnn.*\";\n    \"linux-modules-nvidia-.*\";\n};\n"});
    step.done_if = {"test", "-f", k_unattended};
    return step;
  }

  std::vector<std::string> rebuild_initramfs() const override { return {"update-initramfs", "-u"}; }

  std::string lock_description(const PlanContext& context) const override {
    if (context.driver.lock == "pinning-package") return "nvidia-driver-pinning-" + context.plan.driver.branch;
    return "apt-mark hold";
  }
};

}  // namespace

bool is_local_repository(const std::string& url) { return url.rfind("file:", 0) == 0; }

std::string package_stem(const std::string& package) {
  for (std::size_t dash = package.find('-'); dash != std::string::npos; dash = package.find('-', dash + 1)) {
    if (dash + 1 < package.size() && std::isdigit(static_cast<unsigned char>(package[dash + 1])))
      return package.substr(0, dash + 1);
  }
  return package;
}

std::unique_ptr<Backend> make_apt_backend() { return std::make_unique<AptBackend>(); }

}  // namespace gpuenv::install
