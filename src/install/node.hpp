#pragma once
// What apply observes on the node before planning, and what `--dry-run --root DIR` reads from a captured node:
// kernel, Secure Boot, nouveau, the loaded module, runtimes, installed and held packages, GPUs and NVSwitches on
// the PCI bus, and conflicting installs. Read through System only; a captured tree runs no command.

#include <optional>
#include <string>

#include "install/plan.hpp"
#include "probe/host_info.hpp"
#include "system/system.hpp"

namespace gpuenv::install {

/// The node's facts for the planner (`manager` "apt" also reads dpkg and apt's view; "dnf" asks rpm for the
/// kernel's package). `captured`: a tree under --root, where no command runs and the facts come from files.
NodeFacts observe_node(system::System& system, const std::string& manager, bool captured = false);
/// /etc/os-release, parsed; nullopt when unreadable.
std::optional<probe::OsRelease> read_os_release(system::System& system);
/// The profile's spelling of an os-release ID ("rocky" -> "rockylinux").
std::string profile_distro(const std::string& os_release_id);
/// An input Error when the node's os-release is not `target`'s OS (EL releases match on the major version).
std::optional<util::Error> check_node_os(system::System& system, const Target& target);
/// The effective user id from /proc/self/status; nullopt when unreadable.
std::optional<long> effective_uid(system::System& system);
/// True when a display or 3D controller with NVIDIA's vendor id (0x10de) is on the PCI bus.
bool nvidia_gpu_present(system::System& system);
/// The loaded module's version (/proc/driver/nvidia/version) and the installed one (modinfo); empty when absent.
struct ModuleVersions {
  std::string loaded;
  std::string installed;
};
ModuleVersions module_versions(system::System& system);
/// The id of the running boot (/proc/sys/kernel/random/boot_id); empty when unreadable.
std::string boot_id(system::System& system);

}  // namespace gpuenv::install
