#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "smoke/internal/device_run.hpp"
#include "smoke/internal/driver_setup.hpp"
#include "smoke/internal/kernel_images.hpp"
#include "smoke/internal/step.hpp"
#include "smoke/internal/xid_watch.hpp"
#include "smoke/smoke.hpp"
#include "util/gpu_name.hpp"
#include "util/strings.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

const std::vector<std::string>& judged_metric_ids() {
  static const std::vector<std::string> ids = {
      "h2d_pinned",       "d2h_pinned",       "h2d_pageable", "d2h_pageable", "d2d",
      "memory_bandwidth", "sgemm_fp32",       "gemm_bf16",    "gemm_fp16",    "cublas_sgemm_fp32",
      "cublas_gemm_bf16", "cublas_gemm_fp16", "p2p"};
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

/// The GPUs the node should have (--expect-gpus, or doctor's instance type) against the driver's count: fewer fail (a
/// missing GPU also keeps the 8-GPU NVLink floors in force, since the board size is taken from the expectation).
void check_gpu_count(const SmokeOptions& options, SmokeReport& report) {
  if (!options.expect_gpus) return;
  const int expected = *options.expect_gpus;
  // By the device's name (" MIG 1g.10gb"), known before its context: an instance that failed early counts too.
  const bool mig = std::any_of(report.devices.begin(), report.devices.end(), [](const DeviceResult& device) {
    return !device.info.mig_profile.empty() || util::gpu_mig_profile(device.info.name).has_value();
  });
  if (mig) {
    // CUDA lists MIG instances, not GPUs: one per GPU instance across the node from R570 (at most 64), a single one
    // before it (NVIDIA MIG user guide, "CUDA Device Enumeration"). Its count then says nothing about missing GPUs.
    report.findings.push_back(Finding{"smoke.gpu_count",
                                      Status::skip,
                                      std::to_string(report.device_count) + " CUDA devices visible, " +
                                          std::to_string(expected) +
                                          " GPUs expected: MIG instances are visible, and CUDA counts those, not "
                                          "GPUs; not judged here (doctor's GPU count reads NVML)",
                                      "`nvidia-smi -L` lists the GPUs and their MIG instances",
                                      {}});
    return;
  }
  if (report.device_count >= expected) {
    report.findings.push_back(
        Finding{"smoke.gpu_count",
                Status::pass,
                std::to_string(report.device_count) + " GPUs visible, " + std::to_string(expected) + " expected",
                {},
                {}});
    return;
  }
  report.findings.push_back(
      Finding{"smoke.gpu_count",
              Status::fail,
              "the driver reports " + std::to_string(report.device_count) + " GPUs, " + std::to_string(expected) +
                  " expected: a GPU is missing (fallen off the bus, disabled, or hidden by CUDA_VISIBLE_DEVICES); "
                  "peer floors of a " +
                  std::to_string(expected) + "-GPU board still apply",
              "check `nvidia-smi -L`, `lspci | grep -i nvidia` and the kernel log for Xid 79; reset or replace the GPU",
              {}});
}

/// MIG coverage across the run: from R570 CUDA shows one device per GPU instance (NVIDIA MIG user guide, "CUDA Device
/// Enumeration"), so several instances of one GPU may be tested side by side. Each instance's "1 of N" warning is
/// restated with how many of its GPU's instances this run tested, and dropped to a skip when that is all of them.
void note_mig_coverage(SmokeReport& report) {
  std::map<std::string, unsigned> tested;  // parent bus id -> MIG instances among this run's devices
  for (const DeviceResult& device : report.devices) {
    if (!device.info.mig_profile.empty()) ++tested[device.info.pci_bus_id];
  }
  for (DeviceResult& device : report.devices) {
    const unsigned total = device.info.mig_instances;
    const unsigned seen = device.info.mig_profile.empty() ? 0 : tested[device.info.pci_bus_id];
    if (seen < 2 || total < 2) continue;
    for (Finding& finding : device.findings) {
      if (finding.id != "smoke.mig" || finding.status != Status::warn) continue;
      const std::string of = std::to_string(seen) + " of " + std::to_string(total);
      if (seen >= total) {
        finding.status = Status::skip;
        finding.message = "all " + std::to_string(total) + " MIG instances of GPU " + device.info.pci_bus_id +
                          " are tested by this run, one CUDA device each; whole-GPU floors do not apply to a slice";
        finding.remedy.clear();
      } else {
        finding.message = of + " MIG instances of GPU " + device.info.pci_bus_id + " tested by this run; the other " +
                          std::to_string(total - seen) +
                          " are not visible to it (hidden by CUDA_VISIBLE_DEVICES, or a GPU instance with several "
                          "compute instances: CUDA shows one of each)";
      }
    }
  }
}

/// Every GPU's steps at once, one thread each (each step then runs on a thread of its own against the run's budget):
/// the node is loaded as a job loads it (power, cooling), and 8 GPUs take about the time of one.
void run_in_parallel(std::vector<DeviceRun>& runs) {
  std::vector<std::thread> threads;
  threads.reserve(runs.size());
  for (DeviceRun& run : runs) threads.emplace_back([&run] { run.run(); });
  for (std::thread& thread : threads) thread.join();  // each waits only for steps with deadlines
}

/// After the node-wide steps: each GPU's level-2 counters, and the peer figures of a GPU another process used are not
/// judged either.
void finish_devices(std::vector<DeviceRun>& runs, const std::vector<std::shared_ptr<Gpu>>& gpus, SmokeReport& report,
                    const SmokeOptions& options) {
  const int board = std::max(report.device_count, options.expect_gpus.value_or(0));
  std::map<int, std::string> busy;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].finish(board);
    if (runs[i].busy()) busy[gpus[i]->ordinal] = *runs[i].busy();
  }
  if (busy.empty()) return;
  // A pair's finding starts "GPU 0 -> GPU 1: " or "GPU 0 <-> GPU 1: ". Its rate judgement (a status that is not a
  // failure, or a failure below a floor) is undone for a busy GPU; wrong data and CUDA errors stay failures.
  auto mark_pairs = [&busy](std::vector<Finding>& findings) {
    for (Finding& finding : findings) {
      const std::string pair = finding.message.substr(0, finding.message.find(':'));
      std::string reason;
      for (const auto& [ordinal, why] : busy) {
        const std::string gpu = "GPU " + std::to_string(ordinal);
        const bool first = pair.rfind(gpu + " ", 0) == 0;
        const bool second =
            pair.size() >= gpu.size() + 1 && pair.compare(pair.size() - gpu.size() - 1, gpu.size() + 1, " " + gpu) == 0;
        if (first || second) reason = gpu + ": " + why;
      }
      const bool rate = finding.status != Status::fail || finding.message.find("fail below") != std::string::npos;
      if (reason.empty() || !rate || finding.status == Status::skip) continue;
      finding.status = Status::skip;
      finding.message += "; not judged: " + reason;
      finding.remedy.clear();
    }
  };
  mark_pairs(report.peer_findings);
  mark_pairs(report.bidirectional_findings);
}

}  // namespace

util::Expected<SmokeReport> run_smoke(system::System& system, const SmokeOptions& options) {
  GPUENV_TRY_ASSIGN(auto parsed, shipped_expectations());
  // Shared with every step thread: a step abandoned at its deadline may still read it after run_smoke returns.
  const auto expectations = std::make_shared<const Expectations>(std::move(parsed));
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

  // Shared by every GPU: one budget, one host link, one set of matmul operands.
  std::optional<RunBudget::Clock::time_point> deadline;
  if (options.run_timeout.count() > 0) deadline = RunBudget::Clock::now() + options.run_timeout;
  const auto budget = std::make_shared<RunBudget>(options.step_timeout, options.blocked_timeout, deadline);
  const auto host_links = std::make_shared<HostLinks>();
  const auto operands = std::make_shared<OperandCache>();
  const auto run_clock = std::make_shared<RunClock>(&system);
  struct DetachClock {  // on every return: a step left running must not read a System that may be gone
    RunClock& run_clock;
    ~DetachClock() { run_clock.detach(); }
  } const detach_clock{*run_clock};
  std::vector<std::shared_ptr<Gpu>> gpus;
  std::vector<DeviceRun> runs;
  report.devices.reserve(static_cast<std::size_t>(report.device_count));  // DeviceRun keeps a reference
  runs.reserve(static_cast<std::size_t>(report.device_count));
  for (int ordinal = 0; ordinal < report.device_count; ++ordinal) {
    if (options.device && *options.device != ordinal) continue;
    auto gpu = std::make_shared<Gpu>();
    gpu->library = driver->library;
    gpu->api = driver->api;
    gpu->options = options;
    gpu->ordinal = ordinal;
    gpu->cublas = cublas;
    gpu->nvml = nvml;
    gpu->budget = budget;
    gpu->host_links = host_links;
    gpu->host_link = host_links->for_node("");  // until place_on_local_cpus knows the GPU's NUMA node
    gpu->operand_cache = operands;
    gpu->clock = run_clock;
    DeviceResult& result = report.devices.emplace_back();
    result.index = ordinal;
    runs.emplace_back(system, gpu, expectations, report.driver_cuda_version, driver_version, result);
    gpus.push_back(std::move(gpu));
  }
  run_in_parallel(runs);
  check_gpu_count(options, report);  // after the runs: whether CUDA shows MIG instances is known from their names
  note_mig_coverage(report);
  if (gpus.size() > 1) concurrent_h2d(gpus, report);
  if (options.peer && gpus.size() > 1) {
    const int board = std::max(report.device_count, options.expect_gpus.value_or(0));
    run_peer_pairs(gpus, *expectations, board, report);
  }
  finish_devices(runs, gpus, report, options);
  for (DeviceRun& run : runs) run.release();
  // A GPU can hang after its own steps, in the concurrent or peer copies: its result says so too.
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    report.devices[i].hung = report.devices[i].hung || gpus[i]->hang_reported;
    report.abandoned_work = report.abandoned_work || gpus[i]->hung;
  }
  return finish();
}

}  // namespace gpuenv::smoke
