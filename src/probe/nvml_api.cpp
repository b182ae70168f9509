#include "probe/nvml_api.hpp"

#include <cstring>

#include "probe/nvml.hpp"

namespace gpuenv::probe::nvml {
namespace {

template <typename F>
void bind(system::DynamicLibrary& library, F& target, const char* name) {
  target = reinterpret_cast<F>(library.symbol(name));
}

}  // namespace

Api resolve(system::DynamicLibrary& lib) {
  Api api;
  bind(lib, api.init, "nvmlInit_v2");
  if (api.init == nullptr) bind(lib, api.init, "nvmlInit");
  bind(lib, api.shutdown, "nvmlShutdown");
  bind(lib, api.error_string, "nvmlErrorString");
  bind(lib, api.driver_version, "nvmlSystemGetDriverVersion");
  bind(lib, api.nvml_version, "nvmlSystemGetNVMLVersion");
  bind(lib, api.cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2");
  if (api.cuda_driver_version == nullptr) bind(lib, api.cuda_driver_version, "nvmlSystemGetCudaDriverVersion");
  bind(lib, api.device_count, "nvmlDeviceGetCount_v2");
  if (api.device_count == nullptr) bind(lib, api.device_count, "nvmlDeviceGetCount");
  bind(lib, api.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  if (api.handle_by_index == nullptr) bind(lib, api.handle_by_index, "nvmlDeviceGetHandleByIndex");
  bind(lib, api.name, "nvmlDeviceGetName");
  bind(lib, api.uuid, "nvmlDeviceGetUUID");
  bind(lib, api.pci_info, "nvmlDeviceGetPciInfo_v3");
  bind(lib, api.memory_info, "nvmlDeviceGetMemoryInfo");
  bind(lib, api.compute_capability, "nvmlDeviceGetCudaComputeCapability");
  bind(lib, api.persistence_mode, "nvmlDeviceGetPersistenceMode");
  bind(lib, api.mig_mode, "nvmlDeviceGetMigMode");
  bind(lib, api.ecc_mode, "nvmlDeviceGetEccMode");
  bind(lib, api.total_ecc_errors, "nvmlDeviceGetTotalEccErrors");
  bind(lib, api.retired_pages, "nvmlDeviceGetRetiredPages");
  bind(lib, api.retired_pages_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
  bind(lib, api.remapped_rows, "nvmlDeviceGetRemappedRows");
  bind(lib, api.temperature, "nvmlDeviceGetTemperature");
  bind(lib, api.temperature_threshold, "nvmlDeviceGetTemperatureThreshold");
  bind(lib, api.power_usage, "nvmlDeviceGetPowerUsage");
  bind(lib, api.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  bind(lib, api.utilization, "nvmlDeviceGetUtilizationRates");
  bind(lib, api.throttle_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (api.throttle_reasons == nullptr) bind(lib, api.throttle_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  bind(lib, api.clock_info, "nvmlDeviceGetClockInfo");
  bind(lib, api.pcie_gen_current, "nvmlDeviceGetCurrPcieLinkGeneration");
  bind(lib, api.pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
  bind(lib, api.pcie_width_current, "nvmlDeviceGetCurrPcieLinkWidth");
  bind(lib, api.pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
  bind(lib, api.running_processes, "nvmlDeviceGetComputeRunningProcesses");
  bind(lib, api.nvlink_state, "nvmlDeviceGetNvLinkState");
  bind(lib, api.nvlink_error_counter, "nvmlDeviceGetNvLinkErrorCounter");
  bind(lib, api.field_values, "nvmlDeviceGetFieldValues");
  bind(lib, api.pcie_replay_counter, "nvmlDeviceGetPcieReplayCounter");
  bind(lib, api.gpu_fabric_info_v, "nvmlDeviceGetGpuFabricInfoV");
  bind(lib, api.gpu_fabric_info, "nvmlDeviceGetGpuFabricInfo");
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
