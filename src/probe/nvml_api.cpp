#include "probe/nvml_api.hpp"

#include <cstring>

#include "probe/nvml.hpp"
#include "system/symbols.hpp"

namespace gpuenv::probe::nvml {

Api resolve(system::DynamicLibrary& lib) {
  Api api;
  system::SymbolBinder binder(lib);
  api.init_name = binder.optional(api.init, {"nvmlInit_v2", "nvmlInit"});
  binder.optional(api.shutdown, "nvmlShutdown");
  binder.optional(api.error_string, "nvmlErrorString");
  binder.optional(api.driver_version, "nvmlSystemGetDriverVersion");
  binder.optional(api.nvml_version, "nvmlSystemGetNVMLVersion");
  binder.optional(api.cuda_driver_version, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  binder.optional(api.device_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  binder.optional(api.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  binder.optional(api.handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  binder.optional(api.name, "nvmlDeviceGetName");
  binder.optional(api.uuid, "nvmlDeviceGetUUID");
  binder.optional(api.pci_info, "nvmlDeviceGetPciInfo_v3");
  binder.optional(api.memory_info, "nvmlDeviceGetMemoryInfo");
  binder.optional(api.compute_capability, "nvmlDeviceGetCudaComputeCapability");
  binder.optional(api.persistence_mode, "nvmlDeviceGetPersistenceMode");
  binder.optional(api.mig_mode, "nvmlDeviceGetMigMode");
  binder.optional(api.max_mig_devices, "nvmlDeviceGetMaxMigDeviceCount");
  binder.optional(api.mig_device, "nvmlDeviceGetMigDeviceHandleByIndex");
  binder.optional(api.ecc_mode, "nvmlDeviceGetEccMode");
  binder.optional(api.total_ecc_errors, "nvmlDeviceGetTotalEccErrors");
  binder.optional(api.retired_pages, "nvmlDeviceGetRetiredPages");
  binder.optional(api.retired_pages_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
  binder.optional(api.remapped_rows, "nvmlDeviceGetRemappedRows");
  binder.optional(api.temperature, "nvmlDeviceGetTemperature");
  binder.optional(api.temperature_threshold, "nvmlDeviceGetTemperatureThreshold");
  binder.optional(api.power_usage, "nvmlDeviceGetPowerUsage");
  binder.optional(api.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  binder.optional(api.utilization, "nvmlDeviceGetUtilizationRates");
  binder.optional(api.throttle_reasons,
                  {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  binder.optional(api.clock_info, "nvmlDeviceGetClockInfo");
  binder.optional(api.max_clock_info, "nvmlDeviceGetMaxClockInfo");
  binder.optional(api.pcie_gen_current, "nvmlDeviceGetCurrPcieLinkGeneration");
  binder.optional(api.pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
  binder.optional(api.pcie_width_current, "nvmlDeviceGetCurrPcieLinkWidth");
  binder.optional(api.pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
  binder.optional(api.running_processes, "nvmlDeviceGetComputeRunningProcesses");
  binder.optional(api.running_processes_v2,
                  {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  binder.optional(api.nvlink_state, "nvmlDeviceGetNvLinkState");
  binder.optional(api.nvlink_error_counter, "nvmlDeviceGetNvLinkErrorCounter");
  binder.optional(api.field_values, "nvmlDeviceGetFieldValues");
  binder.optional(api.pcie_replay_counter, "nvmlDeviceGetPcieReplayCounter");
  binder.optional(api.gpu_fabric_info_v, "nvmlDeviceGetGpuFabricInfoV");
  binder.optional(api.gpu_fabric_info, "nvmlDeviceGetGpuFabricInfo");
  return api;
}

std::string query_string(Return (*f)(Device, char*, unsigned), Device device) {
  if (f == nullptr) return {};
  char buffer[256] = {};
  if (f(device, buffer, sizeof buffer) != k_success) return {};
  return std::string(buffer, strnlen(buffer, sizeof buffer));
}

std::string error_text(const Api& api, Return code) {
  if (api.error_string != nullptr) {
    if (const char* text = api.error_string(code)) return text;
  }
  return nvml_error_name(code);
}

}  // namespace gpuenv::probe::nvml
