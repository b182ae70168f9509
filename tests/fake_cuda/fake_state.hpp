#pragma once
// What the fake libcuda's two files (fake_cuda.cpp: driver API; fake_cublas.cpp: cuBLAS) share: the configuration
// read from GPUENV_FAKE_CUDA, the GEMM bookkeeping and the 16-bit float decoders.

#include <atomic>
#include <string>

namespace fake_cuda {

/// The value of `key` in the configuration as an integer (0x.. allowed), or `fallback` when it is absent.
long long number(const std::string& key, long long fallback);
/// The value of `key` in the configuration, or `fallback` when it is absent.
std::string text(const std::string& key, const std::string& fallback);

/// The last kernel this thread launched was a tensor GEMM: the next cuEventElapsedTime reads wmma_elapsed_ms.
extern thread_local bool t_tensor_kernel_timed;
/// GEMM launches (kernels and cuBLAS) since the library loaded, never reset.
extern std::atomic<int> g_all_gemm_launches;

float half_to_float(unsigned short bits);
float bf16_to_float(unsigned short bits);

}  // namespace fake_cuda
