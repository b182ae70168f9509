#pragma once
// Pure verification of what the GPU produced: copy patterns, 16-bit float conversions and sampled matmul checks.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gpuenv::smoke {

/// Word `index` of the copy pattern with `seed`; identical to pattern_word in kernels/smoke_kernels.cu.
std::uint32_t pattern_word(std::uint64_t index, std::uint32_t seed);
/// Writes the pattern into `words`.
void fill_pattern(std::span<std::uint32_t> words, std::uint32_t seed);

/// The outcome of comparing a buffer with the pattern.
struct PatternCheck {
  std::uint64_t mismatches = 0;
  std::uint64_t first_index = 0;  ///< valid when mismatches > 0
  std::uint32_t first_expected = 0;
  std::uint32_t first_observed = 0;
  bool ok() const { return mismatches == 0; }
  /// "3 of 1048576 words differ; first at byte offset 0x40: expected 0x..., read 0x..." (empty when ok).
  std::string describe(std::uint64_t total_words) const;
};
PatternCheck check_pattern(std::span<const std::uint32_t> words, std::uint32_t seed);

/// IEEE binary16 and bfloat16 conversions, round to nearest even (NaN stays NaN).
std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float value);
float bf16_to_float(std::uint16_t bits);

/// Which operand precision a matmul used (accumulation is FP32 in every kernel).
enum class Precision { fp32, fp16, bf16 };
const char* to_string(Precision precision);

/// Relative tolerance of a sampled element: |c - ref| <= tol * sum_k |a_ik * b_kj|. The operands (operand_value)
/// make a correct GEMM exact in FP32, so this is 1e-6 for every precision: below one product (1/64) up to K ≈ 20000,
/// so even a single missing product fails.
double default_tolerance(Precision precision);

/// The outcome of checking sampled elements of C = A·B against a CPU reference in double precision.
struct GemmCheck {
  std::size_t sampled = 0;
  std::size_t mismatches = 0;
  double max_relative_error = 0;  ///< of the error normalised by sum_k |a·b|
  std::string first_mismatch;     ///< "C[i][j] = x, expected y" (empty when none)
  bool ok() const { return sampled > 0 && mismatches == 0; }
};

/// Checks `samples` pseudo-random elements (always including the four corners) of row-major C[m×n] = A[m×k]·B[k×n].
/// `a` and `b` hold the operand values as the GPU saw them (already rounded to FP16/BF16 where used).
GemmCheck check_gemm_samples(std::span<const float> a, std::span<const float> b, std::span<const float> c, int m, int n,
                             int k, std::size_t samples, double tolerance, std::uint32_t seed = 1);

/// Deterministic operand values for matrix element `index`: odd eighths in [-7/8, 7/8], exact in FP16/BF16/TF32, so
/// that every partial sum of a GEMM with K <= 2^18 is exact in FP32 whatever the summation order.
float operand_value(std::uint64_t index, std::uint32_t seed);

/// Freivalds' check of a whole result, from both sides: vectors x, y (integers ±1…±7) with A·(B·x) and (yᵀ·A)·B,
/// computed once in double (exact for operand_value operands). C·x and yᵀ·C must then equal them exactly, row by row
/// and column by column. One side alone misses a permutation: two swapped columns j, k leave C·x unchanged whenever x_j
/// = x_k, two swapped rows leave yᵀ·C unchanged whenever y_i = y_k; each side catches what the other misses.
struct FreivaldsVector {
  std::size_t n = 0;                  ///< columns of C
  std::vector<double> x;              ///< n entries
  std::vector<double> expected;       ///< A·(B·x), one per row of C
  std::vector<double> y;              ///< one per row of C
  std::vector<double> expected_left;  ///< (yᵀ·A)·B, one per column of C
};
FreivaldsVector freivalds_vector(std::span<const float> a, std::span<const float> b, int m, int n, int k,
                                 std::uint32_t seed = 7);

/// Rows of C whose C·x differs from A·(B·x), and columns whose yᵀ·C differs from (yᵀ·A)·B; a wrong element always
/// changes both its row's and its column's product (x and y have no zero).
struct FreivaldsCheck {
  std::size_t rows = 0;
  std::size_t wrong_rows = 0;
  std::size_t columns = 0;
  std::size_t wrong_columns = 0;
  std::string first_wrong;  ///< "row i: (C·x)[i] = …, A·(B·x) = …" or "column j: …" (empty when none)
  bool ok() const { return rows > 0 && columns > 0 && wrong_rows == 0 && wrong_columns == 0; }
};
FreivaldsCheck check_freivalds(const FreivaldsVector& vector, std::span<const float> c);

}  // namespace gpuenv::smoke
