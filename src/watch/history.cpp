#include "watch/history.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "util/strings.hpp"
#include "watch/rules.hpp"
#include "watch/store.hpp"

namespace gpuenv::watch {
namespace {

using report::Status;

struct Counter {
  std::optional<std::uint64_t> GpuSample::*field;
  const char* what;
  Status status;
};

// DCGM's health watches: volatile uncorrectable ECC errors and NVLink replay/recovery errors that grow fail; CRC
// errors warn (NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp, common/DcgmGPUHardwareLimits.h). Remaps and PCIe
// replays warn: they ask for a look, not a drain.
constexpr Counter k_history_counters[] = {
    {&GpuSample::ecc_uncorrected, "uncorrectable ECC errors", Status::fail},
    {&GpuSample::nvlink_replay, "NVLink replay errors", Status::fail},
    {&GpuSample::nvlink_recovery, "NVLink recovery errors", Status::fail},
    {&GpuSample::remapped_uncorrectable, "rows remapped for uncorrectable errors", Status::warn},
    {&GpuSample::remapped_correctable, "rows remapped for correctable errors", Status::warn},
    {&GpuSample::nvlink_crc, "NVLink CRC errors", Status::warn},
    {&GpuSample::pcie_replays, "PCIe replays", Status::warn},
    // NVLink5 (Blackwell): the two judgements of probe/nvlink5.hpp's table (gpuenv's policy after DCGM 4.6.0
    // MonitorNVLink5Fields, MonitorNVLinkErrorFields), as watch.nvlink_errors and watch.nvlink_recoveries judge them;
    // effective errors are in neither (not judged, and not stored per hour).
    {&GpuSample::nvlink5_errors, "NVLink5 errors", Status::fail},
    {&GpuSample::nvlink5_warnings, "NVLink5 successful link recoveries", Status::warn},
};

std::string per_hour(std::uint64_t count, double hours) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", hours > 0 ? static_cast<double>(count) / hours : 0.0);
  return buffer;
}

}  // namespace

report::Finding history_error_rates(const std::vector<NodeSample>& samples, std::int64_t now_ms) {
  const std::string id = "history.error_rates";
  if (samples.size() < 2) {
    return {id, Status::skip, "gpuenv watch's history holds fewer than two samples of the window", {}, {}};
  }
  const double hours = static_cast<double>(now_ms - samples.front().time_ms) / 3.6e6;
  Status worst = Status::pass;
  std::vector<std::string> grew;
  std::map<std::string, const GpuSample*> gpus;  // every GPU of the window, by UUID
  for (const NodeSample& sample : samples) {
    for (const GpuSample& gpu : sample.gpus) gpus[gpu.uuid.empty() ? std::to_string(gpu.index) : gpu.uuid] = &gpu;
  }
  for (const auto& [key, gpu] : gpus) {
    for (const Counter& counter : k_history_counters) {
      std::uint64_t total = 0;
      const GpuSample* before = nullptr;
      for (const NodeSample& sample : samples) {
        const GpuSample* here = find_gpu(sample, *gpu);
        if (here == nullptr || here->lost()) continue;
        if (before != nullptr && before->*counter.field && here->*counter.field) {
          const std::uint64_t a = *(before->*counter.field), b = *(here->*counter.field);
          total += b >= a ? b - a : b;  // a reset (driver reload): everything since is new
        }
        before = here;
      }
      if (total == 0) continue;
      // DCGM's PCIe watch warns only above 8 replays a minute (DCGM_LIMIT_MAX_PCIREPLAY_RATE,
      // common/DcgmGPUHardwareLimits.h): fewer over the window are listed, not judged.
      const bool judged = counter.field != &GpuSample::pcie_replays ||
                          (hours > 0 && static_cast<double>(total) / (hours * 60) > k_pcie_replays_per_minute);
      if (judged) worst = std::max(worst, counter.status);
      grew.push_back("GPU " + std::to_string(gpu->index) + ": " + std::to_string(total) + " " + counter.what + " (" +
                     per_hour(total, hours) + "/h)");
    }
  }
  char span[32];
  std::snprintf(span, sizeof span, "%.1f h", hours);
  const std::string window = "in the last " + std::string(span) + " of gpuenv watch's history (" +
                             std::to_string(samples.size()) + " samples)";
  if (grew.empty()) {
    return {id, Status::pass, "no error counter grew " + window, {}, {}};
  }
  return {id, worst, util::join(grew, "; ") + " " + window,
          "`gpuenv events` lists when each began; errors that keep growing point at a GPU, link or slot to drain, "
          "reset and inspect (`nvidia-smi -q -d ECC,ROW_REMAPPER,PCIE`, `nvidia-smi nvlink -e`)",
          "DCGM health watches (NVIDIA/DCGM @ 72fa3feaa67d716a75323a8f47c34ff3ee73f824 modules/health/"
          "DcgmHealthWatch.cpp)"};
}

std::optional<report::Finding> read_history_error_rates(system::System& system, const std::string& db,
                                                        std::int64_t now_ms) {
  if (db.empty() || db == "none" || !system.exists(db)) return std::nullopt;
  const auto skip = [](const std::string& why) {
    return report::Finding{"history.error_rates", Status::skip, "gpuenv watch's history not read: " + why, {}, {}};
  };
  auto library = sqlite::Library::load(system);
  if (!library) return skip(library.error().message);
  auto store = Store::open_read_only(*library, db);
  if (!store) return skip(store.error().message);
  auto samples = (*store)->samples_since(now_ms - k_history_window_ms);
  if (!samples) return skip(samples.error().message);
  return history_error_rates(*samples, now_ms);
}

}  // namespace gpuenv::watch
