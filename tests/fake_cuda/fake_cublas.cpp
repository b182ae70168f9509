// The fake libcuda's cuBLAS entry points (tests/fake_cuda/fake_cuda.cpp has the driver API and the configuration
// keys): the same library serves as GPUENV_CUBLAS_LIBRARY.

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "fake_cuda/fake_state.hpp"

using fake_cuda::number;

extern "C" {

// cuBLAS: column-major C[m×n] = A[m×k]·B[k×n] (no transposes), computed on the CPU.
int cublasCreate_v2(void** handle) {
  static int dummy;
  *handle = &dummy;
  return static_cast<int>(number("cublas_create_result", 0));
}
int cublasDestroy_v2(void*) { return 0; }
int cublasSetStream_v2(void*, void*) { return 0; }
int cublasGetProperty(int type, int* value) {
  *value = type == 0 ? static_cast<int>(number("cublas_major", 12)) : (type == 1 ? 8 : 4);
  return 0;
}

}  // extern "C"

namespace {

using namespace fake_cuda;

template <typename Load>
int column_major_gemm(int m, int n, int k, const void* a, int lda, const void* b, int ldb, float* c, int ldc,
                      Load load) {
  t_last_kernel = "cublas";
  if (const int result = static_cast<int>(number("cublas_gemm_result", 0)); result != 0) return result;
  ++g_all_gemm_launches;
  gemm_sleep();
  // gemm_memoize: the same operands again: the first result, copied (the bench's GEMMs cost no CPU time).
  static std::mutex memo_mutex;
  static std::map<std::tuple<std::uint64_t, std::uint64_t, int, int, int>, std::vector<float>> memo;
  const bool memoize = number("gemm_memoize", 0) != 0;
  // Column-major operands: A is m x k with leading dimension lda, B k x n with ldb (the bench's are packed).
  const auto key = memoize ? std::tuple{operand_hash(a, static_cast<std::size_t>(lda) * k, load),
                                        operand_hash(b, static_cast<std::size_t>(ldb) * n, load), m, n, k}
                           : std::tuple<std::uint64_t, std::uint64_t, int, int, int>{};
  if (memoize) {
    const std::lock_guard<std::mutex> lock(memo_mutex);
    if (const auto it = memo.find(key); it != memo.end() && it->second.size() == static_cast<std::size_t>(m) * n) {
      std::memcpy(c, it->second.data(), it->second.size() * 4);
      if (number("cublas_wrong", 0) != 0) c[0] += 1.0f;
      return 0;
    }
  }
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0;
      for (int p = 0; p < k; ++p) sum += load(a, i + p * lda) * load(b, p + j * ldb);
      c[i + j * ldc] = sum;
    }
  }
  if (memoize) {
    const std::lock_guard<std::mutex> lock(memo_mutex);
    memo[key].assign(c, c + static_cast<std::size_t>(m) * n);
  }
  if (number("cublas_wrong", 0) != 0) c[0] += 1.0f;
  return 0;
}

}  // namespace

extern "C" {

int cublasSgemm_v2(void*, int, int, int m, int n, int k, const float*, const float* a, int lda, const float* b, int ldb,
                   const float*, float* c, int ldc) {
  return column_major_gemm(m, n, k, a, lda, b, ldb, c, ldc,
                           [](const void* p, int i) { return static_cast<const float*>(p)[i]; });
}
int cublasGemmEx(void*, int, int, int m, int n, int k, const void*, const void* a, int type, int lda, const void* b,
                 int, int ldb, const void*, void* c, int, int ldc, int, int) {
  auto* out = static_cast<float*>(c);
  if (type == 14)
    return column_major_gemm(m, n, k, a, lda, b, ldb, out, ldc, [](const void* p, int i) {
      return bf16_to_float(static_cast<const unsigned short*>(p)[i]);
    });
  return column_major_gemm(m, n, k, a, lda, b, ldb, out, ldc, [](const void* p, int i) {
    return half_to_float(static_cast<const unsigned short*>(p)[i]);
  });
}

}  // extern "C"
