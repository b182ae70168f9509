// `--memtest`: write patterns over a fraction of the free GPU memory with a kernel and verify them with another, so
// the data never crosses PCIe. Every pattern is a function of the word's absolute device address, and all chunks are
// written before any is read back, so an address fault that aliases one chunk onto another shows. Five passes: an
// address hash, moving inversions of it (read each word, write its complement, and back: every bit in both states
// right after a read), walking ones and walking zeros (one bit per word, its position moving with the address), and
// a second hash. The kernels report, per launch, how many words were wrong and the lowest wrong index together with
// the word they read there (memtest_kernels.cuh memtest_report); the host keeps the count per pass.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>

#include "smoke/internal/step.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

namespace {

constexpr unsigned hash_mode = 0;     // the kernels' memtest_word: pattern_word(address, seed)
constexpr unsigned walking_mode = 1;  // 1 << ((address + seed) mod 32)

struct Pass {
  const char* name;
  unsigned seed;
  unsigned mode;
  unsigned invert;
  bool moving;  ///< after the write: read each word and write its complement, then back (moving inversions)
};
constexpr Pass passes[] = {{"address hash", 0x6d656d31u, hash_mode, 0u, false},
                           {"moving inversions", 0x6d656d33u, hash_mode, 0u, true},
                           {"walking ones", 0u, walking_mode, 0u, false},
                           {"walking zeros", 7u, walking_mode, ~0u, false},
                           {"second hash", 0x6d656d32u, hash_mode, 0u, false}};

/// The word the kernels expect at absolute word address `address` (memtest_kernels.cuh memtest_word).
std::uint32_t expected_word(const Pass& pass, std::uint64_t address, unsigned invert) {
  const std::uint32_t word = pass.mode == hash_mode ? pattern_word(address, pass.seed)
                                                    : 1u << static_cast<unsigned>((address + pass.seed) & 31u);
  return word ^ invert;
}

constexpr std::size_t pass_count = std::size(passes);

/// The wrong words of every pass, and the first one found, for the message.
struct MemtestErrors {
  std::array<std::uint64_t, pass_count> words{};  ///< wrong words read in each pass (all its verifying launches)
  const Pass* pass = nullptr;                     ///< the pass of the first wrong word (null: none)
  std::uint64_t offset = 0;                       ///< byte offset of the first one within the tested region
  std::uint32_t expected = 0;
  std::uint32_t observed = 0;  ///< as the kernel read it, before a moving inversion overwrote it
  std::uint64_t total() const {
    std::uint64_t sum = 0;
    for (const std::uint64_t count : words) sum += count;
    return sum;
  }
};

std::string hex(std::uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

/// The largest chunk: the kernels pack a wrong word's index within its chunk into the high 32 bits of one 64-bit key
/// (memtest_kernels.cuh memtest_report), so a chunk holds fewer than 2^32 words; 8 GiB is 2^31.
constexpr std::size_t max_chunk_bytes = std::size_t{8} << 30;

/// The smallest region that tests DRAM rather than the L2 cache: 4 x the L2. The check reads the chunks in the order
/// the fill wrote them, so before it reaches the last L2-sized part of the region (the only part the cache can still
/// hold) it has read at least 3 x the L2 of other addresses, which evicts it under any replacement policy; a region of
/// only a few L2 sizes (H100 50 MB, B200 126 MB) could be served from the cache and faulty DRAM would pass.
std::size_t dram_minimum_bytes(std::uint64_t l2_bytes) { return static_cast<std::size_t>(4 * l2_bytes); }

/// The share of free memory the default memory test takes: on HBM its 5 passes over 5% of an H100's 80 GB move about
/// 55 GB, tens of milliseconds; a T4 (320 GB/s) moves 10 GB in about 40 ms.
constexpr double default_fraction = 0.05;

/// The memory the test may take: `fraction` of the free memory (negative: the default, default_fraction but at least
/// 8 x the L2 cache), but never the last tenth of it (or the last GiB): other processes on the GPU keep room to
/// allocate.
std::size_t memtest_target(std::size_t free_bytes, double fraction, std::uint64_t l2_bytes) {
  const std::size_t reserve = std::min<std::size_t>(1024 * mib, free_bytes / 10);
  auto wanted =
      static_cast<std::size_t>(static_cast<double>(free_bytes) * (fraction < 0 ? default_fraction : fraction));
  if (fraction < 0) wanted = std::max<std::size_t>(wanted, static_cast<std::size_t>(8 * l2_bytes));
  return std::min(wanted, free_bytes - reserve) / 4 * 4;
}

/// Runs the passes over the chunks; `counters` holds the kernels' two result words (wrong count, and the key
/// (lowest wrong index << 32) | the word read there).
class MemtestPasses {
 public:
  MemtestPasses(Gpu& gpu, const std::vector<std::unique_ptr<DeviceBuffer>>& chunks, CUdeviceptr counters)
      : m_gpu(gpu),
        m_chunks(chunks),
        m_counters(counters),
        m_blocks(static_cast<unsigned>(std::max(1, gpu.info.sm_count) * 4)) {}

  MemtestErrors run() {
    for (const Pass& pass : passes) {
      for_each_chunk([&](CUdeviceptr pointer, unsigned long long words, std::size_t) {
        unsigned seed = pass.seed, invert = pass.invert, mode = pass.mode;
        void* params[] = {&pointer, &words, &seed, &invert, &mode};
        launch(m_gpu.memtest_fill, params, "smoke_fill_pattern");
      });
      if (pass.moving) {
        verify(pass, m_gpu.memtest_move, "smoke_move_inversion", pass.invert);   // P -> ~P
        verify(pass, m_gpu.memtest_move, "smoke_move_inversion", ~pass.invert);  // ~P -> P
      }
      verify(pass, m_gpu.memtest_check, "smoke_check_pattern", pass.invert);
    }
    return m_errors;
  }

 private:
  template <typename Body>
  void for_each_chunk(Body body) {
    std::size_t offset = 0;
    for (const auto& chunk : m_chunks) {
      body(chunk->get(), static_cast<unsigned long long>(chunk->size() / 4), offset);
      offset += chunk->size();
    }
  }

  void launch(CUfunction function, void** params, const std::string& name) {
    check(m_gpu.api.launch_kernel(function, m_blocks, 1, 1, 256, 1, 1, 0, m_gpu.stream.get(), params, nullptr),
          "cuLaunchKernel(" + name + ")");
  }

  /// Runs a checking kernel (check, or read-then-complement) over every chunk expecting the pattern ^ `invert`, and
  /// records the wrong words.
  void verify(const Pass& pass, CUfunction function, const std::string& name, unsigned invert) {
    const CudaApi& api = m_gpu.api;
    for_each_chunk([&](CUdeviceptr pointer, unsigned long long words, std::size_t offset) {
      CUdeviceptr counts = m_counters;
      const unsigned long long initial[2] = {0, ~0ull};
      check(api.memcpy_htod_async(counts, initial, sizeof initial, m_gpu.stream.get()),
            "cuMemcpyHtoDAsync_v2 (memtest counters)");
      unsigned seed = pass.seed, mode = pass.mode;
      void* params[] = {&pointer, &words, &seed, &invert, &counts, &mode};
      launch(function, params, name);
      check(api.stream_synchronize(m_gpu.stream.get()), "cuStreamSynchronize (memtest verify)");
      unsigned long long result[2] = {0, 0};
      check(api.memcpy_dtoh(result, counts, sizeof result), "cuMemcpyDtoH_v2 (memtest counters)");
      const std::uint64_t first = result[1] >> 32;
      if (result[0] == 0 || first >= words) return;
      if (m_errors.pass == nullptr) {
        // The word the kernel read, not a re-read now: a moving inversion has already written its complement.
        m_errors.pass = &pass;
        m_errors.offset = offset + first * 4;
        m_errors.expected = expected_word(pass, pointer / 4 + first, invert);
        m_errors.observed = static_cast<std::uint32_t>(result[1]);
      }
      m_errors.words[static_cast<std::size_t>(&pass - passes)] += result[0];
    });
  }

  Gpu& m_gpu;
  const std::vector<std::unique_ptr<DeviceBuffer>>& m_chunks;
  CUdeviceptr m_counters;
  unsigned m_blocks;
  MemtestErrors m_errors;
};

/// "in 2 of 5 passes (address hash 1, moving inversions 3)": which passes found wrong words, and how many each.
std::string per_pass_text(const MemtestErrors& errors) {
  std::string list;
  std::size_t failing = 0;
  for (std::size_t i = 0; i < pass_count; ++i) {
    if (errors.words[i] == 0) continue;
    list += (failing++ == 0 ? "" : ", ") + std::string(passes[i].name) + " " + std::to_string(errors.words[i]);
  }
  return "in " + std::to_string(failing) + " of " + std::to_string(pass_count) + " passes (" + list + ")";
}

}  // namespace

StepOutcome run_memtest(Gpu& gpu) {
  StepOutcome out;
  const CudaApi& api = gpu.api;
  std::size_t free_bytes = 0, total_bytes = 0;
  check(api.mem_get_info(&free_bytes, &total_bytes), "cuMemGetInfo_v2");
  const std::size_t target = memtest_target(free_bytes, gpu.options.memtest_fraction, gpu.info.l2_bytes);
  const DeviceBuffer counters(gpu, 2 * sizeof(unsigned long long), "cuMemAlloc_v2 (memtest counters)");
  // Chunks of at most options.memtest_chunk_bytes (and max_chunk_bytes) until the target; running out of memory early
  // just tests less (and says so); not even the first chunk is a skip: other processes hold the memory.
  const std::size_t chunk_bytes = std::min(gpu.options.memtest_chunk_bytes, max_chunk_bytes);
  std::vector<std::unique_ptr<DeviceBuffer>> chunks;
  std::size_t allocated = 0;
  bool short_of_target = false;
  while (allocated + 4 <= target) {
    const std::size_t bytes = std::min<std::size_t>(chunk_bytes, target - allocated) / 4 * 4;
    CUresult result = cuda_success;
    std::unique_ptr<DeviceBuffer> chunk = DeviceBuffer::try_allocate(gpu, bytes, result);
    if (result == cuda_error_out_of_memory && chunks.empty()) {
      out.findings.push_back(Finding{"smoke.memtest",
                                     Status::skip,
                                     "memtest skipped: not even a first chunk of " + size_text(bytes) +
                                         " could be allocated (out of memory; the driver reported " +
                                         size_text(free_bytes) + " free): other processes hold the GPU's memory",
                                     "run the memory test on an idle GPU (nvidia-smi lists the processes)",
                                     {}});
      return out;
    }
    if (result == cuda_error_out_of_memory) {
      short_of_target = true;
      break;
    }
    check(result, "cuMemAlloc_v2 (memtest, " + size_text(bytes) + ")");
    chunks.push_back(std::move(chunk));
    allocated += bytes;
  }
  if (chunks.empty()) {
    out.findings.push_back(
        Finding{"smoke.memtest",
                Status::skip,
                "memtest skipped: " +
                    (gpu.options.memtest_fraction < 0 ? std::string("the default share")
                                                      : format("%.2g", gpu.options.memtest_fraction)) +
                    " of " + size_text(free_bytes) + " free is too little to test",
                {},
                {}});
    return out;
  }
  const auto begin = gpu.clock->now();
  const MemtestErrors errors = MemtestPasses(gpu, chunks, counters.get()).run();
  const double seconds = seconds_between(begin, gpu.clock->now());
  // Each pass writes and reads every word; moving inversions also read and write it twice more.
  const double moved = static_cast<double>(allocated) * 2 * (std::size(passes) + 2);
  out.metrics.push_back(Metric{"memtest", "GB/s", summarize({gigabytes_per_second(moved, seconds)}), std::nullopt,
                               static_cast<double>(allocated)});
  const std::string tested = std::to_string(std::size(passes)) + " patterns over " + size_text(allocated) + " (" +
                             format("%.0f", 100.0 * static_cast<double>(allocated) / static_cast<double>(free_bytes)) +
                             "% of " + size_text(free_bytes) + " free, " + size_text(total_bytes) + " total" +
                             (short_of_target ? "; allocation stopped early: out of memory" : "") + ", " +
                             format("%.2f", seconds) + " s)";
  // A clean region the L2 could have served is a skip, not a pass: its words may never have been read from DRAM. We
  // skip rather than evict the L2 between fill and check (a scratch buffer of 2 x L2 written in between): that needs
  // memory too, which a region this small says is scarce, and a region of 4 x L2 evicts it by itself. Wrong words in
  // a small region still fail: whichever level returned them, the GPU's memory returned wrong data.
  const std::size_t dram_minimum = dram_minimum_bytes(gpu.info.l2_bytes);
  if (errors.pass != nullptr) {
    out.findings.push_back(Finding{
        "smoke.memtest",
        Status::fail,
        "GPU memory returned wrong data: " + std::to_string(errors.total()) +
            // Reads, not distinct words: a stuck bit is read wrong by every verifying launch of every pass.
            (errors.total() == 1 ? " wrong read " : " wrong reads ") + per_pass_text(errors) + " after writing " +
            tested + "; the first in the " + errors.pass->name + " pass at byte offset " + hex(errors.offset) +
            " of the tested region: expected " + hex(errors.expected) + ", read " + hex(errors.observed),
        "run `gpuenv doctor` (ECC, retired pages, row remapping) and `nvidia-smi -q -d ECC,ROW_REMAPPER`; reset the "
        "GPU and rerun; if errors repeat, drain the node and replace the GPU",
        {}});
  } else if (allocated < dram_minimum) {
    out.findings.push_back(
        Finding{"smoke.memtest",
                Status::skip,
                "memtest not judged: wrote and verified " + tested + ": no wrong words, but " + size_text(allocated) +
                    " is below 4 x the " + size_text(gpu.info.l2_bytes) + " L2 cache (" + size_text(dram_minimum) +
                    "): the patterns could have been read back from the cache, so faulty DRAM could pass",
                "raise --memtest or free GPU memory (nvidia-smi lists the processes) so that at least " +
                    size_text(dram_minimum) + " is tested",
                {}});
  } else {
    out.findings.push_back(
        Finding{"smoke.memtest",
                Status::pass,
                "wrote and verified " + tested + ": no wrong words" +
                    (gpu.info.l2_bytes != 0
                         ? " (at least 4 x the " + size_text(gpu.info.l2_bytes) + " L2 cache: read back from DRAM)"
                         : " (L2 size unknown: not checked to exceed 4 x the L2 cache)"),
                {},
                {}});
  }
  return out;
}

}  // namespace gpuenv::smoke
