#pragma once
// The memory test's device code (`gpuenv smoke --memtest`, src/smoke/memtest.cpp): included by smoke_kernels.cu, whose
// extern "C" kernels call memtest_fill, memtest_check and memtest_move, and by
// tests/smoke/smoke_memtest_kernel_test.cpp, which compiles this same text for the CPU (__device__ defined empty, the
// CUDA built-ins emulated) and runs it over an emulated grid: the indexing, the edges and the error key are tested
// without a GPU. So: only built-ins that test emulates (blockIdx, blockDim, gridDim, threadIdx, uint4, make_uint4, min,
// atomicAdd, atomicMin), and pattern_word declared before the include.

// The memory test's word at absolute device word address `address`: mode 0 a hash of the address (pattern_word), mode
// 1 a walking bit, 1 << ((address + seed) mod 32). The address, not the index within one allocation: chunks then hold
// different patterns, so an address fault that aliases one chunk onto another shows.
__device__ __forceinline__ unsigned memtest_word(unsigned long long address, unsigned seed, unsigned mode) {
  return mode == 0 ? pattern_word(address, seed) : 1u << static_cast<unsigned>((address + seed) & 31ull);
}

__device__ __forceinline__ unsigned long long word_address(const unsigned* base, unsigned long long i) {
  return reinterpret_cast<unsigned long long>(base) / 4 + i;
}

// How a memory test kernel walks one chunk: 16-byte (uint4) accesses for the bulk, so the test moves data at DRAM
// bandwidth (4-byte accesses issue four times the memory instructions for the same bytes), and single words for the
// edges: the 0..3 words before the first 16-byte boundary (none for cuMemAlloc's 256-byte-aligned chunks; handled so a
// 4-byte-aligned pointer is still right) and the 0..3 after the last whole vector (a chunk of words % 4 != 0).
struct MemtestSpan {
  unsigned long long head;     // words before the first 16-byte-aligned word
  unsigned long long vectors;  // whole uint4s, starting at word `head`
  unsigned long long tail;     // the first word after them; words [tail, words) are the tail
};

__device__ __forceinline__ MemtestSpan memtest_span(const unsigned* base, unsigned long long words) {
  const unsigned long long misaligned = (reinterpret_cast<unsigned long long>(base) & 15ull) / 4;  // 0..3
  const unsigned long long head = misaligned == 0 ? 0ull : min(words, 4ull - misaligned);
  const unsigned long long vectors = (words - head) / 4;
  return MemtestSpan{head, vectors, head + vectors * 4};
}

// Calls word = visit(i, word) on every word i of `data` exactly once, in one thread of the grid: vector v by thread
// v mod (threads in the grid), the edge words by threads 0..5 (memtest.cpp launches 256 a block), so no two threads
// touch one word and no ordering between threads is needed. Load: the word passed in is the one read from memory (else
// 0); Store: the word returned is written back. A grid-stride loop in address order, so a pass sweeps the chunk from
// its start to its end.
template <bool Load, bool Store, typename Visit>
__device__ __forceinline__ void memtest_sweep(unsigned* data, unsigned long long words, Visit visit) {
  const MemtestSpan span = memtest_span(data, words);
  const unsigned long long thread = blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  const unsigned long long threads = 1ull * gridDim.x * blockDim.x;
  uint4* const vectors = reinterpret_cast<uint4*>(data + span.head);  // 16-byte aligned by memtest_span
  for (unsigned long long v = thread; v < span.vectors; v += threads) {
    const unsigned long long i = span.head + 4 * v;
    uint4 word = Load ? vectors[v] : make_uint4(0u, 0u, 0u, 0u);
    word.x = visit(i, word.x);
    word.y = visit(i + 1, word.y);
    word.z = visit(i + 2, word.z);
    word.w = visit(i + 3, word.w);
    if (Store) vectors[v] = word;
  }
  const unsigned long long edges = span.head + (words - span.tail);  // at most 6
  if (thread < edges) {
    const unsigned long long i = thread < span.head ? thread : span.tail + (thread - span.head);
    const unsigned word = visit(i, Load ? data[i] : 0u);
    if (Store) data[i] = word;
  }
}

// Adds this thread's count of wrong words to result[0] and its lowest wrong index i, with the word it read there, to
// result[1] as the key (i << 32) | observed by atomicMin (the caller starts them at 0 and ~0). Why one key: each word
// is read by one thread once per launch, so keys with different indices never tie and the smallest key is the lowest
// wrong index together with what was read there; two separate atomics (index, then value) could pair one thread's
// index with another's value. The host keeps every chunk below 2^32 words (memtest.cpp max_chunk_bytes), so i fits the
// high half. One atomic pair per thread that found any: errors are rare.
__device__ __forceinline__ void memtest_report(unsigned long long* result, unsigned long long wrong,
                                               unsigned long long first, unsigned first_observed) {
  if (wrong != 0) {
    atomicAdd(&result[0], wrong);
    atomicMin(&result[1], (first << 32) | first_observed);
  }
}

// Memory test writer: word i becomes memtest_word(address of word i, seed, mode) ^ invert (invert 0xFFFFFFFF flips
// every bit).
__device__ __forceinline__ void memtest_fill(unsigned* out, unsigned long long words, unsigned seed, unsigned invert,
                                             unsigned mode) {
  memtest_sweep<false, true>(out, words, [&](unsigned long long i, unsigned) {
    return memtest_word(word_address(out, i), seed, mode) ^ invert;
  });
}

// Memory test verifier: counts the words that differ from the writer's pattern into result[0] and keeps the lowest
// differing index and the word read there in result[1] (memtest_report).
__device__ __forceinline__ void memtest_check(const unsigned* in, unsigned long long words, unsigned seed,
                                              unsigned invert, unsigned long long* result, unsigned mode) {
  unsigned long long wrong = 0, first = ~0ull;
  unsigned first_observed = 0;
  // Store is false: nothing is written through the pointer made non-const for the shared sweep.
  memtest_sweep<true, false>(const_cast<unsigned*>(in), words, [&](unsigned long long i, unsigned observed) {
    if (observed != (memtest_word(word_address(in, i), seed, mode) ^ invert)) {
      ++wrong;
      if (i < first) {
        first = i;
        first_observed = observed;
      }
    }
    return observed;
  });
  memtest_report(result, wrong, first, first_observed);
}

// Moving inversions (memtest86's test, per word): check that word i holds the pattern ^ invert, then write its
// complement, so every cell goes through both values right after being read. The word read is recorded before it is
// overwritten: a host re-read afterwards would see the complement. Each word is read and written by one thread only
// (memtest_sweep), so no ordering between threads is needed.
__device__ __forceinline__ void memtest_move(unsigned* data, unsigned long long words, unsigned seed, unsigned invert,
                                             unsigned long long* result, unsigned mode) {
  unsigned long long wrong = 0, first = ~0ull;
  unsigned first_observed = 0;
  memtest_sweep<true, true>(data, words, [&](unsigned long long i, unsigned observed) {
    const unsigned expected = memtest_word(word_address(data, i), seed, mode) ^ invert;
    if (observed != expected) {
      ++wrong;
      if (i < first) {
        first = i;
        first_observed = observed;
      }
    }
    return ~expected;
  });
  memtest_report(result, wrong, first, first_observed);
}
