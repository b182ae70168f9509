#pragma once
// Internal to smoke: buffers filled and checked by the GPU itself (issue 23 item 12), so that verifying a copy or a
// matmul costs no readback through PCIe and no pass over the data on one host core. Each helper falls back to the host
// (readback and smoke/verify.cpp) when the kernels are not loaded (smoke.kernels skipped).

#include <cstdint>

#include "smoke/internal/step.hpp"
#include "smoke/internal/verify.hpp"

namespace gpuenv::smoke {

/// Blocks of 256 threads for a grid-stride kernel over a whole buffer: four per SM, at least one.
unsigned grid_stride_blocks(const Gpu& gpu);

/// Writes the copy pattern (pattern_word(i, seed)) into `words` 32-bit words at `buffer`, on the GPU's stream
/// (smoke_fill_words; without kernels, an upload of a host-made pattern).
void fill_words(Gpu& gpu, CUdeviceptr buffer, std::size_t words, std::uint32_t seed);

/// Compares `words` words at `buffer` with the copy pattern, on the GPU (smoke_check_words), and returns the count and
/// the first wrong word; synchronises the stream. Without kernels: a readback checked on the host.
PatternCheck check_words(Gpu& gpu, CUdeviceptr buffer, std::size_t words, std::uint32_t seed);

/// The two 64-bit result words of a counting kernel (count, (lowest index << 32) | the word read there), as the host
/// reads them back.
struct WordCount {
  unsigned long long wrong = 0;
  unsigned long long key = ~0ull;
  std::uint64_t first_index() const { return key >> 32; }
  std::uint32_t first_observed() const { return static_cast<std::uint32_t>(key); }
};

/// Queues a bitwise comparison of `words` words at `observed` with `expected` (smoke_compare_words) whose result lands
/// in the two words at `result` (which the caller set to 0 and ~0); requires the kernels.
void queue_compare_words(Gpu& gpu, CUdeviceptr observed, CUdeviceptr expected, std::size_t words, CUdeviceptr result);

}  // namespace gpuenv::smoke
