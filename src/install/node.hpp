#pragma once
// What apply observes on the node before planning: kernel, Secure Boot, nouveau, the loaded module, runtimes,
// held packages, and whether an NVIDIA GPU is on the PCI bus. Read through System only.

#include <optional>
#include <string>

#include "install/plan.hpp"
#include "probe/host_info.hpp"
#include "system/system.hpp"

namespace gpuenv::install {

/// The node's facts for the planner (`manager` "apt" also asks apt-mark for held packages).
NodeFacts observe_node(system::System& system, const std::string& manager);
/// /etc/os-release, parsed; nullopt when unreadable.
std::optional<probe::OsRelease> read_os_release(system::System& system);
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

}  // namespace gpuenv::install
