// The apt backend: Ubuntu and Debian. Sources: data/install/*.toml rows and docs/install.md; the repository and its
// keys are in apt_repository.cpp.

#include "install/apt.hpp"

#include "util/strings.hpp"

namespace gpuenv::install {
namespace {

constexpr const char* k_toolkit_key = "/usr/share/keyrings/nvidia-container-toolkit-keyring.asc";
constexpr const char* k_toolkit_list = "/etc/apt/sources.list.d/nvidia-container-toolkit.list";
constexpr const char* k_unattended = "/etc/apt/apt.conf.d/51gpuenv-unattended-upgrades";
constexpr const char* k_branch_pin = "/etc/apt/preferences.d/gpuenv-nvidia-driver-branch";

/// The preferences file that keeps every NVIDIA driver package on `branch`: apt_preferences(5) gives versions
/// matching a pin of priority >= 1000 precedence even over a newer version (and allows the downgrade of a branch
/// change), so the unsuffixed packages the meta packages depend on with `>=` stay on the branch.
/// Installing from NVIDIA's repository, the distribution archive's copies of the same names (Ubuntu's
/// nvidia-dkms-580-open 580.x-0ubuntu1 also matches "580.*") come first at priority 100: "If any specific-form records
/// match an available package version then the first such record determines the priority of the package version"
/// (apt_preferences(5), apt 2.6 doc/apt_preferences.5.xml "How APT Interprets Priorities"), so they never outrank
/// NVIDIA's packages of the branch, and stay installable where NVIDIA has no such package.
FileToWrite branch_pin(const PlanContext& context) {
  const std::string& branch = context.plan.driver.branch;
  const std::string& names = context.data.repository.apt_driver_packages;
  std::string text = "# Written by gpuenv install: NVIDIA's driver packages stay on branch " + branch +
                     " (docs/install.md \"Driver pinning\").\n";
  if (context.driver.origin == "nvidia") {
    text += "\n# The " + context.target.archive_origin +
            " archive's packages of the same names: below NVIDIA's (the first matching record decides).\n"
            "Package: " +
            names + "\nPin: release o=" + context.target.archive_origin + "\nPin-Priority: 100\n\n";
  }
  text += "Package: " + names + "\nPin: version " + branch + ".*\nPin-Priority: 1000\n";
  return {k_branch_pin, text};
}

class AptBackend : public Backend {
 public:
  std::vector<std::string> install(const std::vector<std::string>& packages) const override {
    // confdef/confold: a changed configuration file never stops an unattended install with a prompt.
    std::vector<std::string> arguments = {
        "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold", "install", "-y"};
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
    step.done_if_match = OutputMatch::exact;
    return step;
  }

  Step branch_probe(Step step, const std::vector<std::string>& packages, const std::string& branch) const override {
    // The state too: a removed package keeps its version in dpkg's database ("config-files").
    step.done_if = {"dpkg-query", "-W", "-f=${db:Status-Status}:${Version}\\n"};
    step.done_if.insert(step.done_if.end(), packages.begin(), packages.end());
    step.done_if_stdout = "installed:" + branch + ".";
    step.done_if_match = OutputMatch::lines_prefixed;
    return step;
  }

  std::vector<std::string> similar_packages(const std::string& package) const override {
    return {"apt-cache", "pkgnames", package_stem(package)};
  }

  std::vector<Step> preflight(const PlanContext& context) const override {
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
    std::vector<Step> out = {lock, dpkg};
    if (context.plan.driver.source == "nvidia" && !context.local_cuda_repository()) {
      const std::vector<std::string> tools = {"curl", "ca-certificates", "gpg"};
      Step step{"install.preflight.tools",
                "curl fetches NVIDIA's key over https, gpg checks its fingerprint (from the distribution)"};
      step.commands = {install(tools)};
      out.push_back(installed_probe(step, tools));
    }
    return out;
  }

  Step headers(const PlanContext& context) const override {
    const std::vector<std::string> packages =
        util::append_missing(context.expand(context.target.headers), context.future_headers());
    Step step{"install.preflight.headers",
              "DKMS builds the module against the running kernel's headers (" +
                  context.expand(std::string("{kernel}")) +
                  ") and, at each kernel update, the next kernel's: the flavour's headers package follows the kernel"};
    step.commands = {install(packages)};
    step.explain_failure = similar_packages(packages.front());
    step.timeout = std::chrono::seconds(900);
    return installed_probe(step, packages);
  }

  Step hold_kernel(const PlanContext& context) const override {
    const std::vector<std::string> packages = context.expand(std::vector<std::string>{
        "linux-image-{flavour}", "linux-headers-{flavour}", "linux-image-{kernel}", "linux-headers-{kernel}"});
    Step step{"install.hold_kernel",
              "[install] hold_kernel: the kernel stays where the driver was built (unhold: `apt-mark unhold " +
                  util::join(packages, " ") + "`)"};
    std::vector<std::string> hold = {"apt-mark", "hold"};
    hold.insert(hold.end(), packages.begin(), packages.end());
    step.commands = {hold};
    step.done_if = {"dpkg-query", "-W", "-f=${db:Status-Want}\\n"};
    step.done_if.insert(step.done_if.end(), packages.begin(), packages.end());
    std::string expected;
    for (std::size_t i = 0; i < packages.size(); ++i) expected += "hold\n";
    step.done_if_stdout = expected;
    return step;
  }

  std::vector<Step> cuda_repository(const PlanContext& context) const override {
    return apt_cuda_repository(context, *this);
  }

  std::vector<Step> driver(const PlanContext& context) const override {
    const std::string& branch = context.plan.driver.branch;
    const DriverRow& row = context.driver;
    std::vector<Step> out;
    if (!row.pinning_package.empty()) {
      const std::string pinning = context.expand(row.pinning_package);
      Step step{"install.driver.pinning",
                "NVIDIA's version-locking package " + pinning + ", installed before the driver as NVIDIA's guide asks"};
      step.commands = {install({pinning})};
      step.explain_failure = similar_packages("nvidia-driver-pinning-1");
      out.push_back(installed_probe(step, {pinning}));
    }
    std::vector<std::string> packages = util::append_missing(context.expand(row.packages), context.expand(row.verify));
    if (row.origin == "distro") packages.push_back(distro_modules(context));
    std::vector<std::string> probed = context.expand(row.verify);
    // Fabric manager in the driver's own transaction: apt takes one candidate version of the branch for the module
    // package and fabric manager alike, so they match exactly (it refuses to start on a mismatch); a separate,
    // later install could take a newer version of the branch than the driver already installed.
    const FabricRow* fabric = fabric_row(context.data, "apt", row.origin, branch);
    const bool with_fabric = context.plan.fabric_manager && fabric != nullptr;
    if (with_fabric) {
      packages = util::append_missing(packages, context.expand(fabric->packages));
      probed = util::append_missing(probed, context.expand(fabric->packages));
    }
    Step step{"install.driver",
              "driver branch " + branch + " (" + context.plan.driver.modules + " modules, from " +
                  (row.origin == "distro" ? "the Ubuntu archive" : "NVIDIA's repository") +
                  (with_fabric ? "; with fabric manager at the same version, in one transaction" : "") +
                  "), kept on the branch by " + lock_description(context)};
    step.files.push_back(branch_pin(context));
    step.commands = {install(packages)};
    step.explain_failure = similar_packages(packages.front());
    step.timeout = std::chrono::seconds(1800);
    out.push_back(branch_probe(step, probed, branch));
    return out;
  }

  Step container_toolkit(const PlanContext& context) const override {
    const std::string& url = context.toolkit_base_url;
    const std::string repo = url + context.data.repository.toolkit_deb_path;
    Step step{"install.container_toolkit",
              "the NVIDIA Container Toolkit from its repository (" + url + "), so containers get the GPUs"};
    step.files.push_back({k_toolkit_list, deb_line(repo, k_toolkit_key)});
    if (!is_local_repository(url)) {
      const Repository& repository = context.data.repository;  // the key stays upstream's with a mirror
      step.commands.push_back(https_download(repository.toolkit_base_url + repository.toolkit_key_path, k_toolkit_key));
    }
    step.commands.push_back(apt_get({"update"}));
    step.commands.push_back(install({context.data.packages.container_toolkit}));
    step.retries = k_update_retries;
    return installed_probe(step, {context.data.packages.container_toolkit});
  }

  std::optional<Step> unattended_upgrades(const PlanContext&) const override {
    Step step{"install.unattended_upgrades",
              "unattended-upgrades must not replace the user-space driver under the running module "
              "(\"Driver/library version mismatch\"); the signed module packages still follow the kernel"};
    step.files.push_back({k_unattended,
                          "// Written by gpuenv install: unattended-upgrades leaves the NVIDIA driver and CUDA alone.\n"
                          "Unattended-Upgrade::Package-Blacklist {\n"
                          "    \"nvidia-.*\";\n    \"libnvidia-.*\";\n    \"cuda-.*\";\n    \"libcudnn.*\";\n"
                          "    \"cudnn.*\";\n};\n"});
    step.done_if = {"test", "-f", k_unattended};
    return step;
  }

  std::vector<std::string> rebuild_initramfs() const override { return {"update-initramfs", "-u", "-k", "all"}; }

  std::vector<std::string> list_initramfs(const std::string& kernel) const override {
    return {"lsinitramfs", "/boot/initrd.img-" + kernel};
  }

  std::string lock_description(const PlanContext& context) const override {
    std::string out =
        "the apt preferences pin " + std::string(k_branch_pin) + " (versions " + context.plan.driver.branch + ".*)";
    if (!context.driver.pinning_package.empty()) out += " and " + context.expand(context.driver.pinning_package);
    return out;
  }

 private:
  /// Ubuntu archive: the Canonical-signed modules of the kernel flavour, or DKMS when the running kernel has none
  /// (what ubuntu-drivers' get_linux_modules_metapackage does).
  static std::string distro_modules(const PlanContext& context) {
    return signed_modules_available(context) ? context.expand(context.driver.signed_modules)
                                             : context.expand(context.driver.dkms);
  }
};

}  // namespace

std::vector<std::string> apt_get(std::vector<std::string> arguments) {
  std::vector<std::string> argv = {"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "DPkg::Lock::Timeout=600"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return argv;
}

std::string deb_line(const std::string& url, const std::string& key) {
  const std::string option = is_local_repository(url) ? "trusted=yes" : "signed-by=" + key;
  return "deb [" + option + "] " + url + " /\n";
}

bool signed_modules_available(const PlanContext& context) {
  if (!context.node.signed_module_packages) return true;  // unknown: the signed meta, which apply decides again
  const std::string abi = context.expand(context.driver.signed_modules_abi);
  const auto& known = *context.node.signed_module_packages;
  return std::find(known.begin(), known.end(), abi) != known.end();
}

const FabricRow* fabric_row(const InstallData& data, const std::string& manager, const std::string& origin,
                            const std::string& branch) {
  const std::optional<long long> number = util::parse_int(branch);
  if (!number) return nullptr;
  for (const FabricRow& row : data.fabric) {
    if (row.manager == manager && row.origin == origin && *number >= row.first_branch && *number <= row.last_branch)
      return &row;
  }
  return nullptr;
}

std::unique_ptr<Backend> make_apt_backend() { return std::make_unique<AptBackend>(); }

}  // namespace gpuenv::install
