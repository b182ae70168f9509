// Matmuls: our own kernels (from the embedded fatbin) and the node's cuBLAS, on the same operands, timed with events,
// verified on sampled elements against a CPU reference; cuBLAS judged against the GPU model's peak or DCGM's floor, our
// kernels against cuBLAS on the same operands (the tensor kernel with a floor per compute capability).

#include <algorithm>
#include <atomic>

#include "smoke/step.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

namespace {

/// Sizes are multiples of 128: the tensor kernel's block tile (the SIMT kernel's 64 divides it).
int round_up_128(int value) { return std::max(128, (value + 127) / 128 * 128); }

/// A failing cuBLAS call inside a step: reported like a CUDA error, but with cuBLAS's status name.
void check_cublas(const Gpu& gpu, int status, const std::string& what) {
  if (status == cublas_success) return;
  // An execution failure is a failed kernel launch: the context is as unusable as after CUDA error 719.
  throw CudaFailure{what, status == cublas_execution_failed ? cuda_error_launch_failed : cuda_error_invalid_value,
                    describe_cublas_status(gpu.cublas->api, status)};
}

/// The GPU's operands for `precision` at n×n, made once and kept for the next matmul of the same shape (our kernel
/// and cuBLAS run back to back on the same operands; at 8192² they take about 800 MB and a second to make).
std::shared_ptr<const GemmOperands> operands_for(Gpu& gpu, Precision precision, int n) {
  if (gpu.operands != nullptr && gpu.operands->precision == precision && gpu.operands->n == n) return gpu.operands;
  gpu.operands = nullptr;  // free the last shape before making the next
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
  gpu.operands = out;
  return out;
}

/// Freivalds checks of every run of one GEMM (the warm-up is run 0).
struct RepetitionChecks {
  int runs = 0;
  int wrong_runs = 0;
  std::string first;  ///< "run 3: row 17: ..."
  void add(int run, const FreivaldsCheck& check) {
    ++runs;
    if (check.ok()) return;
    if (wrong_runs++ == 0) {
      first = "run " + std::to_string(run) + ": " +
              (check.first_wrong.empty() ? std::string("nothing checked") : check.first_wrong);
    }
  }
  bool ok() const { return runs > 0 && wrong_runs == 0; }
  std::string describe() const {
    return std::to_string(wrong_runs) + " of " + std::to_string(runs) +
           " runs (warm-up, timed repetitions and the last of the sustained burst) fail the whole-result check C·x = "
           "A·(B·x); first " +
           first;
  }
};

/// Raises the GPU's launches-in-flight count for its lifetime (also when a launch throws), so the clock sampler
/// counts only what it reads while GEMMs are queued or running.
class InFlight {
 public:
  explicit InFlight(std::atomic<int>& count) : m_count(count) { ++m_count; }
  ~InFlight() { --m_count; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int>& m_count;
};

/// Most launches in one sustained burst: a GPU whose events time a launch near 0 would otherwise queue without end.
constexpr int max_burst_launches = 1000;

/// Launches in the sustained burst after the timed repetitions: about options.gemm_burst at the median time of one
/// (`times_ms`), at least 1 and at most max_burst_launches; none with --quick (kept short) or a zero burst.
int burst_launches(const SmokeOptions& options, std::vector<double> times_ms) {
  if (options.quick || options.gemm_burst.count() <= 0 || times_ms.empty()) return 0;
  std::sort(times_ms.begin(), times_ms.end());
  const double median_ms = times_ms[times_ms.size() / 2];
  const double wanted = static_cast<double>(options.gemm_burst.count()) / std::max(median_ms, 1e-3);
  return static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(max_burst_launches)));
}

/// Enqueues one C = A·B (row-major, n×n) on the GPU's stream.
void launch_gemm(Gpu& gpu, const GemmPlan& plan, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int n,
                 const std::string& what) {
  if (plan.engine == GemmPlan::Engine::cublas) {
    // cuBLAS is column-major: row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, so B goes first.
    const float alpha = 1.0f, beta = 0.0f;
    const CublasApi& api = gpu.cublas->api;
    auto* pa = reinterpret_cast<const void*>(a);
    auto* pb = reinterpret_cast<const void*>(b);
    auto* pc = reinterpret_cast<void*>(c);
    if (plan.precision == Precision::fp32) {
      check_cublas(
          gpu,
          api.sgemm(gpu.cublas_handle, cublas_op_n, cublas_op_n, n, n, n, &alpha, static_cast<const float*>(pb), n,
                    static_cast<const float*>(pa), n, &beta, static_cast<float*>(pc), n),
          "cublasSgemm_v2 (" + what + ")");
    } else {
      const int type = plan.precision == Precision::bf16 ? cuda_r_16bf : cuda_r_16f;
      check_cublas(gpu,
                   api.gemm_ex(gpu.cublas_handle, cublas_op_n, cublas_op_n, n, n, n, &alpha, pb, type, n, pa, type, n,
                               &beta, pc, cuda_r_32f, n, cublas_compute_32f, cublas_gemm_default),
                   "cublasGemmEx (" + what + ")");
    }
    return;
  }
  int m_arg = n, n_arg = n, k_arg = n;
  void* params[] = {&a, &b, &c, &m_arg, &n_arg, &k_arg};
  if (plan.precision == Precision::fp32) {
    const unsigned grid = static_cast<unsigned>(n / 64);  // 64x64 tiles, 16x16 threads
    check(gpu.api.launch_kernel(gpu.sgemm, grid, grid, 1, 16, 16, 1, 0, gpu.stream, params, nullptr),
          "cuLaunchKernel(smoke_sgemm)");
  } else {
    const unsigned grid = static_cast<unsigned>(n / 128);  // 128x128 tiles, 8 warps
    CUfunction function = plan.precision == Precision::bf16 ? gpu.bf16gemm : gpu.hgemm;
    check(gpu.api.launch_kernel(function, grid, grid, 1, 256, 1, 1, 0, gpu.stream, params, nullptr),
          "cuLaunchKernel(" + what + ")");
  }
}

/// What this n^3 matmul should reach on `model`: nothing below the floor size; our SIMT kernel against the node's
/// cuBLAS on the same operands × a ratio when cuBLAS ran (our tensor kernel then has judge_tensor_ratio instead), else
/// like cuBLAS tensor GEMMs against peak × an efficiency (both estimates: warn only while uncalibrated); cuBLAS SGEMM
/// against DCGM's targeted_stress floor for the SKU.
Expectation gemm_expectation(const GemmPlan& plan, int n, const GpuExpectation* model,
                             const Expectations& expectations) {
  Expectation out;
  if (n < plan.floor_size) return out;
  const bool tensor = plan.precision != Precision::fp32;
  const KernelEfficiency& efficiency = expectations.kernel_efficiency;
  if (plan.engine == GemmPlan::Engine::cublas && !tensor) {
    if (model == nullptr || !model->dcgm_sgemm_target_gflops) return out;
    out.minimum = *model->dcgm_sgemm_target_gflops / 1000.0 * expectations.dcgm_target_perf_min_ratio;
    out.source = model->model + " DCGM targeted_stress SGEMM target " +
                 rate_text(*model->dcgm_sgemm_target_gflops / 1000.0) + " TFLOP/s x " +
                 format("%.2g", expectations.dcgm_target_perf_min_ratio) + "; " + model->source;
    return out;
  }
  if (plan.engine == GemmPlan::Engine::kernel && plan.cublas_tflops && *plan.cublas_tflops > 0) {
    if (tensor) return out;  // run_gemm judges it with judge_tensor_ratio (a floor per compute capability)
    const double ratio = efficiency.sgemm_vs_cublas;
    out.expected = *plan.cublas_tflops * ratio;
    out.calibrated = efficiency.calibrated();
    out.source = "the node's cuBLAS on the same operands " + rate_text(*plan.cublas_tflops) + " TFLOP/s x " +
                 format("%.2g", ratio) + " (gpuenv kernel vs cuBLAS, " + efficiency.status + ")";
    return out;
  }
  if (model == nullptr) return out;
  const std::optional<double> peak = tensor ? model->tensor_tflops : model->fp32_tflops;
  if (!peak) return out;
  const double factor = plan.engine == GemmPlan::Engine::cublas ? efficiency.cublas_tensor
                        : tensor                                ? efficiency.tensor
                                                                : efficiency.sgemm;
  out.expected = *peak * factor;
  out.calibrated = efficiency.calibrated();
  out.source = model->model + " " +
               (tensor ? std::string(to_string(plan.precision)) + " tensor" : std::string("FP32")) + " peak " +
               rate_text(*peak) + " TFLOP/s x " + format("%.2g", factor) + " (gpuenv " +
               (plan.engine == GemmPlan::Engine::cublas ? "cuBLAS" : "kernel") + " efficiency, " + efficiency.status +
               "); " + model->source;
  return out;
}

}  // namespace

StepOutcome run_gemm(Gpu& gpu, const GemmPlan& plan, const GpuExpectation* model, const Expectations& expectations) {
  StepOutcome out;
  const CudaApi& api = gpu.api;
  const int n = round_up_128(plan.size);
  const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  const std::shared_ptr<const GemmOperands> shared = operands_for(gpu, plan.precision, n);
  const GemmOperands& operands = *shared;
  const std::string what = std::string(plan.engine == GemmPlan::Engine::cublas ? "cuBLAS " : "") +
                           to_string(plan.precision) + " " + std::to_string(n) + "^3 matmul";
  const DeviceBuffer device_a(gpu, count * operands.element, "cuMemAlloc_v2 (" + what + ")");
  const DeviceBuffer device_b(gpu, count * operands.element, "cuMemAlloc_v2 (" + what + ")");
  const DeviceBuffer device_c(gpu, count * 4, "cuMemAlloc_v2 (" + what + ")");
  const CUdeviceptr da = device_a.get(), db = device_b.get(), dc = device_c.get();
  // Uploads and the NaN pre-fill go on the GEMM's own (non-blocking) stream: the legacy stream would not be ordered
  // before the launch.
  check(api.memcpy_htod_async(da, operands.upload_a(), count * operands.element, gpu.stream), "cuMemcpyHtoDAsync_v2");
  check(api.memcpy_htod_async(db, operands.upload_b(), count * operands.element, gpu.stream), "cuMemcpyHtoDAsync_v2");
  check(api.memset_d32_async(dc, 0x7FC00000u /* NaN: unwritten elements fail verification */, count, gpu.stream),
        "cuMemsetD32Async");

  // Every run's whole result is checked (Freivalds, exact): a sporadic fault in one repetition fails, as gpu-burn's
  // comparison of repetitions does; the last one's sampled elements are also compared with the CPU reference.
  std::vector<float> c(count);
  RepetitionChecks repetitions_checked;
  auto verify_result = [&](int run) {
    check(api.memcpy_dtoh(c.data(), dc, count * 4), "cuMemcpyDtoH_v2 (" + what + ")");
    repetitions_checked.add(run, check_freivalds(operands.freivalds, c));
  };
  launch_gemm(gpu, plan, da, db, dc, n, what);  // warm-up (and cuBLAS's heuristics)
  check(api.stream_synchronize(gpu.stream), "cuStreamSynchronize (" + what + ")");
  verify_result(0);
  std::vector<double> rates, times_ms;
  for (int i = 0; i < repetitions(gpu.options); ++i) {
    check(api.memset_d32_async(dc, 0x7FC00000u, count, gpu.stream), "cuMemsetD32Async");  // NaN again, untimed
    float ms = 0;
    {
      const InFlight busy(*gpu.launches_in_flight);  // from the launch to the sync that ends it, not the readback
      check(api.event_record(gpu.start, gpu.stream), "cuEventRecord");
      launch_gemm(gpu, plan, da, db, dc, n, what);
      check(api.event_record(gpu.stop, gpu.stream), "cuEventRecord");
      check(api.event_synchronize(gpu.stop), "cuEventSynchronize (" + what + ")");
    }
    check(api.event_elapsed_time(&ms, gpu.start, gpu.stop), "cuEventElapsedTime");
    rates.push_back(teraflops(n, n, n, ms / 1e3));
    times_ms.push_back(ms);
    verify_result(i + 1);
  }
  // One timed GEMM lasts a few ms: the clock sampler (every 20 ms) would mostly see the host work between them, and a
  // GPU that throttles only under sustained load would never show it. So the same GEMM runs back to back for about
  // options.gemm_burst, untimed (the metric is the repetitions above), its last result verified like the others.
  const int burst = burst_launches(gpu.options, times_ms);
  if (burst > 0) {
    check(api.memset_d32_async(dc, 0x7FC00000u, count, gpu.stream), "cuMemsetD32Async");
    {
      const InFlight busy(*gpu.launches_in_flight);
      for (int i = 0; i < burst; ++i) launch_gemm(gpu, plan, da, db, dc, n, what);
      check(api.stream_synchronize(gpu.stream), "cuStreamSynchronize (" + what + ", sustained)");
    }
    verify_result(repetitions(gpu.options) + burst);
  }
  const double tolerance = default_tolerance(plan.precision);
  const GemmCheck verified =
      check_gemm_samples(operands.a, operands.b, c, n, n, n, gpu.options.gemm_samples, tolerance);
  const Summary summary = summarize(rates);
  const Expectation expectation = with_override(gpu.options, plan.id, gemm_expectation(plan, n, model, expectations));
  // Our tensor kernel where cuBLAS ran (and no operator value replaces it): its ratio to cuBLAS against the floor of
  // the GPU's compute capability, not the datasheet (docs/smoke.md).
  const bool against_cublas = plan.engine == GemmPlan::Engine::kernel && plan.precision != Precision::fp32 &&
                              plan.cublas_tflops && *plan.cublas_tflops > 0 && n >= plan.floor_size &&
                              gpu.options.overrides.count(plan.id) == 0;
  const TensorRatioFloor* ratio_floor =
      against_cublas ? find_tensor_ratio_floor(expectations, gpu.info.cc_major, gpu.info.cc_minor) : nullptr;
  const std::optional<double> expected =
      ratio_floor != nullptr ? std::optional<double>(*plan.cublas_tflops * ratio_floor->ratio) : expectation.expected;
  out.metrics.push_back(
      Metric{plan.id, "TFLOP/s", summary, expected, static_cast<double>(n), verified.ok() && repetitions_checked.ok()});
  const std::string versus = plan.cublas_tflops && *plan.cublas_tflops > 0
                                 ? ", " + format("%.2f", summary.median / *plan.cublas_tflops) + " x cuBLAS"
                                 : std::string();
  const std::string observed =
      what + " " + rate_text(summary.median) + " TFLOP/s (median of " + std::to_string(summary.count) + ", min " +
      rate_text(summary.min) + ", max " + rate_text(summary.max) + versus + ")" +
      (burst > 0
           ? "; then " + std::to_string(burst) + " back-to-back launches under load for the clock sampling (untimed)"
           : std::string());
  if (!verified.ok() || !repetitions_checked.ok()) {
    const std::string wrong = !verified.ok()
                                  ? std::to_string(verified.mismatches) + " of " + std::to_string(verified.sampled) +
                                        " sampled elements differ from the CPU reference; " + verified.first_mismatch
                                  : repetitions_checked.describe();
    out.findings.push_back(Finding{"smoke." + plan.id,
                                   Status::fail,
                                   observed + ": wrong results: " + wrong,
                                   "the GPU computed wrong results: check for Xid errors (sudo dmesg | grep -i xid), "
                                   "ECC errors (`gpuenv doctor`) and clocks",
                                   {}});
    return out;
  }
  const Judgement judgement = against_cublas ? judge_tensor_ratio(summary.median, *plan.cublas_tflops, ratio_floor,
                                                                  gpu.info.cc_major, gpu.info.cc_minor)
                                             : judge(summary.median, expectation, gpu.options.thresholds, "TFLOP/s");
  const std::string source = !against_cublas ? expectation.source
                             : ratio_floor != nullptr
                                 ? "the node's cuBLAS on the same operands " + rate_text(*plan.cublas_tflops) +
                                       " TFLOP/s x " + format("%.2g", ratio_floor->ratio) +
                                       " ([[tensor_vs_cublas]] floor for compute capability " +
                                       std::to_string(gpu.info.cc_major) + "." + std::to_string(gpu.info.cc_minor) +
                                       ", " + ratio_floor->status + "); " + ratio_floor->source
                                 : "the node's cuBLAS on the same operands " + rate_text(*plan.cublas_tflops) +
                                       " TFLOP/s (no [[tensor_vs_cublas]] floor for this compute capability)";
  Finding finding{"smoke." + plan.id,
                  judgement.status,
                  observed + ", whole result verified in all " + std::to_string(repetitions_checked.runs) +
                      " runs (Freivalds), " + std::to_string(verified.sampled) +
                      " sampled elements match the CPU reference (max relative error " +
                      format("%.2g", verified.max_relative_error) + ", tolerance " + format("%.0e", tolerance) + "); " +
                      (n < plan.floor_size && judgement.status == Status::skip
                           ? "not judged at " + std::to_string(n) + "^3: the floors hold for " +
                                 std::to_string(plan.floor_size) + "^3 and larger (one short launch cannot reach them)"
                           : judgement.explanation),
                  {},
                  source};
  if (ratio_floor != nullptr && !ratio_floor->calibrated() && judgement.status == Status::warn) {
    // cuBLAS ran on the same GPU a moment before (judged in its own finding): the uncalibrated floor, not the GPU, is
    // the likelier culprit.
    finding.remedy = "the floor is an uncalibrated goal: if smoke.cublas_" + plan.id +
                     " passes, the GPU is fine; run scripts/gpu-check and report the measured ratio so the "
                     "[[tensor_vs_cublas]] row can be calibrated";
  } else if (judgement.status == Status::warn || judgement.status == Status::fail) {
    finding.remedy =
        "check clocks, power capping and throttling (`nvidia-smi -q -d PERFORMANCE`) and other processes on the GPU";
  }
  out.findings.push_back(std::move(finding));
  return out;
}

StepOutcome prepare_cublas(Gpu& gpu, const std::string& driver_version) {
  StepOutcome out;
  const Cublas& cublas = *gpu.cublas;
  const int created = cublas.api.create(&gpu.cublas_handle);
  if (created != cublas_success) {
    gpu.cublas_handle = nullptr;
    out.findings.push_back(Finding{
        "smoke.cublas",
        Status::fail,
        "cuBLAS " + cublas.version + " (" + cublas.path + ") cannot start on this GPU: cublasCreate_v2 returned " +
            describe_cublas_status(cublas.api, created) + "; the driver supports CUDA " + driver_version,
        "the node's CUDA math libraries do not work with this driver: install a cuBLAS whose CUDA major the driver "
        "supports, or set GPUENV_CUBLAS_LIBRARY to one",
        {}});
    return out;
  }
  check_cublas(gpu, cublas.api.set_stream(gpu.cublas_handle, gpu.stream), "cublasSetStream_v2");
  out.findings.push_back(
      Finding{"smoke.cublas", Status::pass, "cuBLAS " + cublas.version + " (" + cublas.path + ") initialised", {}, {}});
  return out;
}

void release_cublas(Gpu& gpu) {
  if (gpu.cublas != nullptr && gpu.cublas_handle != nullptr) gpu.cublas->api.destroy(gpu.cublas_handle);
  gpu.cublas_handle = nullptr;
}

}  // namespace gpuenv::smoke
