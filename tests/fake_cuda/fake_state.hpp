#pragma once
// What the fake libcuda's two files (fake_cuda.cpp: driver API; fake_cublas.cpp: cuBLAS) share: the configuration
// read from GPUENV_FAKE_CUDA, the GEMM bookkeeping and the 16-bit float decoders.

#include <atomic>
#include <cstdint>
#include <cstring>
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

/// FNV-1a over the `count` values `load(p, i)` reads: gemm_memoize keys a GEMM by its operands' values, so the same
/// operands on another GPU (or buffer) reuse the first result.
template <typename Load>
std::uint64_t operand_hash(const void* p, std::size_t count, Load load) {
  std::uint64_t hash = 14695981039346656037ull;
  for (std::size_t i = 0; i < count; ++i) {
    const float value = load(p, static_cast<int>(i));
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, 4);
    hash = (hash ^ bits) * 1099511628211ull;
  }
  return hash;
}

}  // namespace fake_cuda
