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

// The memory test (memtest_kernels.cuh holds the device code, which a test also runs on the CPU).
#include "memtest_kernels.cuh"

extern "C" __global__ void smoke_fill_pattern(unsigned* out, unsigned long long words, unsigned seed, unsigned invert,
                                              unsigned mode) {
  memtest_fill(out, words, seed, invert, mode);
}

extern "C" __global__ void smoke_check_pattern(const unsigned* in, unsigned long long words, unsigned seed,
                                               unsigned invert, unsigned long long* result, unsigned mode) {
  memtest_check(in, words, seed, invert, result, mode);
}

extern "C" __global__ void smoke_move_inversion(unsigned* data, unsigned long long words, unsigned seed,
                                                unsigned invert, unsigned long long* result, unsigned mode) {
  memtest_move(data, words, seed, invert, result, mode);
}

// Copy buffers filled and checked on the GPU (issue 23 item 12): word i of a buffer holds pattern_word(i, seed), the
// host's fill_pattern/check_pattern (smoke/verify.cpp), so a copy's destination is verified where it lies, without a
// readback through PCIe and a check on one host core. Grid-stride over 32-bit words.
extern "C" __global__ void smoke_fill_words(unsigned* out, unsigned long long words, unsigned seed) {
  const unsigned long long stride = 1ull * gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < words; i += stride)
    out[i] = pattern_word(i, seed);
}

// Counts the words of `in` that differ from pattern_word(i, seed) into result[0], and keeps the lowest differing index
// with the word read there in result[1] (memtest_report's key: (i << 32) | word; the caller starts them at 0 and ~0).
extern "C" __global__ void smoke_check_words(const unsigned* in, unsigned long long words, unsigned seed,
                                             unsigned long long* result) {
  const unsigned long long stride = 1ull * gridDim.x * blockDim.x;
  unsigned long long wrong = 0, first = ~0ull;
  unsigned first_observed = 0;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < words; i += stride) {
    const unsigned observed = in[i];
    if (observed != pattern_word(i, seed)) {
      if (wrong++ == 0) {
        first = i;
        first_observed = observed;
      }
    }
  }
  memtest_report(result, wrong, first, first_observed);
}

// Bitwise comparison of two buffers of `words` 32-bit words (a GEMM's C against the verified reference C, a copy's
// destination against its source): differing words counted into result[0], the lowest differing index with the word
// read from `observed` kept in result[1] (the key of memtest_report). 16-byte loads for the bulk; the buffers are
// 16-byte aligned (cuMemAlloc), a tail of words % 4 is compared word by word by the first threads.
extern "C" __global__ void smoke_compare_words(const unsigned* observed, const unsigned* expected,
                                               unsigned long long words, unsigned long long* result) {
  const unsigned long long thread = blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  const unsigned long long stride = 1ull * gridDim.x * blockDim.x;
  const unsigned long long vectors = words / 4;
  const uint4* got = reinterpret_cast<const uint4*>(observed);
  const uint4* want = reinterpret_cast<const uint4*>(expected);
  unsigned long long wrong = 0, first = ~0ull;
  unsigned first_observed = 0;
  auto compare = [&](unsigned long long i, unsigned word, unsigned reference) {
    if (word == reference) return;
    if (wrong++ == 0) {  // a thread's indices only grow: its first is its lowest
      first = i;
      first_observed = word;
    }
  };
  for (unsigned long long v = thread; v < vectors; v += stride) {
    const uint4 a = got[v], b = want[v];
    compare(4 * v, a.x, b.x);
    compare(4 * v + 1, a.y, b.y);
    compare(4 * v + 2, a.z, b.z);
    compare(4 * v + 3, a.w, b.w);
  }
  const unsigned long long tail = 4 * vectors + thread;
  if (tail < words) compare(tail, observed[tail], expected[tail]);
  memtest_report(result, wrong, first, first_observed);
}

// HBM bandwidth the way DCGM's memory_bandwidth test measures it: by the SMs (a copy-engine copy saturates near 66% of
// HBM bandwidth on H100/H200, NVIDIA/cccl#1672, cuda-samples#366). Each thread copies 16-byte vectors, grid-stride, four
// loads in flight before their stores (nvbandwidth's SM copy, kernels.cu stridingMemcpyKernel, keeps twelve); every
// byte is read once and written once. The host sizes the buffers at four or more times the L2 cache and queues several
// launches (waves over the whole buffer) between its events.
extern "C" __global__ void __launch_bounds__(256) smoke_stream_copy(const uint4* __restrict__ in,
                                                                    uint4* __restrict__ out,
                                                                    unsigned long long vectors) {
  const unsigned long long stride = 1ull * gridDim.x * blockDim.x;
  unsigned long long v = blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  for (; v + 3 * stride < vectors; v += 4 * stride) {
    const uint4 a = in[v], b = in[v + stride], c = in[v + 2 * stride], d = in[v + 3 * stride];
    out[v] = a;
    out[v + stride] = b;
    out[v + 2 * stride] = c;
    out[v + 3 * stride] = d;
  }
  for (; v < vectors; v += stride) out[v] = in[v];
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
extern "C" __global__ void __launch_bounds__(256)
    smoke_sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
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
// the banks; every WMMA pointer stays 32-byte aligned (row strides 80 and 272 bytes, stage strides 10240 and 8704
// bytes, all multiples of 32). M, N, K multiples of 128 (K a multiple of BK is what the pipeline needs).
// sm_80+: two shared-memory stages filled by cp.async (the copy of tile t+1 runs while the tensor cores work on tile
// t); sm_70/sm_75 (no cp.async): one stage, loaded through registers. Both fit the 48 KiB of static shared memory
// (2 x 18.5 KiB and 18.5 KiB).
namespace wmma_tile {
constexpr int BM = 128, BN = 128, BK = 32, PAD = 8;
constexpr int THREADS = 256;                     // the launch's block size (the 2x4 warp layout needs exactly 8 warps)
constexpr int A_LD = BK + PAD, B_LD = BN + PAD;  // shared row strides, elements
}  // namespace wmma_tile

// One warp's 64x32 share of acc += As[128x32] * Bs[32x128] for one K tile held in shared memory.
template <typename T>
__device__ __forceinline__ void wmma_tile_product(
    const T (*As)[wmma_tile::A_LD], const T (*Bs)[wmma_tile::B_LD], int warp_row, int warp_col,
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[4][2]) {
  using namespace nvcuda;
#pragma unroll
  for (int kk = 0; kk < wmma_tile::BK; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[4];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[2];
#pragma unroll
    for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], &As[warp_row + 16 * i][kk], wmma_tile::A_LD);
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &Bs[kk][warp_col + 16 * j], wmma_tile::B_LD);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
  }
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
// cp.async.cg: a 16-byte global -> shared copy that bypasses L1 and the registers (sm_80+). The group calls order
// them: wait_group<N> returns once all but the N most recently committed groups of this thread have landed.
__device__ __forceinline__ void cp_async_16(void* shared, const void* global) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}
#endif

template <typename T>
__device__ void wmma_gemm(const T* A, const T* B, float* C, int M, int N, int K) {
  using namespace nvcuda;
  using namespace wmma_tile;
  const int warp = threadIdx.x / 32;
  const int warp_row = (warp / 4) * 64;  // within the block tile
  const int warp_col = (warp % 4) * 32;
  const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;
  const T* const A_block = A + block_row * 1ll * K;  // row block_row, column 0
  const T* const B_block = B + block_col;            // row 0, column block_col
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }
  // A tile: 128 rows x 32 columns = 512 chunks of 8 elements (16 bytes); B tile: 32 rows x 128 columns = 512 chunks;
  // with 256 threads each moves 2 + 2 chunks per tile (a compile-time stride: the loops unroll). Global chunks are
  // 16-byte aligned: K and N are multiples of 8.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __shared__ __align__(128) T As[2][BM][A_LD];
  __shared__ __align__(128) T Bs[2][BK][B_LD];
  auto load_tile = [&](int stage, int k0) {
    for (int c = threadIdx.x; c < BM * BK / 8; c += THREADS) {
      const int r = c / (BK / 8), col = (c % (BK / 8)) * 8;
      cp_async_16(&As[stage][r][col], A_block + r * 1ll * K + k0 + col);
    }
    for (int c = threadIdx.x; c < BK * BN / 8; c += THREADS) {
      const int r = c / (BN / 8), col = (c % (BN / 8)) * 8;
      cp_async_16(&Bs[stage][r][col], B_block + (k0 + r) * 1ll * N + col);
    }
  };
  const int tiles = K / BK;
  if (tiles > 0) load_tile(0, 0);  // K = 0 reads nothing
  cp_async_commit();
  for (int t = 0; t < tiles; ++t) {
    // Stage (t+1)&1 was last read in iteration t-1, whose closing __syncthreads every warp has passed: free to refill.
    if (t + 1 < tiles) load_tile((t + 1) & 1, (t + 1) * BK);
    cp_async_commit();   // an empty group on the last tile keeps "all but the newest group" meaning tile t
    cp_async_wait<1>();  // this thread's copies of tile t have landed
    __syncthreads();     // ... and every other thread's
    wmma_tile_product<T>(As[t & 1], Bs[t & 1], warp_row, warp_col, acc);
    __syncthreads();  // every warp is done reading stage t&1 before iteration t+1 prefetches tile t+2 into it
  }
#else
  __shared__ __align__(128) T As[BM][A_LD];
  __shared__ __align__(128) T Bs[BK][B_LD];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int c = threadIdx.x; c < BM * BK / 8; c += THREADS) {
      const int r = c / (BK / 8), col = (c % (BK / 8)) * 8;
      *reinterpret_cast<uint4*>(&As[r][col]) = *reinterpret_cast<const uint4*>(A_block + r * 1ll * K + k0 + col);
    }
    for (int c = threadIdx.x; c < BK * BN / 8; c += THREADS) {
      const int r = c / (BN / 8), col = (c % (BN / 8)) * 8;
      *reinterpret_cast<uint4*>(&Bs[r][col]) = *reinterpret_cast<const uint4*>(B_block + (k0 + r) * 1ll * N + col);
    }
    __syncthreads();
    wmma_tile_product<T>(As, Bs, warp_row, warp_col, acc);
    __syncthreads();
  }
#endif
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(C + (block_row + warp_row + 16 * i) * 1ll * N + block_col + warp_col + 16 * j, acc[i][j],
                              N, wmma::mem_row_major);
}

// __launch_bounds__(256, 2): at most 128 registers a thread, so two blocks share an SM (37 KiB of shared memory each
// with the two cp.async stages on sm_80+, 19 KiB below; unbounded, sm_100 took 134 registers and ran one block per SM).
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
