#include "install/node.hpp"

#include <chrono>

#include "install/node_text.hpp"
#include "probe/pci_devices.hpp"
#include "probe/proc_driver_version.hpp"
#include "util/strings.hpp"

namespace gpuenv::install {
namespace {

constexpr std::chrono::seconds k_probe_timeout{30};
constexpr const char* k_secure_boot = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";
constexpr const char* k_keyring_path = "/usr/share/keyrings/cuda-archive-keyring.gpg";
constexpr const char* k_apt_sources = "/etc/apt/sources.list.d/";

std::string first_line(std::string_view text) { return std::string(util::trim(text.substr(0, text.find('\n')))); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view line : util::split_lines(text)) {
    if (!util::trim(line).empty()) out.emplace_back(util::trim(line));
  }
  return out;
}

std::optional<bool> secure_boot(system::System& system) {
  if (!system.exists(k_secure_boot)) return system.exists("/sys/firmware/efi") ? std::optional<bool>() : false;
  auto bytes = system.read_file(k_secure_boot);
  if (!bytes) return std::nullopt;
  auto enabled = probe::parse_secure_boot_efivar(*bytes);
  return enabled ? std::optional<bool>(*enabled) : std::nullopt;
}

/// Output lines of a command that exited 0; nullopt when it did not run or failed (a captured tree runs none).
std::optional<std::vector<std::string>> command_lines(system::System& system, const std::vector<std::string>& argv) {
  const system::CommandResult result = system.run(argv, k_probe_timeout);
  if (result.exit_code != 0) return std::nullopt;
  return lines_of(result.out);
}

bool any_exists(system::System& system, std::initializer_list<const char*> paths) {
  for (const char* path : paths) {
    if (system.exists(path)) return true;
  }
  return false;
}

void observe_pci(system::System& system, NodeFacts& node) {
  const probe::NvidiaPciInventory inventory = probe::nvidia_pci_inventory(probe::read_pci_devices(system));
  for (const probe::PciDevice& gpu : inventory.gpus) node.gpu_devices.push_back(gpu.device);
  node.nvswitches = static_cast<int>(inventory.nvswitches.size());
  node.nvlink5 = !probe::nvlink5_management_bridges(system).empty();
}

void observe_apt(system::System& system, NodeFacts& node) {
  if (auto status = system.read_file("/var/lib/dpkg/status")) node.installed = parse_dpkg_packages(*status);
  if (auto held = command_lines(system, {"apt-mark", "showhold"})) {
    node.held_packages = *held;
  } else {
    // A captured tree runs no command: dpkg's status file holds the same selections apt-mark reads.
    for (const NodePackage& package : node.installed.value_or(std::vector<NodePackage>{})) {
      if (package.held) node.held_packages.push_back(package.name);
    }
  }
  node.signed_module_packages = command_lines(system, {"apt-cache", "pkgnames", "linux-modules-nvidia-"});
  if (const system::CommandResult keys = system.run({"apt-key", "list"}, k_probe_timeout); keys.exit_code == 0)
    node.retired_key = retired_nvidia_key(keys.out);
  std::vector<std::string> files = {"/etc/apt/sources.list"};
  for (const std::string& name : system.list_directory(k_apt_sources)) files.push_back(k_apt_sources + name);
  for (const std::string& file : files) {
    if (!util::ends_with(file, ".list") && !util::ends_with(file, ".sources")) continue;
    auto text = system.read_file(file);
    if (!text) continue;
    if (conflicting_cuda_source(*text, k_keyring_path)) node.foreign_cuda_sources.push_back(file);
    if (graphics_drivers_ppa(file, *text)) node.graphics_drivers_ppa.push_back(file);
  }
}

/// The repository ids under /etc/yum.repos.d: the same list `dnf repolist --all` prints, read from the files so a
/// captured node (--root) gives it too. RHUI's client packages and subscription-manager (redhat.repo) write there.
std::vector<std::string> dnf_repositories(system::System& system) {
  const std::string dir = "/etc/yum.repos.d/";
  std::vector<std::string> out;
  for (const std::string& name : system.list_directory(dir)) {
    if (!util::ends_with(name, ".repo")) continue;
    if (auto text = system.read_file(dir + name)) {
      for (std::string& id : repo_file_ids(*text)) out.push_back(std::move(id));
    }
  }
  return out;
}

}  // namespace

NodeFacts observe_node(system::System& system, const std::string& manager, bool captured) {
  NodeFacts node;
  node.observed = true;
  node.captured = captured;
  if (auto release = system.read_file("/proc/sys/kernel/osrelease")) node.kernel_release = first_line(*release);
  node.secure_boot = secure_boot(system);
  if (auto modules = system.read_file("/proc/modules"))
    node.nouveau_loaded = probe::parse_proc_modules(*modules).nouveau();
  node.loaded_driver_version = module_versions(system).loaded;
  if (!node.loaded_driver_version.empty()) {
    if (auto ccs = command_lines(system, {"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}))
      node.gpu_compute_capabilities = *ccs;
  }
  observe_pci(system, node);
  node.docker = any_exists(system, {"/usr/bin/dockerd", "/usr/sbin/dockerd", "/usr/bin/docker"});
  node.containerd = any_exists(system, {"/usr/bin/containerd", "/usr/local/bin/containerd"});
  node.runfile_driver = system.exists("/usr/bin/nvidia-uninstall");
  if (manager == "apt") observe_apt(system, node);
  if (manager == "dnf") node.dnf_repositories = dnf_repositories(system);
  if (manager == "dnf" && !node.kernel_release.empty()) {
    // The kernel's own package names its headers (Amazon Linux 2023: kernel6.12-devel for the 6.12 kernel).
    if (auto owner =
            command_lines(system, {"rpm", "-q", "--qf", "%{NAME}\\n", "-f", "/lib/modules/" + node.kernel_release});
        owner && owner->size() == 1)
      node.kernel_package = owner->front();
  }
  return node;
}

std::optional<probe::OsRelease> read_os_release(system::System& system) {
  auto text = system.read_file("/etc/os-release");
  if (!text) text = system.read_file("/usr/lib/os-release");
  if (!text) return std::nullopt;
  return probe::parse_os_release(*text);
}

std::string profile_distro(const std::string& os_release_id) {
  // Profiles name Rocky Linux as its container images do ("rockylinux"); its os-release ID is "rocky".
  return os_release_id == "rocky" ? "rockylinux" : os_release_id;
}

std::optional<util::Error> check_node_os(system::System& system, const Target& target) {
  const auto release = read_os_release(system);
  if (!release) return util::Error::input("cannot read /etc/os-release", "gpuenv install runs on the node itself");
  const std::string major = release->version_id.substr(0, release->version_id.find('.'));
  const std::string id = profile_distro(release->id);
  if (id == target.distro && (release->version_id == target.version || major == target.version)) {
    return std::nullopt;
  }
  return util::Error::input("this node runs " + release->id + " " + release->version_id + ", the profile is for " +
                                target.distro + " " + target.version,
                            "install a profile for this OS, or plan for the other one with --dry-run --os");
}

std::optional<long> effective_uid(system::System& system) {
  auto status = system.read_file("/proc/self/status");
  if (!status) return std::nullopt;
  for (std::string_view line : util::split_lines(*status)) {
    if (!util::starts_with(line, "Uid:")) continue;
    std::vector<std::string_view> fields;
    for (std::string_view field : util::split(util::trim(line.substr(4)), '\t')) {
      if (!util::trim(field).empty()) fields.push_back(util::trim(field));
    }
    if (fields.size() < 2) return std::nullopt;  // real, effective, saved, filesystem
    const auto uid = util::parse_int(fields[1]);
    return uid ? std::optional<long>(static_cast<long>(*uid)) : std::nullopt;
  }
  return std::nullopt;
}

bool nvidia_gpu_present(system::System& system) {
  return !probe::nvidia_pci_inventory(probe::read_pci_devices(system)).gpus.empty();
}

ModuleVersions module_versions(system::System& system) {
  ModuleVersions out;
  if (auto text = system.read_file("/proc/driver/nvidia/version")) {
    if (auto parsed = probe::parse_proc_driver_version(*text)) out.loaded = parsed->module.version;
  }
  const system::CommandResult modinfo = system.run({"modinfo", "-F", "version", "nvidia"}, k_probe_timeout);
  if (modinfo.exit_code == 0) out.installed = first_line(modinfo.out);
  return out;
}

std::string boot_id(system::System& system) {
  auto text = system.read_file("/proc/sys/kernel/random/boot_id");
  return text ? first_line(*text) : "";
}

}  // namespace gpuenv::install
