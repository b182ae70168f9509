#pragma once
// The cuBLAS entry points smoke uses, resolved by name from the node's own libcublas opened with dlopen (never
// linked). cuBLAS carries its own CUDA runtime, which picks up the primary context smoke makes current.

#include <memory>
#include <string>
#include <vector>

#include "smoke/cuda_api.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::smoke {

using CublasHandle = struct cublasContext*;

/// cublasStatus_t values (cublas_api.h).
enum CublasStatus : int {
  cublas_success = 0,
  cublas_not_initialized = 1,
  cublas_alloc_failed = 3,
  cublas_invalid_value = 7,
  cublas_arch_mismatch = 8,
  cublas_mapping_error = 11,
  cublas_execution_failed = 13,
  cublas_internal_error = 14,
  cublas_not_supported = 15,
  cublas_license_error = 16,
};

/// Constants of the GEMM calls (cublas_api.h, library_types.h).
enum CublasConstant : int {
  cublas_op_n = 0,
  cuda_r_32f = 0,
  cuda_r_16f = 2,
  cuda_r_16bf = 14,
  cublas_compute_32f = 68,
  cublas_gemm_default = -1,
  library_major_version = 0,
  library_minor_version = 1,
  library_patch_level = 2,
};

struct CublasApi {
  int (*create)(CublasHandle*) = nullptr;  // cublasCreate_v2
  int (*destroy)(CublasHandle) = nullptr;  // cublasDestroy_v2
  int (*set_stream)(CublasHandle, CUstream) = nullptr;
  int (*get_property)(int, int*) = nullptr;
  int (*sgemm)(CublasHandle, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
               float*, int) = nullptr;  // cublasSgemm_v2
  int (*gemm_ex)(CublasHandle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                 const void*, void*, int, int, int, int) = nullptr;
  const char* (*status_name)(int) = nullptr;  // cublasGetStatusName (CUDA 11.4+; optional)
};

/// A loaded libcublas: the library stays open as long as any copy of this lives.
struct Cublas {
  std::shared_ptr<system::DynamicLibrary> library;
  CublasApi api;
  std::string path;     ///< what was opened (soname or path)
  std::string version;  ///< "13.0.2" from cublasGetProperty
};

/// Where to look for cuBLAS, best first: for each CUDA major from the driver's down to 11, the soname (the loader's
/// search path) and then the toolkit directories /usr/local/cuda/lib64 and /usr/local/cuda-X.Y/lib64 (newest first)
/// that hold it. A cuBLAS newer than the driver's CUDA major cannot initialise, so it is never a candidate.
std::vector<std::string> cublas_candidates(system::System& system, int driver_cuda_major);

/// Opens the first candidate that loads and exports the entry points; the error lists every attempt.
util::Expected<Cublas> load_cublas(system::System& system, const std::vector<std::string>& candidates);

/// "CUBLAS_STATUS_NOT_INITIALIZED (1)".
std::string describe_cublas_status(const CublasApi& api, int status);

}  // namespace gpuenv::smoke
