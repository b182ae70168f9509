#pragma once
// The one NVML table: the subset of nvml.h gpuenv calls, declared here so that no NVIDIA header or library is needed
// at build time, resolved from a dlopen'ed libnvidia-ml through system::SymbolBinder. Layouts and signatures follow
// nvml.h (NVIDIA/go-nvml gen/nvml/nvml.h @ 2f9e261f, the header NVIDIA generates its Go bindings from). Shared by the
// inventory (nvml.cpp), the link-counter reader (link_counters.cpp) and smoke's NVML monitor; the NVLink error
// counters of all three are read by nvlink5.cpp.

#include <cstddef>
#include <optional>
#include <string>

#include "probe/fabric_facts.hpp"
#include "probe/nvlink5.hpp"
#include "system/system.hpp"

namespace gpuenv::probe::nvml {

// Return and Device: probe/nvlink5.hpp.
constexpr Return k_success = 0;
constexpr Return k_invalid_argument = 2;
constexpr Return k_not_supported = 3;
constexpr Return k_insufficient_size = 7;
constexpr Return k_argument_version_mismatch = 25;  ///< NVML_ERROR_ARGUMENT_VERSION_MISMATCH

/// NVML_NVLINK_MAX_LINKS (36 in current nvml.h; 18 before Blackwell). Links past a GPU's own count answer
/// NVML_ERROR_INVALID_ARGUMENT and are skipped.
constexpr unsigned k_nvlink_max_links = 36;

struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct PciInfo {
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];
};

struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};

/// nvmlGpuFabricInfo_t (v1, no version field): nvmlDeviceGetGpuFabricInfo, Hopper and later.
struct GpuFabricInfoV1 {
  unsigned char cluster_uuid[16];
  Return status;
  unsigned int clique_id;
  unsigned char state;
};

/// nvmlGpuFabricInfo_v3_t (nvmlGpuFabricInfoV_t); v2 is the same without health_summary.
struct GpuFabricInfoV3 {
  unsigned int version;
  unsigned char cluster_uuid[16];
  Return status;
  unsigned int clique_id;
  unsigned char state;
  unsigned int health_mask;
  unsigned char health_summary;
};

/// NVML_STRUCT_VERSION(GpuFabricInfo, N): the structure's size ORed with the version in the top byte.
constexpr unsigned fabric_info_v3 = static_cast<unsigned>(sizeof(GpuFabricInfoV3)) | (3U << 24);
/// nvmlGpuFabricInfo_v2_t ends at health_mask: its size is the offset of health_summary, rounded to alignment.
constexpr unsigned fabric_info_v2 = static_cast<unsigned>(offsetof(GpuFabricInfoV3, health_summary)) | (2U << 24);

/// Function pointers resolved from the library; any may be null on an old driver.
struct Api {
  Return (*init)() = nullptr;
  const char* init_name = nullptr;  ///< which entry point init is: "nvmlInit_v2", "nvmlInit" (or null)
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*driver_version)(char*, unsigned) = nullptr;
  Return (*nvml_version)(char*, unsigned) = nullptr;
  Return (*cuda_driver_version)(int*) = nullptr;
  Return (*device_count)(unsigned*) = nullptr;
  Return (*handle_by_index)(unsigned, Device*) = nullptr;
  Return (*handle_by_pci_bus_id)(const char*, Device*) = nullptr;  ///< nvmlDeviceGetHandleByPciBusId_v2
  Return (*name)(Device, char*, unsigned) = nullptr;
  Return (*uuid)(Device, char*, unsigned) = nullptr;
  Return (*pci_info)(Device, PciInfo*) = nullptr;
  Return (*memory_info)(Device, Memory*) = nullptr;
  Return (*compute_capability)(Device, int*, int*) = nullptr;
  Return (*persistence_mode)(Device, int*) = nullptr;
  Return (*mig_mode)(Device, unsigned*, unsigned*) = nullptr;
  Return (*max_mig_devices)(Device, unsigned*) = nullptr;
  Return (*mig_device)(Device, unsigned, Device*) = nullptr;  ///< nvmlDeviceGetMigDeviceHandleByIndex
  Return (*ecc_mode)(Device, int*, int*) = nullptr;
  Return (*total_ecc_errors)(Device, int, int, unsigned long long*) = nullptr;
  Return (*retired_pages)(Device, int, unsigned*, unsigned long long*) = nullptr;
  Return (*retired_pages_pending)(Device, int*) = nullptr;
  Return (*remapped_rows)(Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  Return (*temperature)(Device, int, unsigned*) = nullptr;
  Return (*temperature_threshold)(Device, int, unsigned*) = nullptr;
  Return (*power_usage)(Device, unsigned*) = nullptr;
  Return (*power_limit)(Device, unsigned*) = nullptr;
  Return (*utilization)(Device, Utilization*) = nullptr;
  Return (*throttle_reasons)(Device, unsigned long long*) = nullptr;
  Return (*clock_info)(Device, int, unsigned*) = nullptr;
  Return (*max_clock_info)(Device, int, unsigned*) = nullptr;
  Return (*pcie_gen_current)(Device, unsigned*) = nullptr;
  Return (*pcie_gen_max)(Device, unsigned*) = nullptr;
  Return (*pcie_width_current)(Device, unsigned*) = nullptr;
  Return (*pcie_width_max)(Device, unsigned*) = nullptr;
  Return (*running_processes)(Device, unsigned*, void*) = nullptr;  ///< unversioned: nvmlProcessInfo_v1_t (16 bytes)
  /// nvmlDeviceGetComputeRunningProcesses_v3, else _v2: nvmlProcessInfo_t (24 bytes).
  Return (*running_processes_v2)(Device, unsigned*, void*) = nullptr;
  Return (*nvlink_state)(Device, unsigned, int*) = nullptr;
  Return (*nvlink_error_counter)(Device, unsigned, int, unsigned long long*) = nullptr;
  /// nvmlDeviceGetFieldValues (R550+): NVLink5's error counters and bit error rates (probe/nvlink5.hpp).
  Return (*field_values)(Device, int, FieldValue*) = nullptr;
  /// nvmlDeviceGetPcieReplayCounter (Kepler and later).
  Return (*pcie_replay_counter)(Device, unsigned*) = nullptr;
  /// nvmlDeviceGetGpuFabricInfoV (versioned, R550+) and nvmlDeviceGetGpuFabricInfo (v1, deprecated in 13.0).
  Return (*gpu_fabric_info_v)(Device, GpuFabricInfoV3*) = nullptr;
  Return (*gpu_fabric_info)(Device, GpuFabricInfoV1*) = nullptr;
};

/// Resolves the versioned entry points first, as nvml.h's macros do, falling back to the originals.
Api resolve(system::DynamicLibrary& library);

/// Calls `f(args..., &value)` when the symbol exists and returns the value on success.
template <typename T, typename F, typename... Args>
std::optional<T> query(F f, Args... args) {
  if (f == nullptr) return std::nullopt;
  T value{};
  if (f(args..., &value) != k_success) return std::nullopt;
  return value;
}

/// The calls an NVLink's error counters are read through (read_nvlink_errors).
inline NvLinkErrorCalls nvlink_error_calls(const Api& api) { return {api.nvlink_error_counter, api.field_values}; }

/// A string attribute (name, UUID) of `device`; empty when the call is absent or fails.
std::string query_string(Return (*f)(Device, char*, unsigned), Device device);

/// NVML's own text for `code` (nvmlErrorString), else gpuenv's table (nvml_error_name).
std::string error_text(const Api& api, Return code);

/// One GPU's link counters now (link_counters.cpp): the PCIe replay counter and link, and every NVLink NVML answers
/// for with its state and error counters (a counter whose read fails is absent; NVLink5's counters on a link that
/// refuses the older ones, and then its bit error rates).
GpuLinkCounters read_link_counters(const Api& api, unsigned index, Device device);

}  // namespace gpuenv::probe::nvml
