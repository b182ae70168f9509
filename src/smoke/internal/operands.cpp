// Matmul operands: odd eighths (operand_value), exact in FP16, BF16 and TF32, rounded to the GPU's 16-bit format where
// one is used, with the Freivalds vectors of their product; made once per shape for every GPU of a run.

#include <future>

#include "smoke/internal/step.hpp"

namespace gpuenv::smoke {

namespace {

std::shared_ptr<const GemmOperands> make_operands(Precision precision, int n) {
  auto out = std::make_shared<GemmOperands>();
  out->precision = precision;
  out->n = n;
  const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  out->a.resize(count);
  out->b.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    out->a[i] = operand_value(i, 11);
    out->b[i] = operand_value(i, 23);
  }
  if (precision != Precision::fp32) {
    out->element = 2;
    out->a16.resize(count);
    out->b16.resize(count);
    const bool bf16 = precision == Precision::bf16;
    for (std::size_t i = 0; i < count; ++i) {
      out->a16[i] = bf16 ? float_to_bf16(out->a[i]) : float_to_half(out->a[i]);
      out->b16[i] = bf16 ? float_to_bf16(out->b[i]) : float_to_half(out->b[i]);
      out->a[i] = bf16 ? bf16_to_float(out->a16[i]) : half_to_float(out->a16[i]);
      out->b[i] = bf16 ? bf16_to_float(out->b16[i]) : half_to_float(out->b16[i]);
    }
  }
  out->freivalds = freivalds_vector(out->a, out->b, n, n, n);
  return out;
}

}  // namespace

std::shared_ptr<const GemmOperands> OperandCache::get(Precision precision, int n) {
  std::promise<std::shared_ptr<const GemmOperands>> made;
  std::shared_future<std::shared_ptr<const GemmOperands>> ready;
  {
    const std::lock_guard<std::mutex> lock(m_mutex);
    const auto key = std::pair{static_cast<int>(precision), n};
    const auto it = m_made.find(key);
    if (it != m_made.end()) {
      ready = it->second;
    } else {
      m_made[key] = made.get_future().share();
    }
  }
  if (ready.valid()) return ready.get();  // another GPU makes them (or made them)
  try {
    auto operands = make_operands(precision, n);
    made.set_value(operands);
    return operands;
  } catch (...) {
    made.set_exception(std::current_exception());
    throw;
  }
}

}  // namespace gpuenv::smoke
