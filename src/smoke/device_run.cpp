#include "smoke/device_run.hpp"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "smoke/cuda_api.hpp"
#include "smoke/device_steps.hpp"
#include "smoke/host_link.hpp"
#include "smoke/verify.hpp"
#include "util/gpu_name.hpp"
#include "util/strings.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

// Defined first: run() and the test sections below instantiate it.
template <typename Body>
bool DeviceRun::step(const std::string& id, Body body) {
  if (m_gpu->stopped) return false;
  std::optional<StepOutcome> outcome = run_step(m_gpu, id, body);
  if (!outcome) {
    m_result.hung = true;
    m_gpu->stopped = m_gpu->hung = true;
    m_result.findings.push_back(hang_finding(id, m_gpu->options.step_timeout));
    return false;
  }
  const bool ok = !outcome->stop && std::none_of(outcome->findings.begin(), outcome->findings.end(),
                                                 [](const Finding& finding) { return finding.status == Status::fail; });
  absorb(std::move(*outcome));
  return ok;
}

DeviceRun::DeviceRun(system::System& system, std::shared_ptr<Gpu> gpu, std::shared_ptr<const Expectations> expectations,
                     std::string driver_version, int driver_version_number, DeviceResult& result)
    : m_system(system),
      m_gpu(std::move(gpu)),
      m_expectations(std::move(expectations)),
      m_driver_version(std::move(driver_version)),
      m_driver_version_number(driver_version_number),
      m_result(result) {}

void DeviceRun::run() {
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

void DeviceRun::release() {
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

void DeviceRun::place_on_local_cpus() {
  if (m_gpu->info.pci_bus_id.empty()) return;
  const auto text = m_system.read_file(m_gpu->options.sysfs_root + "/bus/pci/devices/" +
                                       sysfs_bus_id(m_gpu->info.pci_bus_id) + "/local_cpulist");
  if (!text) return;
  m_gpu->local_cpus = parse_cpu_list(*text);
  if (!m_gpu->local_cpus.empty()) m_gpu->info.local_cpulist = std::string(util::trim(*text));
}

void DeviceRun::judge_mig_instance(const std::string& profile) {
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

void DeviceRun::absorb(StepOutcome outcome) {
  for (Finding& finding : outcome.findings) m_result.findings.push_back(std::move(finding));
  for (Metric& metric : outcome.metrics) m_result.metrics.push_back(std::move(metric));
  if (outcome.stop) m_gpu->stopped = true;
}

void DeviceRun::copies() {
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

void DeviceRun::free_copy_buffers_unless_hung() {
  if (m_gpu->hung) return;
  run_step(m_gpu, "smoke.copy_buffers", [](Gpu& g) {
    free_copy_buffers(g);
    return StepOutcome{};
  });
}

Expectation DeviceRun::judge_pinned_h2d(double bytes) {
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
  StepOutcome judged = copy_outcome(*m_gpu, "h2d_pinned", "pinned host->device", rates, bytes, m_gpu->h2d_check, pcie);
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

int DeviceRun::sgemm_size() const {
  const SmokeOptions& options = m_gpu->options;
  return options.sgemm_size > 0 ? options.sgemm_size : (options.quick ? 1024 : 4096);
}

int DeviceRun::tensor_size() const {
  const SmokeOptions& options = m_gpu->options;
  return options.tensor_size > 0 ? options.tensor_size : (options.quick ? 2048 : 8192);
}

void DeviceRun::matmuls() {
  if (m_gpu->stopped) return;
  const bool kernels = m_gpu->module != nullptr;
  if (!kernels) {
    m_result.findings.push_back(Finding{
        "smoke.matmul", Status::skip, "matmul tests skipped: the kernels are not loaded (see smoke.kernels)", {}, {}});
  }
  const bool cublas = m_gpu->cublas != nullptr &&
                      step("smoke.cublas", [version = m_driver_version](Gpu& g) { return prepare_cublas(g, version); });
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
    clocks.emplace(m_gpu->nvml, m_gpu->info.pci_bus_id, std::chrono::milliseconds(20), m_gpu->launches_in_flight);
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

void DeviceRun::judge_matmul_clocks(const std::vector<ClockSample>& samples) {
  Finding finding = judge_clocks(samples, m_gpu->info.clock_mhz);
  std::vector<unsigned> mhz;
  for (const ClockSample& sample : samples) {
    if (sample.under_load) mhz.push_back(sample.sm_mhz);  // as judge_clocks: idle samples say nothing
  }
  if (!mhz.empty()) {
    std::nth_element(mhz.begin(), mhz.begin() + static_cast<std::ptrdiff_t>(mhz.size() / 2), mhz.end());
    m_result.info.matmul_clock_mhz = static_cast<int>(mhz[mhz.size() / 2]);
  }
  m_result.findings.push_back(std::move(finding));
}

std::optional<double> DeviceRun::measured(const std::string& id) const {
  for (const Metric& metric : m_result.metrics) {
    if (metric.id == id && metric.verified) return metric.summary.median;
  }
  return std::nullopt;
}

void DeviceRun::memtest() {
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

}  // namespace gpuenv::smoke
