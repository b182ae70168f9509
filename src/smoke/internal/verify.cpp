#include "smoke/internal/verify.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

namespace gpuenv::smoke {
namespace {

/// std::bit_cast, which libstdc++ has from gcc 11 only; the portable build uses gcc 10 (docs/packaging.md).
template <class To, class From>
To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<From> && std::is_trivially_copyable_v<To>);
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

}  // namespace

std::uint32_t pattern_word(std::uint64_t index, std::uint32_t seed) {
  std::uint64_t x = index * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<std::uint32_t>(x);
}

void fill_pattern(std::span<std::uint32_t> words, std::uint32_t seed) {
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = pattern_word(i, seed);
}

PatternCheck check_pattern(std::span<const std::uint32_t> words, std::uint32_t seed) {
  PatternCheck out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::uint32_t expected = pattern_word(i, seed);
    if (words[i] == expected) continue;
    if (out.mismatches == 0) {
      out.first_index = i;
      out.first_expected = expected;
      out.first_observed = words[i];
    }
    ++out.mismatches;
  }
  return out;
}

std::string PatternCheck::describe(std::uint64_t total_words) const {
  if (ok()) return {};
  char buffer[200];
  std::snprintf(buffer, sizeof buffer,
                "%llu of %llu words differ; first at byte offset 0x%llx: expected 0x%08x, read 0x%08x",
                static_cast<unsigned long long>(mismatches), static_cast<unsigned long long>(total_words),
                static_cast<unsigned long long>(first_index * 4), first_expected, first_observed);
  return buffer;
}

std::uint16_t float_to_half(float value) {
  const std::uint32_t bits = bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t exponent = (bits >> 23) & 0xFFu;
  std::uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponent == 0xFF) return static_cast<std::uint16_t>(sign | 0x7C00u | (mantissa != 0 ? 0x200u : 0u));
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow -> infinity
  if (e <= 0) {                                                    // subnormal or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u) != 0)) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) ++half;  // may carry into the exponent: correct
  return static_cast<std::uint16_t>(sign | half);
}

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = (bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

std::uint16_t float_to_bf16(float value) {
  const std::uint32_t bits = bit_cast<std::uint32_t>(value);
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x7FFFFFu) != 0)
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bf16_to_float(std::uint16_t bits) { return bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return "fp32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
  }
  return "?";
}

double default_tolerance(Precision) { return 1e-6; }

float operand_value(std::uint64_t index, std::uint32_t seed) {
  // Odd eighths, ±1/8 … ±7/8: 3 significant bits, exact in FP16, BF16 and TF32, never zero (so no product can go
  // missing unseen). Every product is a multiple of 1/64 of magnitude < 1, so every partial sum of up to 2^18 of them
  // is exact in FP32, in any order: a correct GEMM is exact.
  const std::uint32_t word = pattern_word(index, seed ^ 0x5EEDu);
  return static_cast<float>(2 * static_cast<int>(word % 8u) - 7) / 8.0f;
}

namespace {

/// ±1 … ±7 for entry `index`, never 0 (a zero would leave its row or column unchecked).
double freivalds_entry(std::size_t index, std::uint32_t seed) {
  const std::uint32_t word = pattern_word(index, seed);
  return static_cast<double>(1 + word % 7u) * ((word & 0x100u) != 0 ? -1.0 : 1.0);
}

}  // namespace

FreivaldsVector freivalds_vector(std::span<const float> a, std::span<const float> b, int m, int n, int k,
                                 std::uint32_t seed) {
  FreivaldsVector out;
  if (m <= 0 || n <= 0 || k <= 0) return out;
  const auto M = static_cast<std::size_t>(m), N = static_cast<std::size_t>(n), K = static_cast<std::size_t>(k);
  if (a.size() < M * K || b.size() < K * N) return out;
  out.x.resize(N);
  for (std::size_t j = 0; j < N; ++j) out.x[j] = freivalds_entry(j, seed ^ 0xF4E1u);
  out.y.resize(M);
  for (std::size_t i = 0; i < M; ++i) out.y[i] = freivalds_entry(i, seed ^ 0x1EF7u);
  std::vector<double> bx(K, 0.0);  // B·x: multiples of 1/8 below 2^16, exact in double
  for (std::size_t p = 0; p < K; ++p) {
    for (std::size_t j = 0; j < N; ++j) bx[p] += static_cast<double>(b[p * N + j]) * out.x[j];
  }
  out.expected.assign(M, 0.0);  // A·(B·x): multiples of 1/64 below 2^33, exact in double
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t p = 0; p < K; ++p) out.expected[i] += static_cast<double>(a[i * K + p]) * bx[p];
  }
  std::vector<double> ya(K, 0.0);  // yᵀ·A, exact as B·x
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t p = 0; p < K; ++p) ya[p] += out.y[i] * static_cast<double>(a[i * K + p]);
  }
  out.expected_left.assign(N, 0.0);  // (yᵀ·A)·B, exact as A·(B·x)
  for (std::size_t p = 0; p < K; ++p) {
    for (std::size_t j = 0; j < N; ++j) out.expected_left[j] += ya[p] * static_cast<double>(b[p * N + j]);
  }
  out.n = N;
  return out;
}

FreivaldsCheck check_freivalds(const FreivaldsVector& vector, std::span<const float> c) {
  FreivaldsCheck out;
  const std::size_t M = vector.expected.size(), N = vector.n;
  if (M == 0 || N == 0 || c.size() < M * N || vector.y.size() != M || vector.expected_left.size() != N) return out;
  auto note_first = [&out](const char* side, std::size_t index, const char* product, double observed, double expected,
                           const char* reference) {
    if (!out.first_wrong.empty()) return;
    char buffer[200];
    std::snprintf(buffer, sizeof buffer, "%s %zu: %s[%zu] = %.17g, %s = %.17g", side, index, product, index, observed,
                  reference, expected);
    out.first_wrong = buffer;
  };
  std::vector<double> left(N, 0.0);  // yᵀ·C, accumulated row by row (C is row-major), exact in double
  for (std::size_t i = 0; i < M; ++i) {
    double observed = 0;  // C·x, exact in double for an exact C
    for (std::size_t j = 0; j < N; ++j) {
      const double element = static_cast<double>(c[i * N + j]);
      observed += element * vector.x[j];
      left[j] += vector.y[i] * element;
    }
    ++out.rows;
    if (!(observed == vector.expected[i])) {  // NaN counts as wrong
      note_first("row", i, "(C·x)", observed, vector.expected[i], "A·(B·x)");
      ++out.wrong_rows;
    }
  }
  for (std::size_t j = 0; j < N; ++j) {
    ++out.columns;
    if (!(left[j] == vector.expected_left[j])) {
      note_first("column", j, "(yᵀ·C)", left[j], vector.expected_left[j], "(yᵀ·A)·B");
      ++out.wrong_columns;
    }
  }
  return out;
}

GemmCheck check_gemm_samples(std::span<const float> a, std::span<const float> b, std::span<const float> c, int m, int n,
                             int k, std::size_t samples, double tolerance, std::uint32_t seed) {
  GemmCheck out;
  // Nothing asked for, nothing verified: ok() stays false rather than passing unchecked results.
  if (m <= 0 || n <= 0 || k <= 0 || samples == 0) return out;
  const auto M = static_cast<std::size_t>(m), N = static_cast<std::size_t>(n), K = static_cast<std::size_t>(k);
  if (a.size() < M * K || b.size() < K * N || c.size() < M * N) return out;
  auto check = [&](std::size_t i, std::size_t j) {
    double reference = 0, scale = 0;
    for (std::size_t p = 0; p < K; ++p) {
      const double product = static_cast<double>(a[i * K + p]) * static_cast<double>(b[p * N + j]);
      reference += product;
      scale += std::fabs(product);
    }
    const double observed = c[i * N + j];
    const double error = std::fabs(observed - reference) / (scale > 0 ? scale : 1.0);
    ++out.sampled;
    if (!(error <= tolerance)) {  // NaN counts as a mismatch
      if (out.mismatches == 0) {
        char buffer[160];
        std::snprintf(buffer, sizeof buffer, "C[%zu][%zu] = %.6g, expected %.6g (relative error %.3g > %.1g)", i, j,
                      observed, reference, error, tolerance);
        out.first_mismatch = buffer;
      }
      ++out.mismatches;
    }
    if (error > out.max_relative_error || std::isnan(error)) out.max_relative_error = error;
  };
  check(0, 0);
  check(0, N - 1);
  check(M - 1, 0);
  check(M - 1, N - 1);
  for (std::size_t s = 4; s < samples; ++s) {
    check(pattern_word(2 * s, seed) % M, pattern_word(2 * s + 1, seed) % N);
  }
  return out;
}

}  // namespace gpuenv::smoke
