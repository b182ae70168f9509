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

/// An HGX/DGX NVLink5 GPU by its name: a B100, B200 or B300 that is no Grace superchip (GB200, GB300: their switches
/// sit in the rack's switch trays). Every such 8-GPU board is an NVSwitch board whose fabric manager works with NVLSM
/// (Fabric Manager user guide 1.3.2, 1.6.4). Pure.
bool is_hgx_nvlink5_gpu(std::string_view name);

/// Whether NVML (or the report) places the GPU in an NVLink fabric: a fabric state other than Not Supported
/// (nvml.h NVML_GPU_FABRIC_STATE_*; NVIDIA's nvloom and TransformerEngine read Not Supported as "no NVLink fabric").
/// Pure.
bool in_nvlink_fabric(const GpuFacts& gpu);

/// Whether the GPU's fabric cluster UUID is set: go-nvlib's IsFabricAttached counts a GPU as attached to a
/// multi-node NVLink fabric only when its state is Completed and its clusterUuid is not all zeros (NVIDIA/go-nvlib
/// pkg/nvlib/device/device.go @ 0171eccd). Pure.
bool in_multi_node_nvlink_domain(const GpuFacts& gpu);

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
