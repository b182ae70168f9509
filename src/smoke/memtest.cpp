// `--memtest`: write patterns over a fraction of the free GPU memory with a kernel and verify them with another, so
// the data never crosses PCIe. Three passes: an address hash (catches address aliasing), its inverse (every bit in
// both states) and a second hash.

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "smoke/step.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

namespace {

struct Pass {
  const char* name;
  unsigned seed;
  unsigned invert;
};
constexpr Pass passes[] = {
    {"address hash", 0x6d656d31u, 0u}, {"inverted address hash", 0x6d656d31u, ~0u}, {"second hash", 0x6d656d32u, 0u}};

/// The first wrong word found, for the message.
struct MemtestError {
  const Pass* pass = nullptr;
  std::uint64_t words = 0;   ///< wrong words in all passes
  std::uint64_t offset = 0;  ///< byte offset of the first one within the tested region
  std::uint32_t expected = 0;
  std::uint32_t observed = 0;
};

std::string hex(std::uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace

StepOutcome run_memtest(Gpu& gpu) {
  StepOutcome out;
  const CudaApi& api = gpu.api;
  std::size_t free_bytes = 0, total_bytes = 0;
  check(api.mem_get_info(&free_bytes, &total_bytes), "cuMemGetInfo_v2");
  const auto target = static_cast<std::size_t>(static_cast<double>(free_bytes) * gpu.options.memtest_fraction) / 4 * 4;

  const DeviceBuffer counters(gpu, 2 * sizeof(unsigned long long), "cuMemAlloc_v2 (memtest counters)");
  // Chunks of at most 1 GiB until the target; running out of memory early just tests less (and says so).
  std::vector<std::unique_ptr<DeviceBuffer>> chunks;
  std::size_t allocated = 0;
  bool short_of_target = false;
  while (allocated + 4 <= target) {
    const std::size_t bytes = std::min<std::size_t>(1024 * mib, target - allocated) / 4 * 4;
    CUresult result = cuda_success;
    std::unique_ptr<DeviceBuffer> chunk = DeviceBuffer::try_allocate(gpu, bytes, result);
    if (result == cuda_error_out_of_memory && !chunks.empty()) {
      short_of_target = true;
      break;
    }
    check(result, "cuMemAlloc_v2 (memtest, " + size_text(bytes) + ")");
    chunks.push_back(std::move(chunk));
    allocated += bytes;
  }
  if (chunks.empty()) {
    out.findings.push_back(Finding{"smoke.memtest",
                                   Status::skip,
                                   "memtest skipped: " + format("%.2g", gpu.options.memtest_fraction) + " of " +
                                       size_text(free_bytes) + " free is too little to test",
                                   {},
                                   {}});
    return out;
  }

  const unsigned blocks = static_cast<unsigned>(std::max(1, gpu.info.sm_count) * 4);
  MemtestError error;
  const auto begin = std::chrono::steady_clock::now();
  for (const Pass& pass : passes) {
    unsigned seed = pass.seed, invert = pass.invert;
    for (const auto& chunk : chunks) {
      CUdeviceptr pointer = chunk->get();
      unsigned long long words = chunk->size() / 4;
      void* params[] = {&pointer, &words, &seed, &invert};
      check(api.launch_kernel(gpu.memtest_fill, blocks, 1, 1, 256, 1, 1, 0, gpu.stream, params, nullptr),
            "cuLaunchKernel(smoke_fill_pattern)");
    }
    check(api.stream_synchronize(gpu.stream), "cuStreamSynchronize (memtest write)");
    std::size_t chunk_offset = 0;
    for (const auto& chunk : chunks) {
      CUdeviceptr pointer = chunk->get(), counts = counters.get();
      unsigned long long words = chunk->size() / 4;
      const unsigned long long initial[2] = {0, ~0ull};
      check(api.memcpy_htod(counts, initial, sizeof initial), "cuMemcpyHtoD_v2 (memtest counters)");
      void* params[] = {&pointer, &words, &seed, &invert, &counts};
      check(api.launch_kernel(gpu.memtest_check, blocks, 1, 1, 256, 1, 1, 0, gpu.stream, params, nullptr),
            "cuLaunchKernel(smoke_check_pattern)");
      check(api.stream_synchronize(gpu.stream), "cuStreamSynchronize (memtest verify)");
      unsigned long long result[2] = {0, 0};
      check(api.memcpy_dtoh(result, counts, sizeof result), "cuMemcpyDtoH_v2 (memtest counters)");
      if (result[0] != 0 && result[1] < words) {
        if (error.words == 0) {
          error.pass = &pass;
          error.offset = chunk_offset + result[1] * 4;
          error.expected = pattern_word(result[1], seed) ^ invert;
          check(api.memcpy_dtoh(&error.observed, pointer + result[1] * 4, 4), "cuMemcpyDtoH_v2 (memtest)");
        }
        error.words += result[0];
      }
      chunk_offset += chunk->size();
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const double moved = static_cast<double>(allocated) * 2 * std::size(passes);  // each pass writes and reads
  out.metrics.push_back(Metric{"memtest", "GB/s", summarize({gigabytes_per_second(moved, seconds)}), std::nullopt,
                               static_cast<double>(allocated)});
  const std::string tested = std::to_string(std::size(passes)) + " patterns over " + size_text(allocated) + " (" +
                             format("%.0f", 100.0 * static_cast<double>(allocated) / static_cast<double>(free_bytes)) +
                             "% of " + size_text(free_bytes) + " free, " + size_text(total_bytes) + " total" +
                             (short_of_target ? "; allocation stopped early: out of memory" : "") + ", " +
                             format("%.2f", seconds) + " s)";
  if (error.words != 0) {
    out.findings.push_back(Finding{
        "smoke.memtest",
        Status::fail,
        "GPU memory returned wrong data: " + std::to_string(error.words) + " wrong words after writing " + tested +
            "; the first in the " + error.pass->name + " pass at byte offset " + hex(error.offset) +
            " of the tested region: expected " + hex(error.expected) + ", read " + hex(error.observed),
        "run `gpuenv doctor` (ECC, retired pages, row remapping) and `nvidia-smi -q -d ECC,ROW_REMAPPER`; reset the "
        "GPU and rerun; if errors repeat, drain the node and replace the GPU",
        {}});
  } else {
    out.findings.push_back(
        Finding{"smoke.memtest", Status::pass, "wrote and verified " + tested + ": no wrong words", {}, {}});
  }
  return out;
}

}  // namespace gpuenv::smoke
