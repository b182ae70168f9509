// The memory test's device code (src/smoke/kernels/memtest_kernels.cuh) compiled for the CPU and run over an emulated
// grid: nobody runs these tests with a GPU, so the indexing of its 16-byte accesses, the words before the first 16-byte
// boundary and after the last whole vector, and the key that pairs the lowest wrong index with the word read there are
// checked here, on the same source text nvcc compiles. Threads run one after another: a valid schedule, since the
// kernels have no barriers and no thread reads a word another writes.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "smoke/internal/verify.hpp"

namespace memtest_emulation {

// The CUDA built-ins memtest_kernels.cuh uses, for one emulated thread at a time.
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
Dim3 blockIdx, blockDim, gridDim, threadIdx;

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
  const unsigned long long old = *address;
  *address += value;
  return old;
}
inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
  const unsigned long long old = *address;
  *address = std::min(old, value);
  return old;
}
inline unsigned pattern_word(unsigned long long index, unsigned seed) {
  return gpuenv::smoke::pattern_word(index, seed);
}

#define __device__
#define __forceinline__ inline
#include "smoke/kernels/memtest_kernels.cuh"
#undef __forceinline__
#undef __device__

/// Runs `kernel` once per thread of a grid of `blocks` x `threads`.
template <typename Kernel>
void launch(unsigned blocks, unsigned threads, Kernel kernel) {
  gridDim.x = blocks;
  blockDim.x = threads;
  for (blockIdx.x = 0; blockIdx.x < blocks; ++blockIdx.x) {
    for (threadIdx.x = 0; threadIdx.x < threads; ++threadIdx.x) kernel();
  }
}

}  // namespace memtest_emulation

namespace {

using namespace memtest_emulation;

constexpr unsigned seed = 0x6d656d31u;
constexpr unsigned sentinel = 0xDEADBEEFu;

/// The host's expectation: smoke::pattern_word of the absolute word address (memtest.cpp expected_word), or the
/// walking bit.
unsigned expected_at(const unsigned* word, unsigned mode, unsigned invert) {
  const auto address = reinterpret_cast<std::uintptr_t>(word) / 4;
  const unsigned value =
      mode == 0 ? gpuenv::smoke::pattern_word(address, seed) : 1u << static_cast<unsigned>((address + seed) & 31u);
  return value ^ invert;
}

/// A 16-byte-aligned buffer whose chunk starts `skip` words in and holds `words` words, with sentinels on both sides.
struct Chunk {
  Chunk(unsigned skip, unsigned long long count) : storage((count + 32) / 4 + 2), words(count), offset(4 + skip) {
    auto* all = reinterpret_cast<unsigned*>(storage.data());
    std::fill(all, all + storage.size() * 4, sentinel);
  }
  unsigned* data() { return reinterpret_cast<unsigned*>(storage.data()) + offset; }
  bool sentinels_intact() {
    auto* all = reinterpret_cast<unsigned*>(storage.data());
    for (std::size_t i = 0; i < storage.size() * 4; ++i) {
      if ((i < offset || i >= offset + words) && all[i] != sentinel) return false;
    }
    return true;
  }
  std::vector<uint4> storage;
  unsigned long long words;
  std::size_t offset;
};

}  // namespace

TEST_CASE("smoke: memtest kernels on an emulated grid: every word once, edges, 16-byte bulk", "[smoke][memtest]") {
  // Every start within a 16-byte vector (0..3 words in: cuMemAlloc's chunks start at 0) and word counts around the
  // vector size, with grids smaller and larger than the work, so the grid-stride loop and the edge threads both run.
  for (unsigned skip = 0; skip < 4; ++skip) {
    for (unsigned long long words : {0ull, 1ull, 2ull, 3ull, 4ull, 5ull, 7ull, 8ull, 13ull, 64ull, 1000ull, 1027ull}) {
      for (unsigned blocks : {1u, 3u}) {
        for (unsigned mode : {0u, 1u}) {
          CAPTURE(skip, words, blocks, mode);
          Chunk chunk(skip, words);
          unsigned* data = chunk.data();
          launch(blocks, 8, [&] { memtest_fill(data, words, seed, 0u, mode); });
          bool filled = true;
          for (unsigned long long i = 0; i < words; ++i) filled = filled && data[i] == expected_at(data + i, mode, 0u);
          CHECK(filled);
          CHECK(chunk.sentinels_intact());

          unsigned long long result[2] = {0, ~0ull};
          launch(blocks, 8, [&] { memtest_check(data, words, seed, 0u, result, mode); });
          CHECK(result[0] == 0);
          CHECK(result[1] == ~0ull);

          // A moving inversion reads every word once (a clean read) and leaves its complement.
          launch(blocks, 8, [&] { memtest_move(data, words, seed, 0u, result, mode); });
          CHECK(result[0] == 0);
          bool inverted = true;
          for (unsigned long long i = 0; i < words; ++i)
            inverted = inverted && data[i] == ~expected_at(data + i, mode, 0u);
          CHECK(inverted);
          CHECK(chunk.sentinels_intact());
        }
      }
    }
  }
}

TEST_CASE("smoke: memtest kernels report the lowest wrong word with the value they read there", "[smoke][memtest]") {
  for (unsigned skip = 0; skip < 4; ++skip) {
    CAPTURE(skip);
    const unsigned long long head = skip == 0 ? 0 : 4 - skip;  // words before the first 16-byte boundary
    const unsigned long long words = head + 1024 + 3;          // 256 vectors and a tail of 3
    Chunk chunk(skip, words);
    unsigned* data = chunk.data();
    launch(3, 8, [&] { memtest_fill(data, words, seed, 0u, 0u); });
    // Faults in a head word (when there is one), in the bulk and in the tail; the bulk one read by another thread.
    const std::vector<unsigned long long> faults = {head != 0 ? 0ull : 5ull, 517ull, words - 1};
    for (const unsigned long long i : faults) data[i] ^= 0x100u << i % 7;
    const unsigned long long lowest = faults.front();

    unsigned long long result[2] = {0, ~0ull};
    launch(3, 8, [&] { memtest_check(data, words, seed, 0u, result, 0u); });
    CHECK(result[0] == faults.size());
    CHECK(result[1] >> 32 == lowest);
    CHECK(static_cast<unsigned>(result[1]) == data[lowest]);  // the check leaves the word as it was

    // The moving inversion overwrites the wrong word with the complement, but reports what it read.
    const unsigned read = data[lowest];
    result[0] = 0;
    result[1] = ~0ull;
    launch(3, 8, [&] { memtest_move(data, words, seed, 0u, result, 0u); });
    CHECK(result[0] == faults.size());
    CHECK(result[1] >> 32 == lowest);
    CHECK(static_cast<unsigned>(result[1]) == read);
    CHECK(data[lowest] == ~expected_at(data + lowest, 0u, 0u));
    CHECK(chunk.sentinels_intact());
  }
}
