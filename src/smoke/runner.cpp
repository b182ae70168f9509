#include "smoke/runner.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <future>
#include <memory>
#include <thread>

#include "smoke/cuda_api.hpp"
#include "smoke/verify.hpp"
#include "util/embedded_file.hpp"

#ifndef GPUENV_SMOKE_KERNELS_CUDA
#define GPUENV_SMOKE_KERNELS_CUDA ""
#endif
#ifndef GPUENV_SMOKE_KERNELS_ARCHS
#define GPUENV_SMOKE_KERNELS_ARCHS ""
#endif

namespace gpuenv::smoke {

std::span<const util::EmbeddedFile> embedded_smoke_kernels();  // generated: the nvcc fatbin, or nothing without nvcc

namespace {

using report::Finding;
using report::Status;
using namespace std::chrono_literals;

constexpr std::size_t mib = 1024 * 1024;

// Every caller passes a literal format with one double conversion.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
std::string format(const char* spec, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, value);
  return buffer;
}
#pragma GCC diagnostic pop

std::string rate_text(double value) { return format(value >= 100 ? "%.0f" : (value >= 10 ? "%.1f" : "%.2f"), value); }

std::string size_text(std::size_t bytes) {
  if (bytes >= 1024 * mib) return format("%.1f GiB", static_cast<double>(bytes) / (1024.0 * mib));
  return format("%.0f MiB", static_cast<double>(bytes) / mib);
}

bool is_sticky(CUresult result) {
  return result == cuda_error_illegal_address || result == cuda_error_launch_failed ||
         result == cuda_error_launch_timeout || result == cuda_error_ecc_uncorrectable || result == cuda_error_unknown;
}

/// Everything one GPU's steps share. Owned jointly by the main thread and the step threads, so an abandoned
/// (hung) step keeps it, and the library, alive.
struct Gpu {
  std::shared_ptr<system::DynamicLibrary> library;
  CudaApi api;
  SmokeOptions options;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUevent start = nullptr;
  CUevent stop = nullptr;
  CUmodule module = nullptr;
  CUfunction sgemm = nullptr;
  CUfunction hgemm = nullptr;
  CUfunction bf16gemm = nullptr;
  DeviceInfo info;
  // copy buffers
  std::size_t bytes = 0;
  CUdeviceptr device_a = 0;
  CUdeviceptr device_b = 0;
  std::uint32_t* pinned = nullptr;
  std::vector<std::uint32_t> pageable;
  std::vector<std::uint32_t> readback;  // pageable scratch for verification
  PatternCheck h2d_check;
};

/// The outcome of one step, handed back to the main thread.
struct StepOutcome {
  std::vector<Finding> findings;
  std::vector<Metric> metrics;
  bool stop = false;  ///< the GPU is unusable (sticky error); skip its remaining steps
};

/// A failing CUDA call as an exception inside a step; turned into a finding by run_step.
struct CudaFailure {
  std::string what;
  CUresult result;
};

void check(CUresult result, const std::string& what) {
  if (result != cuda_success) throw CudaFailure{what, result};
}

Finding cuda_finding(const Gpu& gpu, const std::string& id, const CudaFailure& failure) {
  Finding out{id, Status::fail, failure.what + " failed: " + describe_cuda_error(gpu.api, failure.result), {}, {}};
  if (failure.result == cuda_error_out_of_memory) {
    out.message = "out of GPU memory: " + out.message;
    out.remedy = "free GPU memory (nvidia-smi lists the processes holding it) or rerun with --quick";
  } else if (is_sticky(failure.result)) {
    out.message = "the GPU faulted: " + out.message;
    out.remedy =
        "check the kernel log for Xid errors (sudo dmesg | grep -i xid) and run `gpuenv doctor`; the GPU may need a "
        "reset";
  } else {
    out.remedy = "run `gpuenv doctor` to check the driver and the GPU";
  }
  return out;
}

/// Runs `step` on its own thread and waits until the deadline; nullopt means it hung (the thread is abandoned).
template <typename Step>
std::optional<StepOutcome> run_step(const std::shared_ptr<Gpu>& gpu, const std::string& id, Step step) {
  auto promise = std::make_shared<std::promise<StepOutcome>>();
  std::future<StepOutcome> future = promise->get_future();
  std::thread([gpu, promise, id, step] {
    StepOutcome outcome;
    try {
      if (gpu->context != nullptr) check(gpu->api.ctx_set_current(gpu->context), "cuCtxSetCurrent");
      outcome = step(*gpu);
    } catch (const CudaFailure& failure) {
      outcome.findings.push_back(cuda_finding(*gpu, id, failure));
      outcome.stop = is_sticky(failure.result) || failure.what.rfind("cuCtx", 0) == 0;
    } catch (const std::exception& error) {
      outcome.findings.push_back(Finding{id, Status::fail, std::string("internal error: ") + error.what(), {}, {}});
    }
    promise->set_value(std::move(outcome));
  }).detach();
  if (future.wait_for(gpu->options.step_timeout) != std::future_status::ready) return std::nullopt;
  return future.get();
}

// ---------------------------------------------------------------------------------------------------- device query

StepOutcome query_device(Gpu& gpu) {
  StepOutcome out;
  const CudaApi& api = gpu.api;
  check(api.device_get(&gpu.device, gpu.ordinal), "cuDeviceGet");
  char name[256] = {};
  check(api.device_get_name(name, sizeof name - 1, gpu.device), "cuDeviceGetName");
  gpu.info.name = name;
  char bus[64] = {};
  if (api.device_get_pci_bus_id(bus, sizeof bus - 1, gpu.device) == cuda_success) gpu.info.pci_bus_id = bus;
  auto attribute = [&](int which) {
    int value = 0;
    return api.device_get_attribute(&value, which, gpu.device) == cuda_success ? value : 0;
  };
  gpu.info.cc_major = attribute(attribute_compute_capability_major);
  gpu.info.cc_minor = attribute(attribute_compute_capability_minor);
  gpu.info.sm_count = attribute(attribute_multiprocessor_count);
  gpu.info.clock_mhz = attribute(attribute_clock_rate) / 1000;
  gpu.info.memory_clock_mhz = attribute(attribute_memory_clock_rate) / 1000;
  gpu.info.memory_bus_width = attribute(attribute_global_memory_bus_width);
  std::size_t total = 0;
  if (api.device_total_mem(&total, gpu.device) == cuda_success) gpu.info.memory_bytes = total;
  check(api.primary_ctx_retain(&gpu.context, gpu.device), "cuDevicePrimaryCtxRetain");
  check(api.ctx_set_current(gpu.context), "cuCtxSetCurrent");
  check(api.stream_create(&gpu.stream, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
  check(api.event_create(&gpu.start, 0), "cuEventCreate");
  check(api.event_create(&gpu.stop, 0), "cuEventCreate");
  out.findings.push_back(
      Finding{"smoke.device",
              Status::pass,
              gpu.info.name + " at " + (gpu.info.pci_bus_id.empty() ? "unknown PCI address" : gpu.info.pci_bus_id) +
                  ": CC " + std::to_string(gpu.info.cc_major) + "." + std::to_string(gpu.info.cc_minor) + ", " +
                  std::to_string(gpu.info.sm_count) + " SMs, " + size_text(gpu.info.memory_bytes) + ", SM clock " +
                  std::to_string(gpu.info.clock_mhz) + " MHz, memory clock " +
                  std::to_string(gpu.info.memory_clock_mhz) + " MHz",
              {},
              {}});
  return out;
}

// ---------------------------------------------------------------------------------------------------- kernels

StepOutcome load_kernels(Gpu& gpu, const std::string& driver_version) {
  StepOutcome out;
  const KernelsInfo kernels = embedded_kernels_info();
  if (!kernels.embedded) {
    out.findings.push_back(
        Finding{"smoke.kernels",
                Status::skip,
                "skipped: built without CUDA (nvcc was not found when gpuenv was built); matmul tests do not run",
                "rebuild gpuenv on a machine with the CUDA toolkit (nvcc) to include the kernels",
                {}});
    return out;
  }
  // cuModuleLoadData reads the fatbin header with 8-byte loads: give it an aligned copy.
  const std::string_view image = embedded_smoke_kernels().front().contents;
  std::vector<std::uint64_t> aligned((image.size() + 7) / 8 + 1, 0);
  std::memcpy(aligned.data(), image.data(), image.size());
  const CUresult loaded = gpu.api.module_load_data(&gpu.module, aligned.data());
  const std::string cc = std::to_string(gpu.info.cc_major) + "." + std::to_string(gpu.info.cc_minor);
  if (loaded == cuda_error_no_binary_for_gpu || loaded == cuda_error_unsupported_ptx_version ||
      loaded == cuda_error_invalid_ptx || loaded == cuda_error_invalid_image) {
    gpu.module = nullptr;
    out.findings.push_back(Finding{
        "smoke.kernels",
        Status::warn,
        "the embedded kernels cannot run here: cuModuleLoadData returned " + describe_cuda_error(gpu.api, loaded) +
            "; kernels built with CUDA " + kernels.cuda_version + " for " + kernels.archs + "; driver supports CUDA " +
            driver_version + ", GPU is CC " + cc + "; device query and copies still ran, matmul tests skipped",
        "a driver that supports CUDA " + kernels.cuda_version +
            " (or newer) runs them; a GPU older than CC 7.5 is not supported by CUDA 13",
        {}});
    return out;
  }
  check(loaded, "cuModuleLoadData");
  check(gpu.api.module_get_function(&gpu.sgemm, gpu.module, "smoke_sgemm"), "cuModuleGetFunction(smoke_sgemm)");
  check(gpu.api.module_get_function(&gpu.hgemm, gpu.module, "smoke_hgemm_wmma"),
        "cuModuleGetFunction(smoke_hgemm_wmma)");
  check(gpu.api.module_get_function(&gpu.bf16gemm, gpu.module, "smoke_bf16gemm_wmma"),
        "cuModuleGetFunction(smoke_bf16gemm_wmma)");
  out.findings.push_back(
      Finding{"smoke.kernels",
              Status::pass,
              "kernels loaded (CUDA " + kernels.cuda_version + " fatbin, " + std::to_string(kernels.bytes) + " bytes)",
              {},
              {}});
  return out;
}

// ---------------------------------------------------------------------------------------------------- copies

int repetitions(const SmokeOptions& options) {
  return options.repetitions > 0 ? options.repetitions : (options.quick ? 3 : 10);
}

StepOutcome allocate_copy_buffers(Gpu& gpu) {
  const CudaApi& api = gpu.api;
  gpu.bytes = gpu.options.copy_bytes > 0 ? gpu.options.copy_bytes : (gpu.options.quick ? 32 * mib : 256 * mib);
  gpu.bytes = std::max<std::size_t>(gpu.bytes / 4 * 4, 4);
  check(api.mem_alloc(&gpu.device_a, gpu.bytes), "cuMemAlloc_v2(" + size_text(gpu.bytes) + ")");
  check(api.mem_alloc(&gpu.device_b, gpu.bytes), "cuMemAlloc_v2(" + size_text(gpu.bytes) + ")");
  void* host = nullptr;
  check(api.mem_alloc_host(&host, gpu.bytes), "cuMemAllocHost_v2(" + size_text(gpu.bytes) + ")");
  gpu.pinned = static_cast<std::uint32_t*>(host);
  gpu.pageable.assign(gpu.bytes / 4, 0);
  gpu.readback.assign(gpu.bytes / 4, 0);
  return {};
}

void free_copy_buffers(Gpu& gpu) {
  if (gpu.device_a != 0) gpu.api.mem_free(gpu.device_a);
  if (gpu.device_b != 0) gpu.api.mem_free(gpu.device_b);
  if (gpu.pinned != nullptr) gpu.api.mem_free_host(gpu.pinned);
  gpu.device_a = gpu.device_b = 0;
  gpu.pinned = nullptr;
  gpu.pageable = {};
  gpu.readback = {};
}

/// Times `copy` (one transfer of gpu.bytes) after one warm-up: with events on the stream when `events`, else host
/// clock.
template <typename Copy>
Summary time_copies(Gpu& gpu, bool events, double bytes_counted, Copy copy) {
  copy();
  check(gpu.api.stream_synchronize(gpu.stream), "cuStreamSynchronize");
  std::vector<double> rates;
  for (int i = 0; i < repetitions(gpu.options); ++i) {
    double seconds = 0;
    if (events) {
      check(gpu.api.event_record(gpu.start, gpu.stream), "cuEventRecord");
      copy();
      check(gpu.api.event_record(gpu.stop, gpu.stream), "cuEventRecord");
      check(gpu.api.event_synchronize(gpu.stop), "cuEventSynchronize");
      float ms = 0;
      check(gpu.api.event_elapsed_time(&ms, gpu.start, gpu.stop), "cuEventElapsedTime");
      seconds = ms / 1e3;
    } else {
      const auto begin = std::chrono::steady_clock::now();
      copy();
      check(gpu.api.stream_synchronize(gpu.stream), "cuStreamSynchronize");
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    }
    rates.push_back(gigabytes_per_second(bytes_counted, seconds));
  }
  return summarize(rates);
}

/// Reads device buffer `source` back into gpu.readback and checks the pattern.
PatternCheck read_back_and_check(Gpu& gpu, CUdeviceptr source, std::uint32_t seed) {
  std::fill(gpu.readback.begin(), gpu.readback.end(), 0u);
  check(gpu.api.memcpy_dtoh(gpu.readback.data(), source, gpu.bytes), "cuMemcpyDtoH_v2 (verification)");
  return check_pattern(gpu.readback, seed);
}

struct CopyJudgement {
  std::optional<double> expected;
  std::optional<double> minimum;
  std::string source;  ///< where the expectation comes from
};

StepOutcome copy_outcome(const Gpu& gpu, const std::string& id, const std::string& label, const Summary& rates,
                         double bytes, const PatternCheck& data, const CopyJudgement& expectation) {
  StepOutcome out;
  Metric metric{id, "GB/s", rates, expectation.expected, bytes};
  out.metrics.push_back(metric);
  const std::string observed = label + " " + rate_text(rates.median) + " GB/s (median of " +
                               std::to_string(rates.count) + ", " + size_text(gpu.bytes) + ", min " +
                               rate_text(rates.min) + ", max " + rate_text(rates.max) + ")";
  if (!data.ok()) {
    out.findings.push_back(
        Finding{"smoke." + id,
                Status::fail,
                observed + ": data corrupted: " + data.describe(gpu.bytes / 4),
                "the copy returned wrong data: check for Xid errors (sudo dmesg | grep -i xid) and run `gpuenv doctor`",
                {}});
    return out;
  }
  const Judgement judgement =
      judge(rates.median, expectation.expected, expectation.minimum, gpu.options.thresholds, "GB/s");
  Finding finding{
      "smoke." + id, judgement.status, observed + ", data verified; " + judgement.explanation, {}, expectation.source};
  if (judgement.status == Status::warn || judgement.status == Status::fail) {
    finding.remedy =
        id.find("2d_pinned") != std::string::npos || id.rfind("h2d", 0) == 0
            ? "check the PCIe link (gen and width in `nvidia-smi -q`), the slot, NUMA placement and IOMMU settings"
            : "check clocks and throttling (`nvidia-smi -q -d PERFORMANCE`) and run `gpuenv doctor`";
  }
  out.findings.push_back(std::move(finding));
  return out;
}

}  // namespace

std::optional<int> pcie_generation_from_speed(std::string_view text) {
  double rate = 0;
  if (std::sscanf(std::string(text).c_str(), "%lf", &rate) != 1) return std::nullopt;
  const std::pair<double, int> table[] = {{2.5, 1}, {5.0, 2}, {8.0, 3}, {16.0, 4}, {32.0, 5}, {64.0, 6}};
  for (const auto& [speed, generation] : table) {
    if (std::fabs(rate - speed) < 0.01) return generation;
  }
  return std::nullopt;
}

std::string sysfs_bus_id(std::string_view driver_bus_id) {
  std::string id(driver_bus_id);
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);  // 8-digit domain -> 4 digits
  return id;
}

namespace {

void read_pcie_link(system::System& system, DeviceInfo& info) {
  if (info.pci_bus_id.empty()) return;
  const std::string base = "/sys/bus/pci/devices/" + sysfs_bus_id(info.pci_bus_id) + "/";
  auto number = [&](const std::string& file) -> std::optional<int> {
    auto text = system.read_file(base + file);
    if (!text) return std::nullopt;
    int value = 0;
    return std::sscanf(text->c_str(), "%d", &value) == 1 && value > 0 ? std::optional<int>(value) : std::nullopt;
  };
  auto generation = [&](const std::string& file) -> std::optional<int> {
    auto text = system.read_file(base + file);
    return text ? pcie_generation_from_speed(*text) : std::nullopt;
  };
  info.pcie_generation = generation("current_link_speed");
  info.pcie_width = number("current_link_width");
  info.pcie_max_generation = generation("max_link_speed");
  info.pcie_max_width = number("max_link_width");
}

// ---------------------------------------------------------------------------------------------------- matmul

struct GemmPlan {
  std::string id;
  Precision precision;
  int size;
};

int round_up_64(int value) { return std::max(64, (value + 63) / 64 * 64); }

StepOutcome run_gemm(Gpu& gpu, const GemmPlan& plan, const GpuExpectation* model, const Expectations& expectations) {
  StepOutcome out;
  const CudaApi& api = gpu.api;
  const int n = round_up_64(plan.size);
  const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  // Operands as the GPU sees them (rounded to 16 bits for the tensor kernels), kept as floats for the CPU reference.
  std::vector<float> a(count), b(count);
  std::vector<std::uint16_t> a16, b16;
  for (std::size_t i = 0; i < count; ++i) {
    a[i] = operand_value(i, 11);
    b[i] = operand_value(i, 23);
  }
  std::size_t element = 4;
  if (plan.precision != Precision::fp32) {
    element = 2;
    a16.resize(count);
    b16.resize(count);
    const bool bf16 = plan.precision == Precision::bf16;
    for (std::size_t i = 0; i < count; ++i) {
      a16[i] = bf16 ? float_to_bf16(a[i]) : float_to_half(a[i]);
      b16[i] = bf16 ? float_to_bf16(b[i]) : float_to_half(b[i]);
      a[i] = bf16 ? bf16_to_float(a16[i]) : half_to_float(a16[i]);
      b[i] = bf16 ? bf16_to_float(b16[i]) : half_to_float(b16[i]);
    }
  }
  CUdeviceptr da = 0, db = 0, dc = 0;
  struct Free {
    const CudaApi& api;
    CUdeviceptr* pointers[3];
    ~Free() {
      for (CUdeviceptr* pointer : pointers) {
        if (*pointer != 0) api.mem_free(*pointer);
      }
    }
  } release{api, {&da, &db, &dc}};
  const std::string what = std::string(to_string(plan.precision)) + " " + std::to_string(n) + "^3 matmul";
  check(api.mem_alloc(&da, count * element), "cuMemAlloc_v2 (" + what + ")");
  check(api.mem_alloc(&db, count * element), "cuMemAlloc_v2 (" + what + ")");
  check(api.mem_alloc(&dc, count * 4), "cuMemAlloc_v2 (" + what + ")");
  check(api.memcpy_htod(da, element == 4 ? static_cast<const void*>(a.data()) : a16.data(), count * element),
        "cuMemcpyHtoD_v2");
  check(api.memcpy_htod(db, element == 4 ? static_cast<const void*>(b.data()) : b16.data(), count * element),
        "cuMemcpyHtoD_v2");
  check(api.memset_d32(dc, 0x7FC00000u /* NaN: unwritten elements fail verification */, count), "cuMemsetD32_v2");

  CUfunction function =
      plan.precision == Precision::fp32 ? gpu.sgemm : (plan.precision == Precision::bf16 ? gpu.bf16gemm : gpu.hgemm);
  int m_arg = n, n_arg = n, k_arg = n;
  void* params[] = {&da, &db, &dc, &m_arg, &n_arg, &k_arg};
  const unsigned grid = static_cast<unsigned>(n / 64);
  auto launch = [&] {
    if (plan.precision == Precision::fp32) {
      check(api.launch_kernel(function, grid, grid, 1, 16, 16, 1, 0, gpu.stream, params, nullptr),
            "cuLaunchKernel(smoke_sgemm)");
    } else {
      check(api.launch_kernel(function, grid, grid, 1, 128, 1, 1, 0, gpu.stream, params, nullptr),
            "cuLaunchKernel(" + what + ")");
    }
  };
  launch();
  check(api.stream_synchronize(gpu.stream), "cuStreamSynchronize (" + what + ")");
  std::vector<double> rates;
  for (int i = 0; i < repetitions(gpu.options); ++i) {
    check(api.event_record(gpu.start, gpu.stream), "cuEventRecord");
    launch();
    check(api.event_record(gpu.stop, gpu.stream), "cuEventRecord");
    check(api.event_synchronize(gpu.stop), "cuEventSynchronize (" + what + ")");
    float ms = 0;
    check(api.event_elapsed_time(&ms, gpu.start, gpu.stop), "cuEventElapsedTime");
    rates.push_back(teraflops(n, n, n, ms / 1e3));
  }
  std::vector<float> c(count);
  check(api.memcpy_dtoh(c.data(), dc, count * 4), "cuMemcpyDtoH_v2 (" + what + ")");
  const double tolerance = default_tolerance(plan.precision);
  const GemmCheck verified = check_gemm_samples(a, b, c, n, n, n, gpu.options.gemm_samples, tolerance);
  const Summary summary = summarize(rates);

  std::optional<double> expected;
  std::string source;
  if (model != nullptr) {
    const bool tensor = plan.precision != Precision::fp32;
    const std::optional<double> peak = tensor ? model->tensor_tflops : model->fp32_tflops;
    const double efficiency = tensor ? expectations.efficiency.tensor : expectations.efficiency.sgemm;
    if (peak) {
      expected = *peak * efficiency;
      source = model->model + " " +
               (tensor ? std::string(to_string(plan.precision)) + " tensor" : std::string("FP32")) + " peak " +
               rate_text(*peak) + " TFLOP/s x " + format("%.2g", efficiency) + " (gpuenv kernel efficiency, " +
               expectations.efficiency.status + "); " + model->source;
    }
  }
  out.metrics.push_back(Metric{plan.id, "TFLOP/s", summary, expected, static_cast<double>(n)});
  const std::string observed = what + " " + rate_text(summary.median) + " TFLOP/s (median of " +
                               std::to_string(summary.count) + ", min " + rate_text(summary.min) + ", max " +
                               rate_text(summary.max) + ")";
  if (!verified.ok()) {
    out.findings.push_back(Finding{"smoke." + plan.id,
                                   Status::fail,
                                   observed + ": wrong results: " + std::to_string(verified.mismatches) + " of " +
                                       std::to_string(verified.sampled) +
                                       " sampled elements differ from the CPU reference; " + verified.first_mismatch,
                                   "the GPU computed wrong results: check for Xid errors (sudo dmesg | grep -i xid), "
                                   "ECC errors (`gpuenv doctor`) and clocks",
                                   {}});
    return out;
  }
  const Judgement judgement = judge(summary.median, expected, std::nullopt, gpu.options.thresholds, "TFLOP/s");
  Finding finding{"smoke." + plan.id,
                  judgement.status,
                  observed + ", " + std::to_string(verified.sampled) +
                      " sampled elements match the CPU reference (max relative error " +
                      format("%.2g", verified.max_relative_error) + ", tolerance " + format("%.0e", tolerance) + "); " +
                      judgement.explanation,
                  {},
                  source};
  if (judgement.status == Status::warn || judgement.status == Status::fail) {
    finding.remedy =
        "check clocks, power capping and throttling (`nvidia-smi -q -d PERFORMANCE`) and other processes on the GPU";
  }
  out.findings.push_back(std::move(finding));
  return out;
}

// ---------------------------------------------------------------------------------------------------- one GPU

void run_device(system::System& system, const std::shared_ptr<Gpu>& gpu, const Expectations& expectations,
                const std::string& driver_version, DeviceResult& result) {
  bool stopped = false;
  auto step = [&](const std::string& id, auto body) {
    if (stopped) return false;
    std::optional<StepOutcome> outcome = run_step(gpu, id, body);
    if (!outcome) {
      result.hung = true;
      stopped = true;
      result.findings.push_back(Finding{id,
                                        Status::fail,
                                        "hang: the step did not finish within " +
                                            std::to_string(gpu->options.step_timeout.count() / 1000) +
                                            " s; the GPU was abandoned",
                                        "check the kernel log for Xid errors (sudo dmesg | grep -i xid) and run "
                                        "`gpuenv doctor`; the GPU may need a reset",
                                        {}});
      return false;
    }
    for (Finding& finding : outcome->findings) result.findings.push_back(std::move(finding));
    for (Metric& metric : outcome->metrics) result.metrics.push_back(std::move(metric));
    if (outcome->stop) stopped = true;
    return !outcome->stop && std::none_of(outcome->findings.begin(), outcome->findings.end(),
                                          [](const Finding& finding) { return finding.status == Status::fail; });
  };

  const bool queried = step("smoke.device", query_device);
  if (!queried) {
    if (!result.hung) stopped = true;
    return;
  }
  result.info = gpu->info;
  const GpuExpectation* model = find_gpu(expectations, gpu->info.name);
  if (model != nullptr) result.info.expectation_model = model->model;
  step("smoke.kernels", [driver_version](Gpu& g) { return load_kernels(g, driver_version); });

  // Copies.
  const bool have_buffers = step("smoke.copy_buffers", allocate_copy_buffers);
  if (have_buffers && !stopped) {
    const double bytes = static_cast<double>(gpu->bytes);
    CopyJudgement pcie;
    // Pinned H2D first; the PCIe link is read right after it (an idle link may train down).
    step("smoke.h2d_pinned", [bytes](Gpu& g) {
      fill_pattern(std::span<std::uint32_t>(g.pinned, g.bytes / 4), 1);
      const Summary rates = time_copies(g, true, bytes, [&] {
        check(g.api.memcpy_htod_async(g.device_a, g.pinned, g.bytes, g.stream), "cuMemcpyHtoDAsync_v2");
      });
      g.h2d_check = read_back_and_check(g, g.device_a, 1);
      StepOutcome out;
      out.metrics.push_back(Metric{"h2d_pinned", "GB/s", rates, std::nullopt, bytes});
      return out;
    });
    // Judged here, on the main thread, once the PCIe link is known (read right after the copy: an idle link may train
    // down).
    if (!stopped && !result.metrics.empty() && result.metrics.back().id == "h2d_pinned") {
      const Summary rates = result.metrics.back().summary;
      result.metrics.pop_back();
      read_pcie_link(system, result.info);
      if (result.info.pcie_generation && result.info.pcie_width) {
        if (auto link = pcie_expectation(expectations, *result.info.pcie_generation, *result.info.pcie_width)) {
          pcie = CopyJudgement{link->expected_gbs, link->minimum_gbs, link->source};
        }
      }
      StepOutcome judged = copy_outcome(*gpu, "h2d_pinned", "pinned host->device", rates, bytes, gpu->h2d_check, pcie);
      if (!result.info.pcie_generation) judged.findings.back().message += " (PCIe link unknown: sysfs not readable)";
      if (result.info.pcie_width && result.info.pcie_max_width &&
          *result.info.pcie_width < *result.info.pcie_max_width) {
        result.findings.push_back(
            Finding{"smoke.pcie_link",
                    Status::warn,
                    "PCIe link runs x" + std::to_string(*result.info.pcie_width) + " but the GPU supports x" +
                        std::to_string(*result.info.pcie_max_width),
                    "reseat the GPU or check the slot and riser; a degraded link cuts host<->device bandwidth",
                    {}});
      }
      for (Finding& finding : judged.findings) result.findings.push_back(std::move(finding));
      for (Metric& metric : judged.metrics) result.metrics.push_back(std::move(metric));
    }
    step("smoke.d2h_pinned", [bytes, pcie](Gpu& g) {
      std::fill(g.pinned, g.pinned + g.bytes / 4, 0u);
      const Summary rates = time_copies(g, true, bytes, [&] {
        check(g.api.memcpy_dtoh_async(g.pinned, g.device_a, g.bytes, g.stream), "cuMemcpyDtoHAsync_v2");
      });
      const PatternCheck data = check_pattern(std::span<const std::uint32_t>(g.pinned, g.bytes / 4), 1);
      return copy_outcome(g, "d2h_pinned", "pinned device->host", rates, bytes, data, pcie);
    });
    step("smoke.h2d_pageable", [bytes](Gpu& g) {
      fill_pattern(g.pageable, 2);
      const Summary rates = time_copies(g, false, bytes, [&] {
        check(g.api.memcpy_htod(g.device_a, g.pageable.data(), g.bytes), "cuMemcpyHtoD_v2");
      });
      const PatternCheck data = read_back_and_check(g, g.device_a, 2);
      CopyJudgement none;
      return copy_outcome(g, "h2d_pageable", "pageable host->device", rates, bytes, data, none);
    });
    step("smoke.d2h_pageable", [bytes](Gpu& g) {
      std::fill(g.pageable.begin(), g.pageable.end(), 0u);
      const Summary rates = time_copies(g, false, bytes, [&] {
        check(g.api.memcpy_dtoh(g.pageable.data(), g.device_a, g.bytes), "cuMemcpyDtoH_v2");
      });
      const PatternCheck data = check_pattern(g.pageable, 2);
      return copy_outcome(g, "d2h_pageable", "pageable device->host", rates, bytes, data, CopyJudgement{});
    });
    CopyJudgement memory;
    if (model != nullptr && model->memory_bandwidth) {
      memory =
          CopyJudgement{*model->memory_bandwidth * expectations.efficiency.d2d_copy, model->memory_bandwidth_minimum,
                        model->model + " memory bandwidth " + rate_text(*model->memory_bandwidth) + " GB/s x " +
                            format("%.2g", expectations.efficiency.d2d_copy) + "; " + model->source};
    }
    step("smoke.d2d", [bytes, memory](Gpu& g) {
      check(g.api.memset_d32(g.device_b, 0, g.bytes / 4), "cuMemsetD32_v2");
      // A device-to-device copy reads and writes every byte: count both against the memory bandwidth.
      const Summary rates = time_copies(g, true, 2 * bytes, [&] {
        check(g.api.memcpy_dtod_async(g.device_b, g.device_a, g.bytes, g.stream), "cuMemcpyDtoDAsync_v2");
      });
      const PatternCheck data = read_back_and_check(g, g.device_b, 2);
      return copy_outcome(g, "d2d", "device->device", rates, 2 * bytes, data, memory);
    });
  }
  if (!stopped) {
    run_step(gpu, "smoke.copy_buffers", [](Gpu& g) {
      free_copy_buffers(g);
      return StepOutcome{};
    });
  }

  // Matmuls.
  if (!stopped && gpu->module != nullptr) {
    const SmokeOptions& options = gpu->options;
    const int sgemm_size = options.sgemm_size > 0 ? options.sgemm_size : (options.quick ? 1024 : 4096);
    const int tensor_size = options.tensor_size > 0 ? options.tensor_size : (options.quick ? 2048 : 8192);
    const bool bf16 = gpu->info.cc_major >= 8;
    const GemmPlan plans[] = {
        {"sgemm_fp32", Precision::fp32, sgemm_size},
        {bf16 ? "gemm_bf16" : "gemm_fp16", bf16 ? Precision::bf16 : Precision::fp16, tensor_size}};
    for (const GemmPlan& plan : plans) {
      step("smoke." + plan.id, [plan, model, &expectations](Gpu& g) { return run_gemm(g, plan, model, expectations); });
    }
  } else if (!stopped) {
    result.findings.push_back(Finding{
        "smoke.matmul", Status::skip, "matmul tests skipped: the kernels are not loaded (see smoke.kernels)", {}, {}});
  }
  if (!stopped) {
    run_step(gpu, "smoke.release", [](Gpu& g) {
      if (g.module != nullptr) g.api.module_unload(g.module);
      if (g.start != nullptr) g.api.event_destroy(g.start);
      if (g.stop != nullptr) g.api.event_destroy(g.stop);
      if (g.stream != nullptr) g.api.stream_destroy(g.stream);
      g.api.primary_ctx_release(g.device);
      g.module = nullptr;
      return StepOutcome{};
    });
  }
}

}  // namespace

KernelsInfo embedded_kernels_info() {
  KernelsInfo out;
  const auto files = embedded_smoke_kernels();
  out.embedded = !files.empty() && !files.front().contents.empty();
  out.bytes = out.embedded ? files.front().contents.size() : 0;
  out.cuda_version = GPUENV_SMOKE_KERNELS_CUDA;
  out.archs = GPUENV_SMOKE_KERNELS_ARCHS;
  return out;
}

util::Expected<SmokeReport> run_smoke(system::System& system, const SmokeOptions& options) {
  auto expectations = shipped_expectations();
  if (!expectations) return expectations.error();
  SmokeReport report;
  report.library = options.library;
  report.kernels = embedded_kernels_info();
  auto finish = [&]() -> util::Expected<SmokeReport> {
    std::vector<Finding> all = report.findings;
    for (const DeviceResult& device : report.devices)
      all.insert(all.end(), device.findings.begin(), device.findings.end());
    report.verdict = all.empty() ? report::Verdict::not_ok : report::verdict_of(all);
    return report;
  };

  auto loaded = system.load_library(options.library);
  if (!loaded) {
    report.findings.push_back(
        Finding{"smoke.driver",
                Status::fail,
                "no NVIDIA driver found: " + options.library + " cannot be loaded (" + loaded.error().message + ")",
                "install the NVIDIA driver (run `gpuenv doctor` for details), or run on a machine with a GPU",
                {}});
    return finish();
  }
  auto shared = std::make_shared<Gpu>();
  shared->library = std::shared_ptr<system::DynamicLibrary>(std::move(*loaded));
  auto api = resolve_cuda_api(*shared->library);
  if (!api) {
    report.findings.push_back(Finding{"smoke.driver",
                                      Status::fail,
                                      options.library + " is not a usable CUDA driver: " + api.error().message,
                                      "reinstall the NVIDIA driver; an old driver lacks these entry points",
                                      {}});
    return finish();
  }
  shared->api = *api;
  shared->options = options;
  report.driver_loaded = true;

  // cuInit and the device count on a worker thread: cuInit can hang on a GPU that fell off the bus.
  struct InitResult {
    CUresult init = cuda_error_unknown;
    int version = 0;
    int count = 0;
  };
  auto init_promise = std::make_shared<std::promise<InitResult>>();
  std::future<InitResult> init_future = init_promise->get_future();
  std::thread([shared, init_promise] {
    InitResult result;
    shared->api.driver_get_version(&result.version);
    result.init = shared->api.init(0);
    if (result.init == cuda_success && shared->api.device_get_count(&result.count) != cuda_success) result.count = 0;
    init_promise->set_value(result);
  }).detach();
  if (init_future.wait_for(options.init_timeout) != std::future_status::ready) {
    report.findings.push_back(
        Finding{"smoke.driver",
                Status::fail,
                "hang: cuInit did not return within " + std::to_string(options.init_timeout.count() / 1000) + " s",
                "check the kernel log for Xid errors (sudo dmesg | grep -i xid) and run `gpuenv doctor`",
                {}});
    return finish();
  }
  const InitResult init = init_future.get();
  report.driver_cuda_version = cuda_version_text(init.version);
  if (init.init != cuda_success) {
    Finding finding{
        "smoke.driver", Status::fail, "cuInit failed: " + describe_cuda_error(shared->api, init.init), {}, {}};
    if (init.init == cuda_error_no_device) {
      finding.message = "no CUDA device: " + finding.message;
      finding.remedy =
          "check that the GPUs are visible (nvidia-smi, CUDA_VISIBLE_DEVICES, container --gpus) and run `gpuenv "
          "doctor`";
    } else if (init.init == cuda_error_insufficient_driver || init.init == cuda_error_system_driver_mismatch ||
               init.init == cuda_error_compat_not_supported_on_device) {
      finding.message = "the CUDA driver library (CUDA " + report.driver_cuda_version +
                        ") does not match the kernel driver: " + finding.message;
      finding.remedy =
          "install matching NVIDIA user-space and kernel driver packages, or remove a cuda-compat library from "
          "LD_LIBRARY_PATH";
    } else {
      finding.remedy = "run `gpuenv doctor` to check the driver and the kernel log";
    }
    report.findings.push_back(std::move(finding));
    return finish();
  }
  report.device_count = init.count;
  if (init.count <= 0) {
    report.findings.push_back(Finding{"smoke.driver",
                                      Status::fail,
                                      "no CUDA device: the driver reports 0 GPUs",
                                      "check CUDA_VISIBLE_DEVICES and the container's GPU access; run `gpuenv doctor`",
                                      {}});
    return finish();
  }
  if (options.device && (*options.device < 0 || *options.device >= init.count)) {
    report.findings.push_back(Finding{"smoke.device",
                                      Status::fail,
                                      "--device " + std::to_string(*options.device) + ": the driver reports " +
                                          std::to_string(init.count) + " GPU(s), numbered 0 to " +
                                          std::to_string(init.count - 1),
                                      "pick a CUDA device ordinal that exists",
                                      {}});
    return finish();
  }
  report.findings.push_back(Finding{"smoke.driver",
                                    Status::pass,
                                    "CUDA driver " + report.driver_cuda_version + " (" + options.library + "), " +
                                        std::to_string(init.count) + " GPU(s)",
                                    {},
                                    {}});
  for (int ordinal = 0; ordinal < init.count; ++ordinal) {
    if (options.device && *options.device != ordinal) continue;
    auto gpu = std::make_shared<Gpu>();
    gpu->library = shared->library;
    gpu->api = shared->api;
    gpu->options = options;
    gpu->ordinal = ordinal;
    DeviceResult result;
    result.index = ordinal;
    run_device(system, gpu, *expectations, report.driver_cuda_version, result);
    report.devices.push_back(std::move(result));
  }
  return finish();
}

}  // namespace gpuenv::smoke
