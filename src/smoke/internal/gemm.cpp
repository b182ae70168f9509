// Matmuls: our own kernels (from the embedded fatbin) and the node's cuBLAS, on the same operands. The first launch's
// result is verified exactly on the host and becomes the reference; then sustained windows of back-to-back launches
// (>= 200 ms each, the median of 5) are timed launch by launch with events, every launch's C compared with the
// reference on the GPU. cuBLAS is judged against DCGM's floor or the model's peak, our kernels against cuBLAS on the
// same operands (the tensor kernel with a floor per compute capability); uncalibrated figures are reported only.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <shared_mutex>

#include "smoke/internal/device_check.hpp"
#include "smoke/internal/step.hpp"

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
    check(gpu.api.launch_kernel(gpu.sgemm, grid, grid, 1, 16, 16, 1, 0, gpu.stream.get(), params, nullptr),
          "cuLaunchKernel(smoke_sgemm)");
  } else {
    const unsigned grid = static_cast<unsigned>(n / 128);  // 128x128 tiles, 8 warps
    CUfunction function = plan.precision == Precision::bf16 ? gpu.bf16gemm : gpu.hgemm;
    check(gpu.api.launch_kernel(function, grid, grid, 1, 256, 1, 1, 0, gpu.stream.get(), params, nullptr),
          "cuLaunchKernel(" + what + ")");
  }
}

/// What this n^3 matmul should reach on `model`: nothing below the floor size; our SIMT kernel against the node's
/// cuBLAS on the same operands × a ratio when cuBLAS ran (our tensor kernel then has judge_tensor_ratio instead), else
/// like cuBLAS tensor GEMMs against peak × an efficiency (estimates: reported, not judged, while uncalibrated); cuBLAS
/// SGEMM against DCGM's targeted_stress floor for the SKU, a fail floor where the row lists it as verified.
Expectation gemm_expectation(const GemmPlan& plan, int n, const GpuExpectation* model,
                             const Expectations& expectations) {
  Expectation out;
  if (n < plan.floor_size) return out;
  const bool tensor = plan.precision != Precision::fp32;
  const KernelEfficiency& efficiency = expectations.kernel_efficiency;
  if (plan.engine == GemmPlan::Engine::cublas && !tensor) {
    if (model == nullptr || !model->dcgm_sgemm_target_gflops) return out;
    const double floor = *model->dcgm_sgemm_target_gflops / 1000.0 * expectations.dcgm_target_perf_min_ratio;
    // A DCGM SKU whose name is not this product's (the row leaves the figure out of `verified`) is shown, not judged.
    if (model->is_verified("dcgm_sgemm_target_gflops") && status_is_calibrated(expectations.dcgm_status)) {
      out.minimum = floor;
    } else {
      out.expected = floor;
      out.calibrated = false;
    }
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
  out.calibrated = efficiency.calibrated() && status_is_calibrated(model->status);
  out.source = model->model + " " +
               (tensor ? std::string(to_string(plan.precision)) + " tensor" : std::string("FP32")) + " peak " +
               rate_text(*peak) + " TFLOP/s x " + format("%.2g", factor) + " (gpuenv " +
               (plan.engine == GemmPlan::Engine::cublas ? "cuBLAS" : "kernel") + " efficiency, " + efficiency.status +
               "); " + model->source;
  return out;
}

/// Most launches in one timed window: a GPU whose events time a launch near 0 would otherwise queue without end.
constexpr int max_window_launches = 1024;

/// Launches in one sustained window: options' window length (200 ms; --quick 50 ms) at the time of one launch
/// (`one_ms`), at least 1 and at most max_window_launches.
int window_launches(const SmokeOptions& options, double one_ms) {
  const auto window =
      options.gemm_window.count() >= 0 ? options.gemm_window : std::chrono::milliseconds(options.quick ? 50 : 200);
  const double wanted = static_cast<double>(window.count()) / std::max(one_ms, 1e-3);
  return static_cast<int>(std::clamp(std::ceil(wanted), 1.0, static_cast<double>(max_window_launches)));
}

/// Sustained windows per matmul: options' count, else 5 (--quick 3).
int window_count(const SmokeOptions& options) {
  return options.gemm_windows > 0 ? options.gemm_windows : (options.quick ? 3 : 5);
}

/// What the sustained windows found: each window's rate and every launch's comparison with the reference.
struct WindowResults {
  std::vector<double> rates;  ///< TFLOP/s per window: its launches' FLOPs over their summed event intervals
  int launches_per_window = 0;
  int compared = 0;         ///< launches whose C was compared with the reference on the GPU
  int wrong = 0;            ///< ... that differed from it
  std::string first_wrong;  ///< "window 2, launch 17: 12 words differ, first C[i][j] = x, expected y"
};

/// The GEMM's buffers on one GPU.
struct GemmBuffers {
  CUdeviceptr a = 0, b = 0, c = 0, reference = 0, counters = 0;
};

/// Records one launch's comparison counters (count, key) into `out`: `where` names it in the message.
void note_launch(WindowResults& out, unsigned long long wrong, unsigned long long key, int n,
                 const std::string& where) {
  ++out.compared;
  if (wrong == 0 || out.wrong++ != 0) return;
  const std::uint64_t index = key >> 32;
  const auto word = static_cast<std::uint32_t>(key);
  float read = 0;
  std::memcpy(&read, &word, 4);
  out.first_wrong = where + ": " + std::to_string(wrong) + (wrong == 1 ? " element differs" : " elements differ") +
                    ", first C[" + std::to_string(index / static_cast<std::uint64_t>(n)) + "][" +
                    std::to_string(index % static_cast<std::uint64_t>(n)) + "] = " + format("%.9g", read);
}

/// Runs the sustained windows: back-to-back launches, each between its own pair of events (the GEMM alone is timed)
/// and each followed by a bitwise comparison of its C with the verified reference on the GPU (gpu-burn compares every
/// iteration's result with the first, compare.cu), C re-filled with NaN before each launch so that an element a launch
/// leaves unwritten cannot pass on the last one's value.
void run_windows(Gpu& gpu, const GemmPlan& plan, const GemmBuffers& buffers, int n, double one_ms,
                 const std::string& what, WindowResults& out) {
  const CudaApi& api = gpu.api;
  const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  out.launches_per_window = window_launches(gpu.options, one_ms);
  const auto launches = static_cast<std::size_t>(out.launches_per_window);
  while (gpu.timing_events.size() < 2 * launches) {
    CudaEvent event;
    check(create_event(api, 0, event), "cuEventCreate");
    gpu.timing_events.push_back(std::move(event));
  }
  const bool on_gpu = gpu.compare_words != nullptr;
  std::vector<unsigned long long> counters(2 * launches);
  for (int window = 1; window <= window_count(gpu.options); ++window) {
    for (std::size_t i = 0; i < launches; ++i) counters[2 * i] = 0, counters[2 * i + 1] = ~0ull;
    if (on_gpu) {
      check(api.memcpy_htod_async(buffers.counters, counters.data(), counters.size() * 8, gpu.stream.get()),
            "cuMemcpyHtoDAsync_v2 (comparison counters)");
    }
    {
      const InFlight busy(*gpu.launches_in_flight);  // the clock sampler's load: the whole window
      for (std::size_t i = 0; i < launches; ++i) {
        check(api.memset_d32_async(buffers.c, 0x7FC00000u, count, gpu.stream.get()), "cuMemsetD32Async");
        check(api.event_record(gpu.timing_events[2 * i].get(), gpu.stream.get()), "cuEventRecord");
        launch_gemm(gpu, plan, buffers.a, buffers.b, buffers.c, n, what);
        check(api.event_record(gpu.timing_events[2 * i + 1].get(), gpu.stream.get()), "cuEventRecord");
        if (on_gpu) queue_compare_words(gpu, buffers.c, buffers.reference, count, buffers.counters + 16 * i);
      }
      check(api.stream_synchronize(gpu.stream.get()), "cuStreamSynchronize (" + what + ", window)");
    }
    double ms = 0;
    for (std::size_t i = 0; i < launches; ++i) {
      float one = 0;
      check(api.event_elapsed_time(&one, gpu.timing_events[2 * i].get(), gpu.timing_events[2 * i + 1].get()),
            "cuEventElapsedTime");
      ms += one;
    }
    out.rates.push_back(teraflops(n, n, n, ms / 1e3) * static_cast<double>(launches));
    if (!on_gpu) {  // no kernels (cuBLAS only): the window's last C, compared on the host
      std::vector<float> c(count), reference(count);
      check(api.memcpy_dtoh(c.data(), buffers.c, count * 4), "cuMemcpyDtoH_v2 (" + what + ")");
      check(api.memcpy_dtoh(reference.data(), buffers.reference, count * 4), "cuMemcpyDtoH_v2 (" + what + ")");
      ++out.compared;
      if (std::memcmp(c.data(), reference.data(), count * 4) != 0 && out.wrong++ == 0)
        out.first_wrong = "window " + std::to_string(window) + ", last launch: C differs from the reference";
      continue;
    }
    check(api.memcpy_dtoh(counters.data(), buffers.counters, counters.size() * 8),
          "cuMemcpyDtoH_v2 (comparison counters)");
    for (std::size_t i = 0; i < launches; ++i) {
      note_launch(out, counters[2 * i], counters[2 * i + 1], n,
                  "window " + std::to_string(window) + ", launch " + std::to_string(i + 1));
    }
  }
}

/// The one-launch interval (ms) the windows are sized by, on the GPU's own event pair; that launch's C is compared with
/// the reference too (into `out`).
double time_one_launch(Gpu& gpu, const GemmPlan& plan, const GemmBuffers& buffers, int n, const std::string& what,
                       WindowResults& out) {
  const CudaApi& api = gpu.api;
  const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  const bool on_gpu = gpu.compare_words != nullptr;
  unsigned long long counters[2] = {0, ~0ull};
  if (on_gpu) {
    check(api.memcpy_htod_async(buffers.counters, counters, sizeof counters, gpu.stream.get()),
          "cuMemcpyHtoDAsync_v2 (comparison counters)");
  }
  check(api.memset_d32_async(buffers.c, 0x7FC00000u, count, gpu.stream.get()), "cuMemsetD32Async");
  check(api.event_record(gpu.start.get(), gpu.stream.get()), "cuEventRecord");
  launch_gemm(gpu, plan, buffers.a, buffers.b, buffers.c, n, what);
  check(api.event_record(gpu.stop.get(), gpu.stream.get()), "cuEventRecord");
  if (on_gpu) queue_compare_words(gpu, buffers.c, buffers.reference, count, buffers.counters);
  check(api.stream_synchronize(gpu.stream.get()), "cuStreamSynchronize (" + what + ")");
  float ms = 0;
  check(api.event_elapsed_time(&ms, gpu.start.get(), gpu.stop.get()), "cuEventElapsedTime");
  if (on_gpu) {
    check(api.memcpy_dtoh(counters, buffers.counters, sizeof counters), "cuMemcpyDtoH_v2 (comparison counters)");
    note_launch(out, counters[0], counters[1], n, "the sizing launch");
  }
  return ms;
}

/// The metric and finding of one matmul: wrong results fail (the reference, or any launch that differs from it);
/// otherwise its median window rate judged against cuBLAS (our tensor kernel: the floor of its compute capability) or
/// the data (gemm_expectation), an uncalibrated figure reported, not judged.
StepOutcome judge_gemm(const Gpu& gpu, const GemmPlan& plan, const GpuExpectation* model,
                       const Expectations& expectations, int n, const FreivaldsCheck& whole, const GemmCheck& sampled,
                       const WindowResults& windows) {
  StepOutcome out;
  const std::string what = std::string(plan.engine == GemmPlan::Engine::cublas ? "cuBLAS " : "") +
                           to_string(plan.precision) + " " + std::to_string(n) + "^3 matmul";
  const Summary summary = summarize(windows.rates);
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
  const bool right = whole.ok() && sampled.ok() && windows.wrong == 0;
  out.metrics.push_back(Metric{plan.id, "TFLOP/s", summary, expected, static_cast<double>(n), right});
  const std::string versus = plan.cublas_tflops && *plan.cublas_tflops > 0
                                 ? ", " + format("%.2f", summary.median / *plan.cublas_tflops) + " x cuBLAS"
                                 : std::string();
  const std::string observed = what + " " + rate_text(summary.median) + " TFLOP/s (median of " +
                               std::to_string(summary.count) + " sustained windows of " +
                               std::to_string(windows.launches_per_window) + " back-to-back launches, min " +
                               rate_text(summary.min) + ", max " + rate_text(summary.max) + versus + ")";
  if (!right) {
    std::string wrong;
    if (!whole.ok()) {
      wrong = "the first launch fails the whole-result check (C·x = A·(B·x), yᵀ·C = (yᵀ·A)·B): " +
              std::to_string(whole.wrong_rows) + " rows and " + std::to_string(whole.wrong_columns) +
              " columns differ; " + (whole.first_wrong.empty() ? std::string("nothing checked") : whole.first_wrong);
    } else if (!sampled.ok()) {
      wrong = std::to_string(sampled.mismatches) + " of " + std::to_string(sampled.sampled) +
              " sampled elements differ from the CPU reference; " + sampled.first_mismatch;
    } else {
      wrong = std::to_string(windows.wrong) + " of " + std::to_string(windows.compared) +
              " launches differ from the verified first result (compared bit for bit on the GPU); first " +
              windows.first_wrong;
    }
    out.findings.push_back(Finding{"smoke." + plan.id,
                                   Status::fail,
                                   (whole.ok() && sampled.ok() ? observed : what) + ": wrong results: " + wrong,
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
  const std::string checked =
      gpu.compare_words != nullptr
          ? "every one of the " + std::to_string(windows.compared) +
                " launches equals the verified first result bit for bit (compared on the GPU)"
          : "the last launch of each window equals the verified first result (compared on the host: kernels not "
            "loaded)";
  Finding finding{"smoke." + plan.id,
                  judgement.status,
                  observed + "; first result verified whole (Freivalds, both sides) and " +
                      std::to_string(sampled.sampled) + " sampled elements match the CPU reference (max relative " +
                      "error " + format("%.2g", sampled.max_relative_error) + ", tolerance " +
                      format("%.0e", default_tolerance(plan.precision)) + "), " + checked + "; " +
                      (n < plan.floor_size && judgement.status == Status::skip
                           ? "not judged at " + std::to_string(n) + "^3: the floors hold for " +
                                 std::to_string(plan.floor_size) + "^3 and larger (one short launch cannot reach them)"
                           : judgement.explanation),
                  {},
                  source};
  if (judgement.status == Status::warn || judgement.status == Status::fail) {
    finding.remedy =
        "check clocks, power capping and throttling (`nvidia-smi -q -d PERFORMANCE`) and other processes on the GPU";
  }
  out.findings.push_back(std::move(finding));
  return out;
}

}  // namespace

StepOutcome run_gemm(Gpu& gpu, const GemmPlan& plan, const GpuExpectation* model, const Expectations& expectations) {
  StepOutcome out;
  const CudaApi& api = gpu.api;
  const int n = round_up_128(plan.size);
  const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  const std::shared_ptr<const GemmOperands> shared = gpu.operand_cache->get(plan.precision, n);
  const GemmOperands& operands = *shared;
  const std::string what = std::string(plan.engine == GemmPlan::Engine::cublas ? "cuBLAS " : "") +
                           to_string(plan.precision) + " " + std::to_string(n) + "^3 matmul";
  const DeviceBuffer device_a(gpu, count * operands.element, "cuMemAlloc_v2 (" + what + ")");
  const DeviceBuffer device_b(gpu, count * operands.element, "cuMemAlloc_v2 (" + what + ")");
  const DeviceBuffer device_c(gpu, count * 4, "cuMemAlloc_v2 (" + what + ")");
  const DeviceBuffer reference(gpu, count * 4, "cuMemAlloc_v2 (" + what + ", reference)");
  const DeviceBuffer counters(gpu, 16 * static_cast<std::size_t>(max_window_launches),
                              "cuMemAlloc_v2 (" + what + ", comparison counters)");
  const GemmBuffers buffers{device_a.get(), device_b.get(), device_c.get(), reference.get(), counters.get()};
  // Uploads and the NaN pre-fill go on the GEMM's own (non-blocking) stream: the legacy stream would not be ordered
  // before the launch. The uploads wait for the timed sample of another GPU's host copies in flight (HostLink's
  // samples lock, bulk_transfer), never for its whole turn, and finish before this GPU lets go of the link.
  {
    const std::shared_lock<std::shared_timed_mutex> bulk = bulk_transfer(*gpu.host_link);
    check(api.memcpy_htod_async(buffers.a, operands.upload_a(), count * operands.element, gpu.stream.get()),
          "cuMemcpyHtoDAsync_v2");
    check(api.memcpy_htod_async(buffers.b, operands.upload_b(), count * operands.element, gpu.stream.get()),
          "cuMemcpyHtoDAsync_v2");
    check(api.stream_synchronize(gpu.stream.get()), "cuStreamSynchronize (" + what + " operands)");
  }
  check(api.memset_d32_async(buffers.c, 0x7FC00000u /* NaN: unwritten elements fail verification */, count,
                             gpu.stream.get()),
        "cuMemsetD32Async");

  // The reference: the first launch's whole result checked exactly on the host (Freivalds from both sides) and its
  // sampled elements against the CPU; every later launch is compared with it, bit for bit, on the GPU.
  launch_gemm(gpu, plan, buffers.a, buffers.b, buffers.c, n, what);  // also cuBLAS's heuristics
  check(api.stream_synchronize(gpu.stream.get()), "cuStreamSynchronize (" + what + ")");
  std::vector<float> c(count);
  {
    const std::shared_lock<std::shared_timed_mutex> bulk = bulk_transfer(*gpu.host_link);
    check(api.memcpy_dtoh(c.data(), buffers.c, count * 4), "cuMemcpyDtoH_v2 (" + what + ")");
  }
  const FreivaldsCheck whole = check_freivalds(operands.freivalds, c);
  const double tolerance = default_tolerance(plan.precision);
  const GemmCheck sampled = check_gemm_samples(operands.a, operands.b, c, n, n, n, gpu.options.gemm_samples, tolerance);
  c = {};
  WindowResults windows;
  if (whole.ok() && sampled.ok()) {
    check(api.memcpy_dtod_async(buffers.reference, buffers.c, count * 4, gpu.stream.get()), "cuMemcpyDtoDAsync_v2");
    const double one_ms = time_one_launch(gpu, plan, buffers, n, what, windows);
    run_windows(gpu, plan, buffers, n, one_ms, what, windows);
  }
  return judge_gemm(gpu, plan, model, expectations, n, whole, sampled, windows);
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
  check_cublas(gpu, cublas.api.set_stream(gpu.cublas_handle, gpu.stream.get()), "cublasSetStream_v2");
  out.findings.push_back(
      Finding{"smoke.cublas", Status::pass, "cuBLAS " + cublas.version + " (" + cublas.path + ") initialised", {}, {}});
  return out;
}

void release_cublas(Gpu& gpu) {
  if (gpu.cublas != nullptr && gpu.cublas_handle != nullptr) gpu.cublas->api.destroy(gpu.cublas_handle);
  gpu.cublas_handle = nullptr;
}

}  // namespace gpuenv::smoke
