#pragma once
// The one libcuda table: the CUDA driver API entry points gpuenv calls (probe's driver check, smoke's tests, nccl's
// all-reduce sweep), resolved by name from a dlopen'ed libcuda (never linked) through system::SymbolBinder.
// Versioned entry points are resolved by their _v2 names (cuda.h maps cuMemAlloc to cuMemAlloc_v2, etc.).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::probe::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

/// CUresult values gpuenv reacts to (cuda.h).
enum CudaError : int {
  cuda_success = 0,
  cuda_error_invalid_value = 1,
  cuda_error_out_of_memory = 2,
  cuda_error_not_initialized = 3,
  cuda_error_insufficient_driver = 35,
  cuda_error_no_device = 100,
  cuda_error_invalid_image = 200,
  cuda_error_no_binary_for_gpu = 209,
  cuda_error_ecc_uncorrectable = 214,
  cuda_error_invalid_ptx = 218,
  cuda_error_nvlink_uncorrectable = 220,
  cuda_error_jit_compiler_not_found = 221,
  cuda_error_unsupported_ptx_version = 222,
  cuda_error_jit_compilation_disabled = 223,
  cuda_error_contained = 226,
  cuda_error_not_ready = 600,  ///< cuStreamQuery/cuEventQuery: work still pending (not an error)
  cuda_error_illegal_address = 700,
  cuda_error_launch_timeout = 702,
  cuda_error_peer_access_already_enabled = 704,
  cuda_error_peer_access_not_enabled = 705,
  cuda_error_assert = 710,
  /// cuCtxEnablePeerAccess: "the hardware resources required to enable peer access have been exhausted" (cuda.h); on
  /// systems without NVSwitch "each device can support a system-wide maximum of eight peer connections" (CUDA C++
  /// Programming Guide, Peer-to-Peer Memory Access).
  cuda_error_too_many_peers = 711,
  cuda_error_hardware_stack_error = 714,
  cuda_error_illegal_instruction = 715,
  cuda_error_misaligned_address = 716,
  cuda_error_invalid_address_space = 717,
  cuda_error_invalid_pc = 718,
  cuda_error_launch_failed = 719,
  cuda_error_tensor_memory_leak = 721,
  cuda_error_system_not_ready = 802,
  cuda_error_system_driver_mismatch = 803,
  cuda_error_compat_not_supported_on_device = 804,
  cuda_error_external_device = 911,
  cuda_error_unknown = 999,
};

/// cuMemHostAlloc flag (cuda.h CU_MEMHOSTALLOC_DEVICEMAP): map the allocation into the CUDA address space, so that
/// cuMemHostGetDevicePointer may be called on it.
inline constexpr unsigned mem_host_devicemap = 0x02;

/// Device attributes (CUdevice_attribute in cuda.h).
enum CudaAttribute : int {
  attribute_clock_rate = 13,
  attribute_multiprocessor_count = 16,
  attribute_memory_clock_rate = 36,
  attribute_global_memory_bus_width = 37,
  attribute_l2_cache_size = 38,
  attribute_compute_capability_major = 75,
  attribute_compute_capability_minor = 76,
};

/// The entry points; an optional one (marked) may be null, the rest are there once resolve() succeeded.
struct Api {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_get_version)(int*) = nullptr;
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_get_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*device_total_mem)(std::size_t*, CUdevice) = nullptr;  // cuDeviceTotalMem_v2
  CUresult (*device_get_pci_bus_id)(char*, int, CUdevice) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;  // cuDevicePrimaryCtxRelease_v2
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, std::size_t) = nullptr;  // cuMemAlloc_v2
  CUresult (*mem_free)(CUdeviceptr) = nullptr;                 // cuMemFree_v2
  CUresult (*mem_alloc_host)(void**, std::size_t) = nullptr;   // cuMemAllocHost_v2
  CUresult (*mem_free_host)(void*) = nullptr;
  /// cuMemHostAlloc (optional): pinned host memory with flags (mem_host_devicemap maps it for the device).
  CUresult (*mem_host_alloc)(void**, std::size_t, unsigned) = nullptr;
  /// cuMemHostGetDevicePointer_v2 (optional): the device address of mapped pinned host memory (flags must be 0).
  CUresult (*mem_host_get_device_pointer)(CUdeviceptr*, void*, unsigned) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, std::size_t) = nullptr;  // cuMemcpyHtoD_v2
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, std::size_t) = nullptr;        // cuMemcpyDtoH_v2
  CUresult (*memcpy_htod_async)(CUdeviceptr, const void*, std::size_t, CUstream) = nullptr;
  CUresult (*memcpy_dtoh_async)(void*, CUdeviceptr, std::size_t, CUstream) = nullptr;
  CUresult (*memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) = nullptr;
  CUresult (*memset_d32)(CUdeviceptr, unsigned, std::size_t) = nullptr;                  // cuMemsetD32_v2
  CUresult (*memset_d32_async)(CUdeviceptr, unsigned, std::size_t, CUstream) = nullptr;  // cuMemsetD32Async
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*stream_query)(CUstream) = nullptr;    ///< optional: CUDA_SUCCESS when done, CUDA_ERROR_NOT_READY while not
  CUresult (*stream_destroy)(CUstream) = nullptr;  // cuStreamDestroy_v2
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_synchronize)(CUevent) = nullptr;
  CUresult (*event_elapsed_time)(float*, CUevent, CUevent) = nullptr;
  CUresult (*event_destroy)(CUevent) = nullptr;                    // cuEventDestroy_v2
  CUresult (*mem_get_info)(std::size_t*, std::size_t*) = nullptr;  // cuMemGetInfo_v2 (free, total)
  CUresult (*device_can_access_peer)(int*, CUdevice, CUdevice) = nullptr;
  CUresult (*ctx_enable_peer_access)(CUcontext, unsigned) = nullptr;
  CUresult (*ctx_disable_peer_access)(CUcontext) = nullptr;
  CUresult (*memcpy_peer_async)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, std::size_t, CUstream) = nullptr;
};

/// Binds every entry point the library exports (the rest stay null); `missing` gets the required ones it lacks.
Api bind_all(system::DynamicLibrary& library, std::vector<std::string>& missing);

/// Resolves every entry point; the error lists the symbols the library lacks (a driver older than CUDA 4 or not
/// libcuda).
util::Expected<Api> resolve(system::DynamicLibrary& library);

/// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", through cuGetErrorName/String when available, else a built-in table.
std::string describe_cuda_error(const Api& api, CUresult result);
/// The built-in name of a CUresult ("CUDA_ERROR_NO_DEVICE"), or "CUDA error N".
std::string cuda_error_name(CUresult result);
/// 12080 -> "12.8".
std::string cuda_version_text(int version);

}  // namespace gpuenv::probe::cuda
