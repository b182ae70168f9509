// One GPU's copies: host<->device through pinned and pageable memory (D2H first, then H2D from the buffer it filled, so
// the round trip is checked on the GPU), the PCIe link sampled while they run, then device<->device by the copy engine
// (a figure) and by the SMs (smoke_stream_copy: the HBM bandwidth that is judged). Every source is filled and every
// destination checked by the GPU (device_check.hpp); the host checks its own buffer only when a round trip came back
// wrong, to name the direction.

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <span>

#include "smoke/internal/device_check.hpp"
#include "smoke/internal/device_run.hpp"
#include "smoke/internal/device_steps.hpp"
#include "smoke/internal/host_link.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

namespace {

/// The seed of the pattern every copy moves (pattern_word(i, copy_seed) in word i of the source).
constexpr std::uint32_t copy_seed = 1;

/// The D2H and H2D copies through one host buffer (pinned or pageable), shared with their step threads.
struct RoundTrip {
  bool d2h_done = false;
  bool h2d_done = false;
  Summary d2h, h2d;
  PatternCheck d2h_data, h2d_data;
};

std::span<std::uint32_t> host_words(Gpu& gpu, bool pinned) {
  return pinned ? std::span<std::uint32_t>(gpu.pinned, gpu.host_bytes / 4) : std::span<std::uint32_t>(gpu.pageable);
}

/// device_a (the pattern) -> the host buffer, timed.
StepOutcome device_to_host(Gpu& g, bool pinned, RoundTrip& trip) {
  const std::span<std::uint32_t> host = host_words(g, pinned);
  std::fill(host.begin(), host.end(), 0u);
  trip.d2h = time_copies(
      g, pinned, static_cast<double>(g.host_bytes),
      [&] {
        check(g.api.memcpy_dtoh_async(host.data(), g.device_a.get(), g.host_bytes, g.stream.get()),
              "cuMemcpyDtoHAsync_v2");
      },
      &g.host_link->samples);
  trip.d2h_done = true;
  return {};
}

/// The host buffer -> device_b, timed, then device_b checked on the GPU. Right: both directions were. Wrong: the host
/// buffer tells which; when the D2H brought wrong data, one H2D of the right pattern is checked alone.
StepOutcome host_to_device(Gpu& g, bool pinned, RoundTrip& trip) {
  const std::span<std::uint32_t> host = host_words(g, pinned);
  const std::size_t words = g.host_bytes / 4;
  if (!trip.d2h_done) fill_pattern(host, copy_seed);  // the D2H step failed: start from the right pattern
  auto upload = [&] {
    check(g.api.memcpy_htod_async(g.device_b.get(), host.data(), g.host_bytes, g.stream.get()), "cuMemcpyHtoDAsync_v2");
  };
  check(g.api.memset_d32_async(g.device_b.get(), 0, words, g.stream.get()), "cuMemsetD32Async");
  trip.h2d = time_copies(g, pinned, static_cast<double>(g.host_bytes), upload, &g.host_link->samples);
  trip.h2d_done = true;
  trip.h2d_data = check_words(g, g.device_b.get(), words, copy_seed);
  if (trip.h2d_data.ok()) {
    if (trip.d2h_done) trip.d2h_data = trip.h2d_data;
    return {};
  }
  trip.d2h_data = check_pattern(host, copy_seed);
  if (!trip.d2h_done || trip.d2h_data.ok()) return {};  // the host buffer was right: the H2D was wrong
  fill_pattern(host, copy_seed);
  check(g.api.memset_d32_async(g.device_b.get(), 0, words, g.stream.get()), "cuMemsetD32Async");
  upload();
  trip.h2d_data = check_words(g, g.device_b.get(), words, copy_seed);
  return {};
}

}  // namespace

void DeviceRun::copies() {
  if (!step("smoke.copy_buffers", allocate_copy_buffers)) {
    free_copy_buffers_unless_hung();  // what was allocated before the failure
    return;
  }
  // The source of every copy, written by the GPU.
  step("smoke.copy_buffers", [](Gpu& g) {
    fill_words(g, g.device_a.get(), g.bytes / 4, copy_seed);
    check(g.api.stream_synchronize(g.stream.get()), "cuStreamSynchronize (copy pattern)");
    return StepOutcome{};
  });
  device_copies();
}

bool DeviceRun::host_link_copies(bool wait) {
  if (m_gpu->stopped || m_gpu->pinned == nullptr) return true;  // nothing to copy (buffers failed, or GPU stopped)
  std::unique_lock<std::shared_timed_mutex> turn(m_gpu->host_link->mutex, std::defer_lock);
  if (!wait) {
    if (!turn.try_lock()) return false;  // another GPU's turn: device work first
  } else if (!turn.try_lock_until(m_gpu->budget->deadline_for(RunBudget::Clock::now()))) {
    for (const char* id : {"smoke.h2d_pinned", "smoke.d2h_pinned", "smoke.h2d_pageable", "smoke.d2h_pageable"}) {
      m_result.findings.push_back(Finding{id,
                                          Status::skip,
                                          "not measured: the host link was still busy with another GPU's copies at "
                                          "this GPU's deadline",
                                          {},
                                          {}});
    }
    return true;
  }
  const double bytes = static_cast<double>(m_gpu->host_bytes);
  const std::size_t size = m_gpu->host_bytes;
  auto pinned = std::make_shared<RoundTrip>();  // co-owned by the steps: they may be abandoned
  LinkSampler link(m_system, m_gpu->options.sysfs_root, m_gpu->info.pci_bus_id, m_gpu->copies_in_flight,
                   std::chrono::milliseconds(2));
  step("smoke.d2h_pinned", [pinned](Gpu& g) { return device_to_host(g, true, *pinned); });
  step("smoke.h2d_pinned", [pinned](Gpu& g) { return host_to_device(g, true, *pinned); });
  const Expectation pcie = pcie_link_expectation(link.stop());
  if (pinned->h2d_done)
    absorb(copy_outcome(*m_gpu, "h2d_pinned", "pinned host->device", pinned->h2d, bytes, size, pinned->h2d_data, pcie));
  if (pinned->d2h_done)
    absorb(copy_outcome(*m_gpu, "d2h_pinned", "pinned device->host", pinned->d2h, bytes, size, pinned->d2h_data, pcie));

  // Pageable memory through the async calls on our stream: staged by the driver, ordered with our work, timed on the
  // host clock around each copy and a synchronisation of the stream.
  auto pageable = std::make_shared<RoundTrip>();
  step("smoke.d2h_pageable", [pageable](Gpu& g) { return device_to_host(g, false, *pageable); });
  step("smoke.h2d_pageable", [pageable](Gpu& g) { return host_to_device(g, false, *pageable); });
  if (pageable->h2d_done) {
    absorb(copy_outcome(*m_gpu, "h2d_pageable", "pageable host->device", pageable->h2d, bytes, size, pageable->h2d_data,
                        Expectation{}));
  }
  if (pageable->d2h_done) {
    absorb(copy_outcome(*m_gpu, "d2h_pageable", "pageable device->host", pageable->d2h, bytes, size, pageable->d2h_data,
                        Expectation{}));
  }
  return true;
}

void DeviceRun::device_copies() {
  const double bytes = static_cast<double>(m_gpu->bytes);
  // The copy engine's D2D is a figure only: copy engines saturate near 66% of HBM bandwidth on H100/H200
  // (NVIDIA/cccl#1672, cuda-samples#366), so its ratio to the datasheet says little about the memory.
  Expectation copy_engine;
  if (m_model != nullptr && m_model->memory_bandwidth) {
    copy_engine = Expectation{*m_model->memory_bandwidth * m_expectations->efficiency.d2d_copy, std::nullopt, false,
                              m_model->model + " memory bandwidth " + rate_text(*m_model->memory_bandwidth) +
                                  " GB/s x " + format("%.2g", m_expectations->efficiency.d2d_copy) +
                                  " (copy engines saturate near 66% of HBM: NVIDIA/cccl#1672); " + m_model->source};
  }
  step("smoke.d2d", [bytes, copy_engine](Gpu& g) {
    check(g.api.memset_d32_async(g.device_b.get(), 0, g.bytes / 4, g.stream.get()), "cuMemsetD32Async");
    // A device-to-device copy reads and writes every byte: count both.
    const Summary rates = time_copies(g, true, 2 * bytes, [&] {
      check(g.api.memcpy_dtod_async(g.device_b.get(), g.device_a.get(), g.bytes, g.stream.get()),
            "cuMemcpyDtoDAsync_v2");
    });
    const PatternCheck data = check_words(g, g.device_b.get(), g.bytes / 4, copy_seed);
    return copy_outcome(g, "d2d", "copy-engine device->device", rates, 2 * bytes, g.bytes, data, copy_engine);
  });
  if (m_gpu->stopped) return;
  if (m_gpu->stream_copy == nullptr) {
    m_result.findings.push_back(Finding{"smoke.memory_bandwidth",
                                        Status::skip,
                                        "memory bandwidth not measured: the kernels are not loaded (see smoke.kernels)",
                                        {},
                                        {}});
    return;
  }
  step("smoke.memory_bandwidth", [expectation = memory_bandwidth_expectation()](Gpu& g) {
    // Whole 16-byte vectors; the copy buffers are at least 4 x the L2 each (copy_bytes), so the L2 serves neither.
    const std::size_t vectors = g.bytes / 16;
    const double counted = 2.0 * 16 * static_cast<double>(vectors);  // read + write
    check(g.api.memset_d32_async(g.device_b.get(), 0, g.bytes / 4, g.stream.get()), "cuMemsetD32Async");
    CUdeviceptr in = g.device_a.get(), out = g.device_b.get();
    unsigned long long count = vectors;
    void* params[] = {&in, &out, &count};
    const Summary rates = time_copies(g, true, counted, [&] {
      check(g.api.launch_kernel(g.stream_copy, grid_stride_blocks(g), 1, 1, 256, 1, 1, 0, g.stream.get(), params,
                                nullptr),
            "cuLaunchKernel(smoke_stream_copy)");
    });
    const PatternCheck data = check_words(g, g.device_b.get(), vectors * 4, copy_seed);
    return copy_outcome(g, "memory_bandwidth", "SM stream copy (read + write)", rates, counted, vectors * 16, data,
                        expectation);
  });
}

Expectation DeviceRun::memory_bandwidth_expectation() const {
  Expectation out;
  if (m_model == nullptr || !m_model->memory_bandwidth) return out;
  const StreamEfficiency& efficiency = m_expectations->stream_efficiency;
  out.expected = *m_model->memory_bandwidth * efficiency.memory_bandwidth;
  out.calibrated = efficiency.calibrated() && status_is_calibrated(m_model->status);
  out.source = m_model->model + " memory bandwidth " + rate_text(*m_model->memory_bandwidth) + " GB/s x " +
               format("%.2g", efficiency.memory_bandwidth) + " (gpuenv stream kernel, " + efficiency.status + ")";
  if (m_model->memory_bandwidth_minimum) {
    // DCGM's memory_bandwidth floor is 0.75 x dcgmproftester's DRAM figure (testing/gen_validation.sh), which is a
    // cuMemcpy device->device loop counting read + write (common/CudaWorker/FieldWorkers.hpp FieldWorkerDramUtil):
    // a copy-engine rate, which an SM copy should exceed, so the floor is conservative for the SM figure.
    const bool verified = m_model->is_verified("memory_bandwidth_minimum");
    if (verified) out.minimum = m_model->memory_bandwidth_minimum;
    out.source += "; DCGM memory_bandwidth minimum " + rate_text(*m_model->memory_bandwidth_minimum) + " GB/s" +
                  (verified ? std::string() : " (not verified for this product: not judged)");
  }
  out.source += "; " + m_model->source;
  return out;
}

Expectation DeviceRun::pcie_link_expectation(const LinkUnderLoad& under_load) {
  Expectation pcie;
  read_pcie_link(m_system, m_gpu->options.sysfs_root, m_result.info);  // the maxima (and the link now)
  DeviceInfo& info = m_result.info;
  info.pcie_generation = under_load.generation;  // the link the copies ran on; unknown when never read under load
  info.pcie_width = under_load.width;
  // Judged against what the slot should give (a link trained down is the fault to find), not the current link.
  const std::optional<CapableLink> capable = capable_pcie_link(info);
  if (capable && info.mig_profile.empty()) {
    if (auto link = pcie_expectation(*m_expectations, capable->generation, capable->width)) {
      pcie = Expectation{link->expected_gbs, link->minimum_gbs, link->expected_calibrated,
                         link->source + " (the link the GPU and its upstream port both support: GPU max " +
                             link_text(info.pcie_max_generation, info.pcie_max_width) + ", upstream port max " +
                             link_text(info.pcie_upstream_max_generation, info.pcie_upstream_max_width) + ")"};
    }
  }
  const bool slow_generation = capable && info.pcie_generation && *info.pcie_generation < capable->generation;
  const bool narrow = capable && info.pcie_width && *info.pcie_width < capable->width;
  if (slow_generation || narrow) {
    m_result.findings.push_back(
        Finding{"smoke.pcie_link",
                Status::warn,
                "PCIe link ran " + link_text(info.pcie_generation, info.pcie_width) + " while the pinned copies ran (" +
                    std::to_string(under_load.samples) + " readings, the fastest counted), but the GPU and its " +
                    "upstream port support " + link_text(capable->generation, capable->width),
                "reseat the GPU or check the slot, riser and BIOS PCIe settings; a degraded link cuts host<->device "
                "bandwidth",
                {}});
  }
  return pcie;
}

}  // namespace gpuenv::smoke
