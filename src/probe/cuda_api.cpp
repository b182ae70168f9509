#include "probe/cuda_api.hpp"

#include "system/symbols.hpp"
#include "util/strings.hpp"

namespace gpuenv::probe::cuda {

Api bind_all(system::DynamicLibrary& library, std::vector<std::string>& missing) {
  Api api;
  system::SymbolBinder binder(library);
  binder.require(api.init, "cuInit");
  binder.require(api.driver_get_version, "cuDriverGetVersion");
  binder.optional(api.get_error_name, "cuGetErrorName");
  binder.optional(api.get_error_string, "cuGetErrorString");
  binder.require(api.device_get_count, "cuDeviceGetCount");
  binder.require(api.device_get, "cuDeviceGet");
  binder.require(api.device_get_name, "cuDeviceGetName");
  binder.require(api.device_get_attribute, "cuDeviceGetAttribute");
  binder.require(api.device_total_mem, "cuDeviceTotalMem_v2");
  binder.require(api.device_get_pci_bus_id, "cuDeviceGetPCIBusId");
  binder.require(api.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  binder.require(api.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
  binder.require(api.ctx_set_current, "cuCtxSetCurrent");
  binder.require(api.ctx_synchronize, "cuCtxSynchronize");
  binder.require(api.module_load_data, "cuModuleLoadData");
  binder.require(api.module_unload, "cuModuleUnload");
  binder.require(api.module_get_function, "cuModuleGetFunction");
  binder.require(api.launch_kernel, "cuLaunchKernel");
  binder.require(api.mem_alloc, "cuMemAlloc_v2");
  binder.require(api.mem_free, "cuMemFree_v2");
  binder.require(api.mem_alloc_host, "cuMemAllocHost_v2");
  binder.require(api.mem_free_host, "cuMemFreeHost");
  // Optional: without them the spin kernel gets no device address and copies are timed one per event pair.
  binder.optional(api.mem_host_alloc, "cuMemHostAlloc");
  binder.optional(api.mem_host_get_device_pointer, "cuMemHostGetDevicePointer_v2");
  binder.require(api.memcpy_htod, "cuMemcpyHtoD_v2");
  binder.require(api.memcpy_dtoh, "cuMemcpyDtoH_v2");
  binder.require(api.memcpy_htod_async, "cuMemcpyHtoDAsync_v2");
  binder.require(api.memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2");
  binder.require(api.memcpy_dtod_async, "cuMemcpyDtoDAsync_v2");
  binder.require(api.memset_d32, "cuMemsetD32_v2");
  binder.require(api.memset_d32_async, "cuMemsetD32Async");
  binder.require(api.stream_create, "cuStreamCreate");
  binder.require(api.stream_synchronize, "cuStreamSynchronize");
  binder.optional(api.stream_query, "cuStreamQuery");
  binder.require(api.stream_destroy, "cuStreamDestroy_v2");
  binder.require(api.event_create, "cuEventCreate");
  binder.require(api.event_record, "cuEventRecord");
  binder.require(api.event_synchronize, "cuEventSynchronize");
  binder.require(api.event_elapsed_time, "cuEventElapsedTime");
  binder.require(api.event_destroy, "cuEventDestroy_v2");
  binder.require(api.mem_get_info, "cuMemGetInfo_v2");
  binder.require(api.device_can_access_peer, "cuDeviceCanAccessPeer");
  binder.require(api.ctx_enable_peer_access, "cuCtxEnablePeerAccess");
  binder.require(api.ctx_disable_peer_access, "cuCtxDisablePeerAccess");
  binder.require(api.memcpy_peer_async, "cuMemcpyPeerAsync");
  missing = binder.missing();
  return api;
}

util::Expected<Api> resolve(system::DynamicLibrary& library) {
  std::vector<std::string> missing;
  Api api = bind_all(library, missing);
  if (!missing.empty()) {
    return util::Error::internal("the CUDA driver library does not export " + util::join(missing, ", "));
  }
  return api;
}

std::string cuda_error_name(CUresult result) {
  switch (result) {
    case cuda_success:
      return "CUDA_SUCCESS";
    case cuda_error_out_of_memory:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case cuda_error_not_initialized:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case cuda_error_insufficient_driver:
      return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case cuda_error_no_device:
      return "CUDA_ERROR_NO_DEVICE";
    case cuda_error_invalid_image:
      return "CUDA_ERROR_INVALID_IMAGE";
    case cuda_error_no_binary_for_gpu:
      return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case cuda_error_ecc_uncorrectable:
      return "CUDA_ERROR_ECC_UNCORRECTABLE";
    case cuda_error_peer_access_already_enabled:
      return "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED";
    case cuda_error_peer_access_not_enabled:
      return "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED";
    case cuda_error_too_many_peers:
      return "CUDA_ERROR_TOO_MANY_PEERS";
    case cuda_error_invalid_ptx:
      return "CUDA_ERROR_INVALID_PTX";
    case cuda_error_unsupported_ptx_version:
      return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case cuda_error_illegal_address:
      return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case cuda_error_launch_timeout:
      return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case cuda_error_launch_failed:
      return "CUDA_ERROR_LAUNCH_FAILED";
    case cuda_error_nvlink_uncorrectable:
      return "CUDA_ERROR_NVLINK_UNCORRECTABLE";
    case cuda_error_assert:
      return "CUDA_ERROR_ASSERT";
    case cuda_error_hardware_stack_error:
      return "CUDA_ERROR_HARDWARE_STACK_ERROR";
    case cuda_error_illegal_instruction:
      return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
    case cuda_error_misaligned_address:
      return "CUDA_ERROR_MISALIGNED_ADDRESS";
    case cuda_error_invalid_address_space:
      return "CUDA_ERROR_INVALID_ADDRESS_SPACE";
    case cuda_error_invalid_pc:
      return "CUDA_ERROR_INVALID_PC";
    case cuda_error_system_not_ready:
      return "CUDA_ERROR_SYSTEM_NOT_READY";
    case cuda_error_system_driver_mismatch:
      return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case cuda_error_compat_not_supported_on_device:
      return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case cuda_error_unknown:
      return "CUDA_ERROR_UNKNOWN";
    default:
      return "CUDA error " + std::to_string(result);
  }
}

std::string describe_cuda_error(const Api& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.get_error_name != nullptr && api.get_error_name(result, &name) != cuda_success) name = nullptr;
  if (api.get_error_string != nullptr && api.get_error_string(result, &text) != cuda_success) text = nullptr;
  std::string out =
      (name != nullptr ? std::string(name) : cuda_error_name(result)) + " (" + std::to_string(result) + ")";
  if (text != nullptr && *text != '\0') out += ": " + std::string(text);
  return out;
}

std::string cuda_version_text(int version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace gpuenv::probe::cuda
