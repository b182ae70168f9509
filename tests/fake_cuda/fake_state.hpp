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

/// The last kernel this thread launched ("smoke_hgemm_wmma", "cublas", ...): cuEventRecord stores it in the event, and
/// cuEventElapsedTime times an interval by the kernel that ended it (wmma_elapsed_ms, stream_elapsed_ms).
extern thread_local std::string t_last_kernel;
/// GEMM launches (kernels and cuBLAS) since the library loaded, never reset.
extern std::atomic<int> g_all_gemm_launches;

/// A GEMM launch (kernel or cuBLAS) sleeping gemm_sleep_ms: counts the launches in flight at once, across GPUs.
void gemm_sleep();

float half_to_float(unsigned short bits);
float bf16_to_float(unsigned short bits);

}  // namespace fake_cuda
