// gpuenv smoke kernels. Compiled by nvcc into one fatbin (src/CMakeLists.txt), embedded as bytes and loaded
// through the CUDA driver API (cuModuleLoadData); no cudart. Every kernel is extern "C" so the runner finds it
// by its plain name. Signatures must match the launches in src/smoke/gemm.cpp and src/smoke/memtest.cpp, and
// tests/fake_cuda/fake_cuda.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

// The copy pattern: a 32-bit hash of the word index and a seed (same function as smoke::pattern_word on the CPU).
__device__ __forceinline__ unsigned pattern_word(unsigned long long index, unsigned seed) {
  unsigned long long x = index * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<unsigned>(x);
}

// The memory test's word at absolute device word address `address`: mode 0 a hash of the address (pattern_word), mode
// 1 a walking bit, 1 << ((address + seed) mod 32). The address, not the index within one allocation: chunks then hold
// different patterns, so an address fault that aliases one chunk onto another shows.
__device__ __forceinline__ unsigned memtest_word(unsigned long long address, unsigned seed, unsigned mode) {
  return mode == 0 ? pattern_word(address, seed) : 1u << static_cast<unsigned>((address + seed) & 31ull);
}

__device__ __forceinline__ unsigned long long word_address(const unsigned* base, unsigned long long i) {
  return reinterpret_cast<unsigned long long>(base) / 4 + i;
}

// Adds this thread's count of wrong words and lowest wrong index to result[0] and result[1] (the caller starts them
// at 0 and ~0). One atomic pair per thread that found any: errors are rare.
__device__ __forceinline__ void memtest_report(unsigned long long* result, unsigned long long wrong,
                                               unsigned long long first) {
  if (wrong != 0) {
    atomicAdd(&result[0], wrong);
    atomicMin(&result[1], first);
  }
}

// Memory test writer: word i becomes memtest_word(address of word i, seed, mode) ^ invert (invert 0xFFFFFFFF flips
// every bit).
extern "C" __global__ void smoke_fill_pattern(unsigned* out, unsigned long long words, unsigned seed, unsigned invert,
                                              unsigned mode) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < words;
       i += 1ull * gridDim.x * blockDim.x) {
    out[i] = memtest_word(word_address(out, i), seed, mode) ^ invert;
  }
}

// Memory test verifier: counts the words that differ from the writer's pattern into result[0] and keeps the lowest
// differing index in result[1].
extern "C" __global__ void smoke_check_pattern(const unsigned* in, unsigned long long words, unsigned seed,
                                               unsigned invert, unsigned long long* result, unsigned mode) {
  unsigned long long wrong = 0, first = ~0ull;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < words;
       i += 1ull * gridDim.x * blockDim.x) {
    if (in[i] != (memtest_word(word_address(in, i), seed, mode) ^ invert)) {
      ++wrong;
      first = i < first ? i : first;
    }
  }
  memtest_report(result, wrong, first);
}

// Moving inversions (memtest86's test, per word): check that word i holds the pattern ^ invert, then write its
// complement, so every cell goes through both values right after being read. Each word is read and written by one
// thread only, so no ordering between threads is needed.
extern "C" __global__ void smoke_move_inversion(unsigned* data, unsigned long long words, unsigned seed,
                                                unsigned invert, unsigned long long* result, unsigned mode) {
  unsigned long long wrong = 0, first = ~0ull;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < words;
       i += 1ull * gridDim.x * blockDim.x) {
    const unsigned expected = memtest_word(word_address(data, i), seed, mode) ^ invert;
    if (data[i] != expected) {
      ++wrong;
      first = i < first ? i : first;
    }
    data[i] = ~expected;
  }
  memtest_report(result, wrong, first);
}

// Copy timing (nvbandwidth's method): one thread holds the stream until the host sets *release, so the copies queued
// behind it start back to back with no launch gaps between them. `release` and `timed_out` point into mapped pinned
// host memory (cuMemHostAlloc DEVICEMAP), addressed by the device pointer cuMemHostGetDevicePointer gave: no reliance
// on unified addressing. %globaltimer (ns) bounds the wait: a host that never releases the flag costs `timeout_ns`,
// not a hang. Giving up is recorded in *timed_out (the host zeroes it before the launch and reads it once the queue
// ran): the copies then started while the host was still queueing them, and the host discards that sample.
extern "C" __global__ void smoke_spin_wait(volatile const unsigned* release, volatile unsigned* timed_out,
                                           unsigned long long timeout_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*release == 0 && now - start < timeout_ns);
  if (*release == 0) {  // read again: a release that came with the timeout still had every copy queued
    *timed_out = 1;
    __threadfence_system();  // visible to the host before the copies behind this kernel complete
  }
}

// FP32 SIMT GEMM, row-major: C[M,N] = A[M,K] * B[K,N]. 16x16 thread block, 64x64 tile, 4x4 outputs per thread.
// M, N multiples of 64 and K a multiple of 16 (the runner only uses such sizes).
extern "C" __global__ void __launch_bounds__(256) smoke_sgemm(const float* A, const float* B, float* C, int M, int N,
                                                               int K) {
  __shared__ float As[16][64 + 1];
  __shared__ float Bs[16][64];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  float acc[4][4] = {};
  const int tid = ty * 16 + tx;
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = tid; i < 64 * 16; i += 256) {
      const int r = i / 16, c = i % 16;  // A tile: 64 rows x 16 cols
      As[c][r] = A[(row0 + r) * 1ll * K + k0 + c];
      const int br = i / 64, bc = i % 64;  // B tile: 16 rows x 64 cols
      Bs[br][bc] = B[(k0 + br) * 1ll * N + col0 + bc];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) C[(row0 + ty + 16 * i) * 1ll * N + col0 + tx + 16 * j] = acc[i][j];
}

// Tensor-core GEMM with WMMA 16x16x16 fragments, FP32 accumulate. Row-major A[M,K], B[K,N] (16-bit), C[M,N] FP32.
// Block = 8 warps (256 threads) computing a 128x128 tile, K in steps of 32 staged through shared memory with 16-byte
// loads; warps in a 2x4 layout, each a 64x32 sub-tile (4x2 fragments). Shared rows are padded by 8 elements to spread
// the banks; every WMMA pointer stays 32-byte aligned (row strides 80 and 272 bytes). M, N, K multiples of 128.
template <typename T>
__device__ void wmma_gemm(const T* A, const T* B, float* C, int M, int N, int K) {
  using namespace nvcuda;
  constexpr int BM = 128, BN = 128, BK = 32, PAD = 8;
  __shared__ __align__(32) T As[BM][BK + PAD];
  __shared__ __align__(32) T Bs[BK][BN + PAD];
  const int warp = threadIdx.x / 32;
  const int warp_row = (warp / 4) * 64;  // within the block tile
  const int warp_col = (warp % 4) * 32;
  const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  for (int k0 = 0; k0 < K; k0 += BK) {
    // A tile: 128 rows x 32 columns = 512 chunks of 8 elements; B tile: 32 rows x 128 columns = 512 chunks.
    for (int c = threadIdx.x; c < BM * BK / 8; c += blockDim.x) {
      const int r = c / (BK / 8), col = (c % (BK / 8)) * 8;
      *reinterpret_cast<uint4*>(&As[r][col]) =
          *reinterpret_cast<const uint4*>(A + (block_row + r) * 1ll * K + k0 + col);
    }
    for (int c = threadIdx.x; c < BK * BN / 8; c += blockDim.x) {
      const int r = c / (BN / 8), col = (c % (BN / 8)) * 8;
      *reinterpret_cast<uint4*>(&Bs[r][col]) =
          *reinterpret_cast<const uint4*>(B + (k0 + r) * 1ll * N + block_col + col);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], &As[warp_row + 16 * i][kk], BK + PAD);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &Bs[kk][warp_col + 16 * j], BN + PAD);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(C + (block_row + warp_row + 16 * i) * 1ll * N + block_col + warp_col + 16 * j, acc[i][j],
                              N, wmma::mem_row_major);
}

// __launch_bounds__(256, 2): at most 128 registers a thread, so two 19 KiB blocks share an SM (unbounded, sm_100 took
// 134 registers and ran one block per SM).
extern "C" __global__ void __launch_bounds__(256, 2)
    smoke_hgemm_wmma(const __half* A, const __half* B, float* C, int M, int N, int K) {
  wmma_gemm<__half>(A, B, C, M, N, K);
}

// BF16 WMMA needs sm_80; on older architectures the kernel exists but traps (the runner never launches it there).
extern "C" __global__ void __launch_bounds__(256, 2)
    smoke_bf16gemm_wmma(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N, int K) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  wmma_gemm<__nv_bfloat16>(A, B, C, M, N, K);
#else
  __trap();
#endif
}
