#include "smoke/runner.hpp"

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "smoke/device_run.hpp"
#include "smoke/driver_setup.hpp"
#include "smoke/step.hpp"
#include "smoke/xid_watch.hpp"
#include "util/strings.hpp"

namespace gpuenv::smoke {

using report::Finding;

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
    all.insert(all.end(), report.bidirectional_findings.begin(), report.bidirectional_findings.end());
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
    report.bidirectional = run_bidirectional_peer_copies(gpus, *expectations, report.device_count, report.peers,
                                                         report.bidirectional_findings);
  }
  for (DeviceRun& run : runs) run.release();
  // A GPU can hang after its own steps, in the concurrent or peer copies: its result says so too.
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    report.devices[i].hung = report.devices[i].hung || gpus[i]->hung;
    report.abandoned_work = report.abandoned_work || gpus[i]->hung;
  }
  return finish();
}

}  // namespace gpuenv::smoke
