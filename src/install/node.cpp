#include "install/node.hpp"

#include <chrono>

#include "probe/pci_devices.hpp"
#include "probe/proc_driver_version.hpp"
#include "util/strings.hpp"

namespace gpuenv::install {
namespace {

constexpr std::chrono::seconds k_probe_timeout{30};
constexpr const char* k_secure_boot = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";

std::string first_line(std::string_view text) { return std::string(util::trim(text.substr(0, text.find('\n')))); }

std::optional<bool> secure_boot(system::System& system) {
  if (!system.exists(k_secure_boot)) return system.exists("/sys/firmware/efi") ? std::optional<bool>() : false;
  auto bytes = system.read_file(k_secure_boot);
  if (!bytes) return std::nullopt;
  auto enabled = probe::parse_secure_boot_efivar(*bytes);
  return enabled ? std::optional<bool>(*enabled) : std::nullopt;
}

std::vector<std::string> held_packages(system::System& system) {
  const system::CommandResult result = system.run({"apt-mark", "showhold"}, k_probe_timeout);
  if (result.exit_code != 0) return {};
  std::vector<std::string> out;
  for (std::string_view line : util::split_lines(result.out)) {
    if (!util::trim(line).empty()) out.emplace_back(util::trim(line));
  }
  return out;
}

/// Compute capabilities of the GPUs, which only a loaded driver can tell (nvidia-smi; empty without one).
std::vector<std::string> compute_capabilities(system::System& system) {
  const system::CommandResult result =
      system.run({"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}, k_probe_timeout);
  if (result.exit_code != 0) return {};
  std::vector<std::string> out;
  for (std::string_view line : util::split_lines(result.out)) {
    if (!util::trim(line).empty()) out.emplace_back(util::trim(line));
  }
  return out;
}

bool any_exists(system::System& system, std::initializer_list<const char*> paths) {
  for (const char* path : paths) {
    if (system.exists(path)) return true;
  }
  return false;
}

}  // namespace

NodeFacts observe_node(system::System& system, const std::string& manager) {
  NodeFacts node;
  node.observed = true;
  if (auto release = system.read_file("/proc/sys/kernel/osrelease")) node.kernel_release = first_line(*release);
  node.secure_boot = secure_boot(system);
  if (auto modules = system.read_file("/proc/modules"))
    node.nouveau_loaded = probe::parse_proc_modules(*modules).nouveau();
  node.loaded_driver_version = module_versions(system).loaded;
  if (!node.loaded_driver_version.empty()) node.gpu_compute_capabilities = compute_capabilities(system);
  node.docker = any_exists(system, {"/usr/bin/dockerd", "/usr/sbin/dockerd", "/usr/bin/docker"});
  node.containerd = any_exists(system, {"/usr/bin/containerd", "/usr/local/bin/containerd"});
  if (manager == "apt") node.held_packages = held_packages(system);
  return node;
}

std::optional<probe::OsRelease> read_os_release(system::System& system) {
  auto text = system.read_file("/etc/os-release");
  if (!text) text = system.read_file("/usr/lib/os-release");
  if (!text) return std::nullopt;
  return probe::parse_os_release(*text);
}

std::optional<util::Error> check_node_os(system::System& system, const Target& target) {
  const auto release = read_os_release(system);
  if (!release) return util::Error::input("cannot read /etc/os-release", "gpuenv install runs on the node itself");
  const std::string major = release->version_id.substr(0, release->version_id.find('.'));
  // Profiles name Rocky Linux as its container images do ("rockylinux"); its os-release ID is "rocky".
  const std::string id = release->id == "rocky" ? "rockylinux" : release->id;
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

}  // namespace gpuenv::install
