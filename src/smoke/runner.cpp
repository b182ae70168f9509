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
#include <tuple>

#include "smoke/cuda_api.hpp"
#include "smoke/driver_setup.hpp"
#include "smoke/host_link.hpp"
#include "smoke/step.hpp"
#include "smoke/verify.hpp"
#include "smoke/xid_watch.hpp"
#include "util/embedded_file.hpp"
#include "util/gpu_name.hpp"
#include "util/strings.hpp"

namespace gpuenv::smoke {

namespace {

using report::Finding;
using report::Status;
using namespace std::chrono_literals;

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
  gpu.info.l2_bytes = static_cast<std::uint64_t>(attribute(attribute_l2_cache_size));
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
                  std::to_string(gpu.info.sm_count) + " SMs, " + size_text(gpu.info.memory_bytes) + ", max SM clock " +
                  std::to_string(gpu.info.clock_mhz) + " MHz, max memory clock " +
                  std::to_string(gpu.info.memory_clock_mhz) + " MHz",
              {},
              {}});
  return out;
}

// ---------------------------------------------------------------------------------------------------- kernels

/// Errors that mean "this image has no code for this GPU or driver": the next image may have.
bool image_cannot_run(CUresult result) {
  return result == cuda_error_no_binary_for_gpu || result == cuda_error_unsupported_ptx_version ||
         result == cuda_error_invalid_ptx || result == cuda_error_invalid_image;
}

/// Loads the first embedded image that runs on this driver and GPU (kernel_images_for's order).
StepOutcome load_kernels(Gpu& gpu, const std::string& driver_version, int driver_version_number) {
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
  const KernelImage* loaded_image = nullptr;
  std::string tried;
  CUresult last = cuda_success;
  for (const KernelImage* image : kernel_images_for(kernels.images, driver_version_number)) {
    // cuModuleLoadData reads the fatbin header with 8-byte loads: give it an aligned copy.
    std::vector<std::uint64_t> aligned((image->bytes + 7) / 8 + 1, 0);
    std::memcpy(aligned.data(), image->contents.data(), image->bytes);
    last = gpu.api.module_load_data(&gpu.module, aligned.data());
    tried += (tried.empty() ? "" : "; ") + image->file + " (CUDA " + image->cuda_version + ": " +
             describe_cuda_error(gpu.api, last) + ")";
    if (last == cuda_success) {
      loaded_image = image;
      break;
    }
    if (!image_cannot_run(last)) break;
  }
  const std::string cc = std::to_string(gpu.info.cc_major) + "." + std::to_string(gpu.info.cc_minor);
  if (loaded_image == nullptr && image_cannot_run(last)) {
    gpu.module = nullptr;
    out.findings.push_back(
        Finding{"smoke.kernels",
                Status::warn,
                "the embedded kernels cannot run here: cuModuleLoadData returned " +
                    describe_cuda_error(gpu.api, last) + "; kernels built with CUDA " + kernels.cuda_version + " for " +
                    kernels.archs + "; driver supports CUDA " + driver_version + ", GPU is CC " + cc +
                    "; images tried: " + tried + "; device query and copies still ran, matmul tests skipped",
                "a driver that supports CUDA " + kernels.cuda_version +
                    " (or newer) runs them; `gpuenv smoke --describe` lists the images and the drivers each is for",
                {}});
    return out;
  }
  check(last, "cuModuleLoadData");
  gpu.info.kernel_image = loaded_image->file;
  check(gpu.api.module_get_function(&gpu.sgemm, gpu.module, "smoke_sgemm"), "cuModuleGetFunction(smoke_sgemm)");
  check(gpu.api.module_get_function(&gpu.hgemm, gpu.module, "smoke_hgemm_wmma"),
        "cuModuleGetFunction(smoke_hgemm_wmma)");
  check(gpu.api.module_get_function(&gpu.bf16gemm, gpu.module, "smoke_bf16gemm_wmma"),
        "cuModuleGetFunction(smoke_bf16gemm_wmma)");
  check(gpu.api.module_get_function(&gpu.memtest_fill, gpu.module, "smoke_fill_pattern"),
        "cuModuleGetFunction(smoke_fill_pattern)");
  check(gpu.api.module_get_function(&gpu.memtest_check, gpu.module, "smoke_check_pattern"),
        "cuModuleGetFunction(smoke_check_pattern)");
  check(gpu.api.module_get_function(&gpu.memtest_move, gpu.module, "smoke_move_inversion"),
        "cuModuleGetFunction(smoke_move_inversion)");
  // Optional: without it copies are timed one per event pair.
  if (gpu.api.module_get_function(&gpu.spin_wait, gpu.module, "smoke_spin_wait") != cuda_success)
    gpu.spin_wait = nullptr;
  out.findings.push_back(Finding{"smoke.kernels",
                                 Status::pass,
                                 "kernels loaded (" + loaded_image->file + ": CUDA " + loaded_image->cuda_version +
                                     " fatbin, " + std::to_string(loaded_image->bytes) +
                                     " bytes; driver supports CUDA " + driver_version + ")",
                                 {},
                                 {}});
  return out;
}

// ---------------------------------------------------------------------------------------------------- copies

StepOutcome allocate_copy_buffers(Gpu& gpu) {
  const CudaApi& api = gpu.api;
  gpu.bytes = copy_bytes(gpu.options, gpu.info.l2_bytes);
  check(api.mem_alloc(&gpu.device_a, gpu.bytes), "cuMemAlloc_v2(" + size_text(gpu.bytes) + ")");
  check(api.mem_alloc(&gpu.device_b, gpu.bytes), "cuMemAlloc_v2(" + size_text(gpu.bytes) + ")");
  void* host = nullptr;
  check(api.mem_alloc_host(&host, gpu.bytes), "cuMemAllocHost_v2(" + size_text(gpu.bytes) + ")");
  gpu.pinned = static_cast<std::uint32_t*>(host);
  void* flag = nullptr;
  check(api.mem_alloc_host(&flag, 64), "cuMemAllocHost_v2(64 bytes)");
  gpu.spin_flag = static_cast<std::uint32_t*>(flag);
  gpu.pageable.assign(gpu.bytes / 4, 0);
  gpu.readback.assign(gpu.bytes / 4, 0);
  return {};
}

void free_copy_buffers(Gpu& gpu) {
  if (gpu.device_a != 0) gpu.api.mem_free(gpu.device_a);
  if (gpu.device_b != 0) gpu.api.mem_free(gpu.device_b);
  if (gpu.pinned != nullptr) gpu.api.mem_free_host(gpu.pinned);
  if (gpu.spin_flag != nullptr) gpu.api.mem_free_host(const_cast<std::uint32_t*>(gpu.spin_flag));
  gpu.device_a = gpu.device_b = 0;
  gpu.pinned = nullptr;
  gpu.spin_flag = nullptr;
  gpu.pageable = {};
  gpu.readback = {};
}

/// Reads device buffer `source` back into gpu.readback and checks the pattern.
PatternCheck read_back_and_check(Gpu& gpu, CUdeviceptr source, std::uint32_t seed) {
  std::fill(gpu.readback.begin(), gpu.readback.end(), 0u);
  check(gpu.api.memcpy_dtoh(gpu.readback.data(), source, gpu.bytes), "cuMemcpyDtoH_v2 (verification)");
  return check_pattern(gpu.readback, seed);
}

StepOutcome copy_outcome(const Gpu& gpu, const std::string& id, const std::string& label, const Summary& rates,
                         double bytes, const PatternCheck& data, const Expectation& from_data) {
  StepOutcome out;
  const Expectation expectation = with_override(gpu.options, id, from_data);
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
  const Judgement judgement = judge(rates.median, expectation, gpu.options.thresholds, "GB/s");
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

// ---------------------------------------------------------------------------------------------------- one GPU

/// The steps of one GPU, in order; each records its findings and metrics into `result`. A failed device query, a
/// sticky error or a hang stops the GPU (gpu->stopped); later steps then do nothing.
class DeviceRun {
 public:
  DeviceRun(system::System& system, std::shared_ptr<Gpu> gpu, std::shared_ptr<const Expectations> expectations,
            std::string driver_version, int driver_version_number, DeviceResult& result)
      : m_system(system),
        m_gpu(std::move(gpu)),
        m_expectations(std::move(expectations)),
        m_driver_version(std::move(driver_version)),
        m_driver_version_number(driver_version_number),
        m_result(result) {}

  /// Device query, kernels, copies, matmuls (ours and cuBLAS), then the optional memory test.
  void run() {
    if (!step("smoke.device", query_device)) {
      m_gpu->stopped = true;
      return;
    }
    place_on_local_cpus();
    m_result.info = m_gpu->info;
    m_model = find_gpu(*m_expectations, m_gpu->info.name);
    if (m_model != nullptr) m_result.info.expectation_model = m_model->model;
    if (const auto profile = util::gpu_mig_profile(m_gpu->info.name)) judge_mig_instance(*profile);
    if (step("smoke.kernels", [version = m_driver_version, number = m_driver_version_number](Gpu& g) {
          return load_kernels(g, version, number);
        })) {
      m_result.info.kernel_image = m_gpu->info.kernel_image;
    }
    copies();
    matmuls();
    memtest();
  }

  /// Unloads the module and releases the context (after the peer copies, which need every GPU's context).
  /// A GPU stopped by an error is released too (else its context leaks); only a hung one is left alone.
  void release() {
    if (m_gpu->hung || m_gpu->context == nullptr) return;
    run_step(m_gpu, "smoke.release", [](Gpu& g) {
      release_cublas(g);
      if (g.module != nullptr) g.api.module_unload(g.module);
      if (g.start != nullptr) g.api.event_destroy(g.start);
      if (g.stop != nullptr) g.api.event_destroy(g.stop);
      if (g.stream != nullptr) g.api.stream_destroy(g.stream);
      g.api.primary_ctx_release(g.device);
      g.module = nullptr;
      g.context = nullptr;
      return StepOutcome{};
    });
  }

 private:
  /// Runs one step unless the GPU is stopped; true when it finished without a failing finding.
  template <typename Body>
  bool step(const std::string& id, Body body) {
    if (m_gpu->stopped) return false;
    std::optional<StepOutcome> outcome = run_step(m_gpu, id, body);
    if (!outcome) {
      m_result.hung = true;
      m_gpu->stopped = m_gpu->hung = true;
      m_result.findings.push_back(hang_finding(id, m_gpu->options.step_timeout));
      return false;
    }
    const bool ok =
        !outcome->stop && std::none_of(outcome->findings.begin(), outcome->findings.end(),
                                       [](const Finding& finding) { return finding.status == Status::fail; });
    absorb(std::move(*outcome));
    return ok;
  }

  /// Every later step thread runs on the CPUs of the GPU's NUMA node (as nvbandwidth does), so pinned buffers are
  /// allocated, and pageable copies staged, in the GPU's local memory: the far socket of a dual-socket HGX costs
  /// several GB/s of host<->device bandwidth.
  void place_on_local_cpus() {
    if (m_gpu->info.pci_bus_id.empty()) return;
    const auto text = m_system.read_file(m_gpu->options.sysfs_root + "/bus/pci/devices/" +
                                         sysfs_bus_id(m_gpu->info.pci_bus_id) + "/local_cpulist");
    if (!text) return;
    m_gpu->local_cpus = parse_cpu_list(*text);
    if (!m_gpu->local_cpus.empty()) m_gpu->info.local_cpulist = std::string(util::trim(*text));
  }

  /// A MIG instance has a slice of the GPU's SMs, memory bandwidth and copy engines: the whole GPU's floors would
  /// fail a healthy slice, so it is measured and verified but not judged (the operator's --expect still applies).
  void judge_mig_instance(const std::string& profile) {
    m_result.info.mig_profile = m_gpu->info.mig_profile = profile;
    const std::string of = m_model != nullptr ? " of " + m_model->model : std::string();
    m_model = nullptr;
    m_result.findings.push_back(
        Finding{"smoke.mig",
                Status::skip,
                "MIG instance " + profile + of +
                    ": the whole GPU's memory, PCIe and matmul floors do not apply to a slice; numbers only (results "
                    "are still verified)",
                "to judge a slice, give its numbers: --expect ID=V / --minimum ID=V",
                {}});
  }

  void absorb(StepOutcome outcome) {
    for (Finding& finding : outcome.findings) m_result.findings.push_back(std::move(finding));
    for (Metric& metric : outcome.metrics) m_result.metrics.push_back(std::move(metric));
    if (outcome.stop) m_gpu->stopped = true;
  }

  void copies() {
    if (!step("smoke.copy_buffers", allocate_copy_buffers)) {
      free_copy_buffers_unless_hung();  // what was allocated before the failure
      return;
    }
    const double bytes = static_cast<double>(m_gpu->bytes);
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
    const Expectation pcie = judge_pinned_h2d(bytes);
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
        // Pageable memory through the async call on our stream: staged by the driver, ordered with our work, and
        // time_copies synchronises this stream.
        check(g.api.memcpy_htod_async(g.device_a, g.pageable.data(), g.bytes, g.stream), "cuMemcpyHtoDAsync_v2");
      });
      const PatternCheck data = read_back_and_check(g, g.device_a, 2);
      return copy_outcome(g, "h2d_pageable", "pageable host->device", rates, bytes, data, Expectation{});
    });
    step("smoke.d2h_pageable", [bytes](Gpu& g) {
      std::fill(g.pageable.begin(), g.pageable.end(), 0u);
      const Summary rates = time_copies(g, false, bytes, [&] {
        check(g.api.memcpy_dtoh_async(g.pageable.data(), g.device_a, g.bytes, g.stream), "cuMemcpyDtoHAsync_v2");
      });
      const PatternCheck data = check_pattern(g.pageable, 2);
      return copy_outcome(g, "d2h_pageable", "pageable device->host", rates, bytes, data, Expectation{});
    });
    Expectation memory;
    if (m_model != nullptr && m_model->memory_bandwidth) {
      memory = Expectation{*m_model->memory_bandwidth * m_expectations->efficiency.d2d_copy,
                           m_model->memory_bandwidth_minimum, true,
                           m_model->model + " memory bandwidth " + rate_text(*m_model->memory_bandwidth) + " GB/s x " +
                               format("%.2g", m_expectations->efficiency.d2d_copy) + "; " + m_model->source};
    }
    step("smoke.d2d", [bytes, memory](Gpu& g) {
      check(g.api.memset_d32_async(g.device_b, 0, g.bytes / 4, g.stream), "cuMemsetD32Async");
      // A device-to-device copy reads and writes every byte: count both against the memory bandwidth.
      const Summary rates = time_copies(g, true, 2 * bytes, [&] {
        check(g.api.memcpy_dtod_async(g.device_b, g.device_a, g.bytes, g.stream), "cuMemcpyDtoDAsync_v2");
      });
      const PatternCheck data = read_back_and_check(g, g.device_b, 2);
      return copy_outcome(g, "d2d", "device->device", rates, 2 * bytes, data, memory);
    });
    free_copy_buffers_unless_hung();
  }

  /// Frees the copy buffers, also after an error (else they leak); a hung GPU's thread may still use them.
  void free_copy_buffers_unless_hung() {
    if (m_gpu->hung) return;
    run_step(m_gpu, "smoke.copy_buffers", [](Gpu& g) {
      free_copy_buffers(g);
      return StepOutcome{};
    });
  }

  /// Judges the pinned H2D copy on the main thread once the PCIe link is known; returns the link's expectation for
  /// the D2H copy.
  Expectation judge_pinned_h2d(double bytes) {
    Expectation pcie;
    if (m_gpu->stopped || m_result.metrics.empty() || m_result.metrics.back().id != "h2d_pinned") return pcie;
    const Summary rates = m_result.metrics.back().summary;
    m_result.metrics.pop_back();
    read_pcie_link(m_system, m_gpu->options.sysfs_root, m_result.info);
    const DeviceInfo& info = m_result.info;
    // Judged against what the slot should give (a link trained down is the fault to find), not the current link.
    const std::optional<CapableLink> capable = capable_pcie_link(info);
    if (capable && info.mig_profile.empty()) {
      if (auto link = pcie_expectation(*m_expectations, capable->generation, capable->width)) {
        pcie = Expectation{link->expected_gbs, link->minimum_gbs, true,
                           link->source + " (the link the GPU and its upstream port both support: GPU max " +
                               link_text(info.pcie_max_generation, info.pcie_max_width) + ", upstream port max " +
                               link_text(info.pcie_upstream_max_generation, info.pcie_upstream_max_width) + ")"};
      }
    }
    StepOutcome judged =
        copy_outcome(*m_gpu, "h2d_pinned", "pinned host->device", rates, bytes, m_gpu->h2d_check, pcie);
    if (!info.pcie_generation) judged.findings.back().message += " (PCIe link unknown: sysfs not readable)";
    const bool slow_generation = capable && info.pcie_generation && *info.pcie_generation < capable->generation;
    const bool narrow = capable && info.pcie_width && *info.pcie_width < capable->width;
    if (slow_generation || narrow) {
      m_result.findings.push_back(
          Finding{"smoke.pcie_link",
                  Status::warn,
                  "PCIe link runs " + link_text(info.pcie_generation, info.pcie_width) +
                      " right after a copy, but the GPU and "
                      "its upstream port support " +
                      link_text(capable->generation, capable->width),
                  "reseat the GPU or check the slot, riser and BIOS PCIe settings; a degraded link cuts host<->device "
                  "bandwidth",
                  {}});
    }
    absorb(std::move(judged));
    return pcie;
  }

  int sgemm_size() const {
    const SmokeOptions& options = m_gpu->options;
    return options.sgemm_size > 0 ? options.sgemm_size : (options.quick ? 1024 : 4096);
  }
  int tensor_size() const {
    const SmokeOptions& options = m_gpu->options;
    return options.tensor_size > 0 ? options.tensor_size : (options.quick ? 2048 : 8192);
  }
  /// BF16 where the GPU has it (CC 8.0 and newer), else FP16.
  Precision tensor_precision() const { return m_gpu->info.cc_major >= 8 ? Precision::bf16 : Precision::fp16; }

  /// The node's cuBLAS, then our kernel, each precision back to back so that both use the same operands and ours is
  /// judged against cuBLAS's number.
  void matmuls() {
    if (m_gpu->stopped) return;
    const bool kernels = m_gpu->module != nullptr;
    if (!kernels) {
      m_result.findings.push_back(Finding{"smoke.matmul",
                                          Status::skip,
                                          "matmul tests skipped: the kernels are not loaded (see smoke.kernels)",
                                          {},
                                          {}});
    }
    const bool cublas = m_gpu->cublas != nullptr && step("smoke.cublas", [version = m_driver_version](Gpu& g) {
                          return prepare_cublas(g, version);
                        });
    const Precision tensor = tensor_precision();
    std::vector<GemmPlan> plans;
    for (const auto& [precision, size, floor_size, suffix] :
         {std::tuple{Precision::fp32, sgemm_size(), m_gpu->options.sgemm_floor_size, std::string("sgemm_fp32")},
          std::tuple{tensor, tensor_size(), m_gpu->options.tensor_floor_size,
                     std::string("gemm_") + to_string(tensor)}}) {
      if (cublas) plans.push_back({"cublas_" + suffix, GemmPlan::Engine::cublas, precision, size, floor_size, {}});
      if (kernels) plans.push_back({suffix, GemmPlan::Engine::kernel, precision, size, floor_size, {}});
    }
    std::optional<ClockSampler> clocks;
    if (m_gpu->nvml != nullptr && !plans.empty())
      clocks.emplace(m_gpu->nvml, m_gpu->info.pci_bus_id, std::chrono::milliseconds(20));
    for (GemmPlan& plan : plans) {
      if (plan.engine == GemmPlan::Engine::kernel) plan.cublas_tflops = measured("cublas_" + plan.id);
      // By value: `model` points into `expectations`, which the thread co-owns, so an abandoned GEMM that
      // finishes after run_smoke returned still reads live memory.
      step("smoke." + plan.id, [plan, model = m_model, expectations = m_expectations](Gpu& g) {
        return run_gemm(g, plan, model, *expectations);
      });
    }
    if (!m_gpu->stopped) m_gpu->operands = nullptr;  // free the host copies (a hung step still holds its own)
    if (!plans.empty()) judge_matmul_clocks(clocks ? clocks->stop() : std::vector<ClockSample>{});
  }

  /// The SM clock the matmuls ran at (the device query shows only the maximum) and whether the GPU throttled.
  void judge_matmul_clocks(const std::vector<ClockSample>& samples) {
    Finding finding = judge_clocks(samples, m_gpu->info.clock_mhz);
    if (!samples.empty()) {
      std::vector<unsigned> mhz;
      for (const ClockSample& sample : samples) mhz.push_back(sample.sm_mhz);
      std::nth_element(mhz.begin(), mhz.begin() + static_cast<std::ptrdiff_t>(mhz.size() / 2), mhz.end());
      m_result.info.matmul_clock_mhz = static_cast<int>(mhz[mhz.size() / 2]);
    }
    m_result.findings.push_back(std::move(finding));
  }

  /// The median of metric `id` measured on this GPU so far, if any.
  std::optional<double> measured(const std::string& id) const {
    for (const Metric& metric : m_result.metrics) {
      if (metric.id == id && metric.verified) return metric.summary.median;
    }
    return std::nullopt;
  }

  void memtest() {
    if (m_gpu->stopped || m_gpu->options.memtest_fraction <= 0) return;
    if (m_gpu->module == nullptr) {
      m_result.findings.push_back(Finding{
          "smoke.memtest", Status::skip, "memtest skipped: the kernels are not loaded (see smoke.kernels)", {}, {}});
      return;
    }
    // NVML's counters before and after: a test that provoked corrected (or remapped) errors reads back right.
    const std::shared_ptr<const NvmlMonitor> nvml = m_gpu->nvml;
    const std::string bus_id = m_gpu->info.pci_bus_id;
    const MemoryErrorCounters before = nvml != nullptr ? nvml->memory_errors(bus_id) : MemoryErrorCounters{};
    if (!step("smoke.memtest", run_memtest) && m_gpu->hung) return;
    if (nvml == nullptr) return;
    m_result.findings.push_back(judge_memory_errors(before, nvml->memory_errors(bus_id)));
  }

  system::System& m_system;
  std::shared_ptr<Gpu> m_gpu;
  std::shared_ptr<const Expectations> m_expectations;  ///< shared with step threads that may outlive the run
  std::string m_driver_version;
  int m_driver_version_number = 0;  ///< cuDriverGetVersion, 12080
  DeviceResult& m_result;
  const GpuExpectation* m_model = nullptr;
};

}  // namespace

const std::vector<std::string>& judged_metric_ids() {
  static const std::vector<std::string> ids = {
      "h2d_pinned", "d2h_pinned",        "h2d_pageable",     "d2h_pageable",     "d2d", "sgemm_fp32", "gemm_bf16",
      "gemm_fp16",  "cublas_sgemm_fp32", "cublas_gemm_bf16", "cublas_gemm_fp16", "p2p"};
  return ids;
}

KernelsInfo embedded_kernels_info() {
  KernelsInfo out;
  out.images = embedded_kernel_images();
  out.embedded = !out.images.empty();
  for (const KernelImage& image : out.images) out.bytes += image.bytes;
  if (out.embedded) {
    const KernelImage& newest = out.images.front();
    out.cuda_version = newest.cuda_version;
    out.archs = util::join(newest.sass_archs, " ") + " " + newest.ptx_arch;
  }
  return out;
}

namespace {

/// Pinned H2D on every GPU at once, beside each GPU's own (verified) pinned H2D.
void concurrent_h2d(const std::vector<std::shared_ptr<Gpu>>& gpus, SmokeReport& report) {
  std::map<int, double> solo;
  for (const DeviceResult& device : report.devices) {
    for (const Metric& metric : device.metrics) {
      if (metric.id == "h2d_pinned" && metric.verified) solo[device.index] = metric.summary.median;
    }
  }
  const std::vector<std::optional<Metric>> metrics = run_concurrent_h2d(gpus, solo, report.findings);
  for (std::size_t i = 0; i < metrics.size() && i < report.devices.size(); ++i) {
    if (metrics[i]) report.devices[i].metrics.push_back(*metrics[i]);
  }
}

}  // namespace

util::Expected<SmokeReport> run_smoke(system::System& system, const SmokeOptions& options) {
  auto parsed = shipped_expectations();
  if (!parsed) return parsed.error();
  // Shared with every step thread: a step abandoned at its deadline may still read it after run_smoke returns.
  const auto expectations = std::make_shared<const Expectations>(std::move(*parsed));
  SmokeReport report;
  report.library = options.library;
  report.kernels = embedded_kernels_info();
  KernelLogSnapshot kernel_log;  // before cuInit: Xids raised while the driver initialises are the run's too
  if (options.watch_kernel_log) kernel_log = snapshot_kernel_log(system);
  auto finish = [&]() -> util::Expected<SmokeReport> {
    if (options.watch_kernel_log) {
      std::vector<TestedGpu> tested;
      for (const DeviceResult& device : report.devices) tested.push_back({device.index, device.info.pci_bus_id});
      for (Finding& finding : kernel_events_since(system, kernel_log, tested))
        report.findings.push_back(std::move(finding));
    }
    std::vector<Finding> all = report.findings;
    for (const DeviceResult& device : report.devices)
      all.insert(all.end(), device.findings.begin(), device.findings.end());
    all.insert(all.end(), report.peer_findings.begin(), report.peer_findings.end());
    report.verdict = all.empty() ? report::Verdict::not_ok : report::verdict_of(all);
    return report;
  };

  const std::shared_ptr<Gpu> driver = open_driver(system, options, report);
  if (driver == nullptr) return finish();
  int driver_version = 0;
  if (!initialise_driver(driver, options, report, driver_version)) return finish();
  const std::shared_ptr<const Cublas> cublas =
      options.cublas ? open_cublas(system, options, driver_version, report) : nullptr;
  const std::shared_ptr<const NvmlMonitor> nvml = NvmlMonitor::open(system, options.nvml_library);

  std::vector<std::shared_ptr<Gpu>> gpus;
  std::vector<DeviceRun> runs;
  report.devices.reserve(static_cast<std::size_t>(report.device_count));  // DeviceRun keeps a reference
  for (int ordinal = 0; ordinal < report.device_count; ++ordinal) {
    if (options.device && *options.device != ordinal) continue;
    auto gpu = std::make_shared<Gpu>();
    gpu->library = driver->library;
    gpu->api = driver->api;
    gpu->options = options;
    gpu->ordinal = ordinal;
    gpu->cublas = cublas;
    gpu->nvml = nvml;
    DeviceResult& result = report.devices.emplace_back();
    result.index = ordinal;
    runs.emplace_back(system, gpu, expectations, report.driver_cuda_version, driver_version, result).run();
    gpus.push_back(std::move(gpu));
  }
  if (gpus.size() > 1) concurrent_h2d(gpus, report);
  if (options.peer && gpus.size() > 1) {
    report.peers = run_peer_copies(gpus, *expectations, report.device_count, report.peer_findings);
  }
  for (DeviceRun& run : runs) run.release();
  for (const std::shared_ptr<Gpu>& gpu : gpus) report.abandoned_work = report.abandoned_work || gpu->hung;
  return finish();
}

}  // namespace gpuenv::smoke
