#pragma once
// smoke's names for probe's libcuda table (probe/cuda_api.hpp), so that smoke's steps and nccl's sweep say CudaApi,
// CUresult and cuda_success as they always have. No entry point is bound here.

#include "probe/cuda_api.hpp"

namespace gpuenv::smoke {

using CudaApi = probe::cuda::Api;
using probe::cuda::CUcontext;
using probe::cuda::CUdevice;
using probe::cuda::CUdeviceptr;
using probe::cuda::CUevent;
using probe::cuda::CUfunction;
using probe::cuda::CUmodule;
using probe::cuda::CUresult;
using probe::cuda::CUstream;
// The enumerators one by one: `using enum` needs GCC 11, and the portable binary is built with Debian 11's GCC 10.
using probe::cuda::attribute_clock_rate;
using probe::cuda::attribute_compute_capability_major;
using probe::cuda::attribute_compute_capability_minor;
using probe::cuda::attribute_global_memory_bus_width;
using probe::cuda::attribute_l2_cache_size;
using probe::cuda::attribute_memory_clock_rate;
using probe::cuda::attribute_multiprocessor_count;
using probe::cuda::cuda_error_assert;
using probe::cuda::cuda_error_compat_not_supported_on_device;
using probe::cuda::cuda_error_contained;
using probe::cuda::cuda_error_ecc_uncorrectable;
using probe::cuda::cuda_error_external_device;
using probe::cuda::cuda_error_hardware_stack_error;
using probe::cuda::cuda_error_illegal_address;
using probe::cuda::cuda_error_illegal_instruction;
using probe::cuda::cuda_error_insufficient_driver;
using probe::cuda::cuda_error_invalid_address_space;
using probe::cuda::cuda_error_invalid_image;
using probe::cuda::cuda_error_invalid_pc;
using probe::cuda::cuda_error_invalid_ptx;
using probe::cuda::cuda_error_invalid_value;
using probe::cuda::cuda_error_jit_compilation_disabled;
using probe::cuda::cuda_error_jit_compiler_not_found;
using probe::cuda::cuda_error_launch_failed;
using probe::cuda::cuda_error_launch_timeout;
using probe::cuda::cuda_error_misaligned_address;
using probe::cuda::cuda_error_no_binary_for_gpu;
using probe::cuda::cuda_error_no_device;
using probe::cuda::cuda_error_not_initialized;
using probe::cuda::cuda_error_not_ready;
using probe::cuda::cuda_error_nvlink_uncorrectable;
using probe::cuda::cuda_error_out_of_memory;
using probe::cuda::cuda_error_peer_access_already_enabled;
using probe::cuda::cuda_error_peer_access_not_enabled;
using probe::cuda::cuda_error_system_driver_mismatch;
using probe::cuda::cuda_error_system_not_ready;
using probe::cuda::cuda_error_tensor_memory_leak;
using probe::cuda::cuda_error_too_many_peers;
using probe::cuda::cuda_error_unknown;
using probe::cuda::cuda_error_unsupported_ptx_version;
using probe::cuda::cuda_success;
using probe::cuda::CudaAttribute;
using probe::cuda::CudaError;
using probe::cuda::mem_host_devicemap;

using probe::cuda::cuda_error_name;
using probe::cuda::cuda_version_text;
using probe::cuda::describe_cuda_error;

}  // namespace gpuenv::smoke
