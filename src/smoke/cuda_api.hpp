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
using enum probe::cuda::CudaError;
using enum probe::cuda::CudaAttribute;
using probe::cuda::mem_host_devicemap;

using probe::cuda::cuda_error_name;
using probe::cuda::cuda_version_text;
using probe::cuda::describe_cuda_error;

}  // namespace gpuenv::smoke
