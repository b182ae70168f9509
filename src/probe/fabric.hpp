#pragma once
// The fabric facts around the GPUs, through System: NVSwitches on the PCI bus, the fabric manager (package, version,
// service) and NVLSM, the peer-memory module GPUDirect RDMA needs, AWS EFA's libfabric and NCCL plugin, and each
// GPU's NUMA node. The GPUs' own fabric registration comes from NVML (probe/nvml.cpp), the ports from rdma.cpp.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/facts.hpp"
#include "probe/packages.hpp"
#include "system/system.hpp"

namespace gpuenv::probe {

/// Fills facts.fabric; reads facts.gpus (for the NUMA nodes), so it runs after the GPUs are known. Live, it also asks
/// systemd for the service state and (on RPM systems) rpm for the package; under --root only files are read.
void collect_fabric(system::System& system, bool live, std::chrono::milliseconds timeout, HostFacts& facts);

/// Sets manager.process_seen when a process named nv-fabricmanager runs: /proc/<pid>/comm holds the kernel's name of
/// each task, 15 characters at most (TASK_COMM_LEN 16 with its NUL), so "nv-fabricmanage" (proc(5), /proc/pid/comm).
void find_fabric_manager_process(system::System& system, FabricManagerFacts& manager);

/// The fabric manager among installed dpkg packages: "nvidia-fabricmanager-550" (R550 and earlier branches) or
/// "nvidia-fabricmanager" (newer), with the upstream version ("550.54.15-1" -> "550.54.15"); nullopt when absent.
/// Development packages (-dev, libnvidia-nscq) are not the service. Pure.
std::optional<InstalledPackage> fabric_manager_package(const std::vector<InstalledPackage>& packages);

/// The version in `nv-fabricmanager --version` output ("Fabric Manager version is : 535.104.05" -> "535.104.05");
/// empty when none. Pure.
std::string fabric_manager_version_from_output(std::string_view output);

/// The upstream part of a distribution version: "550.54.15-1" -> "550.54.15", "1:535.104.05-0ubuntu1" ->
/// "535.104.05". Pure.
std::string upstream_version(std::string_view package_version);

}  // namespace gpuenv::probe
