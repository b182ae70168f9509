// Buffers filled and checked on the GPU: the copy pattern written by smoke_fill_words and compared by
// smoke_check_words, two buffers compared word for word by smoke_compare_words (kernels/smoke_kernels.cu).

#include "smoke/internal/device_check.hpp"

#include <algorithm>
#include <vector>

namespace gpuenv::smoke {

unsigned grid_stride_blocks(const Gpu& gpu) { return static_cast<unsigned>(std::max(1, gpu.info.sm_count) * 4); }

void fill_words(Gpu& gpu, CUdeviceptr buffer, std::size_t words, std::uint32_t seed) {
  if (gpu.fill_words == nullptr) {  // no kernels: make the pattern here and upload it (synchronously)
    std::vector<std::uint32_t> host(words);
    fill_pattern(host, seed);
    check(gpu.api.memcpy_htod_async(buffer, host.data(), words * 4, gpu.stream.get()),
          "cuMemcpyHtoDAsync_v2 (pattern)");
    check(gpu.api.stream_synchronize(gpu.stream.get()), "cuStreamSynchronize (pattern)");
    return;
  }
  unsigned long long count = words;
  unsigned pattern_seed = seed;
  void* params[] = {&buffer, &count, &pattern_seed};
  check(gpu.api.launch_kernel(gpu.fill_words, grid_stride_blocks(gpu), 1, 1, 256, 1, 1, 0, gpu.stream.get(), params,
                              nullptr),
        "cuLaunchKernel(smoke_fill_words)");
}

PatternCheck check_words(Gpu& gpu, CUdeviceptr buffer, std::size_t words, std::uint32_t seed) {
  if (gpu.check_words == nullptr) {  // no kernels: read it back and check it here
    std::vector<std::uint32_t> host(words);
    check(gpu.api.stream_synchronize(gpu.stream.get()), "cuStreamSynchronize (verification)");
    check(gpu.api.memcpy_dtoh(host.data(), buffer, words * 4), "cuMemcpyDtoH_v2 (verification)");
    return check_pattern(host, seed);
  }
  const DeviceBuffer result(gpu, 2 * sizeof(unsigned long long), "cuMemAlloc_v2 (verification counters)");
  const unsigned long long initial[2] = {0, ~0ull};
  check(gpu.api.memcpy_htod_async(result.get(), initial, sizeof initial, gpu.stream.get()),
        "cuMemcpyHtoDAsync_v2 (verification counters)");
  unsigned long long count = words;
  unsigned pattern_seed = seed;
  CUdeviceptr counters = result.get();
  void* params[] = {&buffer, &count, &pattern_seed, &counters};
  check(gpu.api.launch_kernel(gpu.check_words, grid_stride_blocks(gpu), 1, 1, 256, 1, 1, 0, gpu.stream.get(), params,
                              nullptr),
        "cuLaunchKernel(smoke_check_words)");
  check(gpu.api.stream_synchronize(gpu.stream.get()), "cuStreamSynchronize (verification)");
  WordCount found;
  check(gpu.api.memcpy_dtoh(&found, result.get(), sizeof found), "cuMemcpyDtoH_v2 (verification counters)");
  PatternCheck out;
  out.mismatches = found.wrong;
  if (found.wrong != 0 && found.first_index() < words) {
    out.first_index = found.first_index();
    out.first_expected = pattern_word(out.first_index, seed);
    out.first_observed = found.first_observed();
  }
  return out;
}

void queue_compare_words(Gpu& gpu, CUdeviceptr observed, CUdeviceptr expected, std::size_t words, CUdeviceptr result) {
  unsigned long long count = words;
  void* params[] = {&observed, &expected, &count, &result};
  check(gpu.api.launch_kernel(gpu.compare_words, grid_stride_blocks(gpu), 1, 1, 256, 1, 1, 0, gpu.stream.get(), params,
                              nullptr),
        "cuLaunchKernel(smoke_compare_words)");
}

}  // namespace gpuenv::smoke
