// Judgements on what NVML says around a run (issue 23 items 4 and 9): another process on the GPU, and the level-2
// counters DCGM's diagnostic watches (PCIe replays, NVLink errors and link state). Pure functions of the readings.

#include <algorithm>
#include <set>

#include "smoke/internal/nvml_monitor.hpp"
#include "util/strings.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

std::vector<unsigned> other_processes(const GpuUsage& before, const GpuUsage& after, unsigned own_pid) {
  std::vector<unsigned> out;
  if (!after.pids) return out;
  const std::set<unsigned> earlier(before.pids ? before.pids->begin() : after.pids->end(),
                                   before.pids ? before.pids->end() : after.pids->end());
  bool saw_own = false;
  for (const unsigned pid : *after.pids) {
    if (pid == own_pid) {
      saw_own = true;
    } else if (earlier.count(pid) == 0) {
      out.push_back(pid);
    }
  }
  // In a container NVML gives host PIDs: this process then shows as one new PID that is not its own.
  if (!saw_own && out.size() == 1) out.clear();
  return out;
}

std::optional<std::string> busy_reason(const GpuUsage& before, const GpuUsage& after, unsigned own_pid) {
  std::vector<std::string> pids;
  if (before.pids) {  // before the run this process had no context on the GPU: every PID is another's
    for (const unsigned pid : *before.pids) pids.push_back(std::to_string(pid));
  }
  for (const unsigned pid : other_processes(before, after, own_pid)) pids.push_back(std::to_string(pid));
  const bool busy_before = before.utilization && *before.utilization > 0;
  if (pids.empty() && !busy_before) return std::nullopt;
  std::string reason = "GPU in use";
  if (!pids.empty()) reason += " by PID " + util::join(pids, ", ");
  if (busy_before) {
    reason += (pids.empty() ? " (" : " (and ") + std::to_string(*before.utilization) +
              "% utilisation before the run, when smoke had launched nothing)";
  }
  return reason;
}

namespace {

/// "link 3: 2 replay errors" parts for counter `field` that rose on any link.
template <typename Field>
void rises(const FabricCounters& before, const FabricCounters& after, Field field, const char* what,
           std::vector<std::string>& out, unsigned long long& total) {
  for (const NvLinkCounters& now : after.nvlinks) {
    const auto then = std::find_if(before.nvlinks.begin(), before.nvlinks.end(),
                                   [&](const NvLinkCounters& link) { return link.link == now.link; });
    if (then == before.nvlinks.end()) continue;
    const std::optional<unsigned long long>& earlier = (*then).*field;
    const std::optional<unsigned long long>& later = now.*field;
    if (!earlier || !later || *later <= *earlier) continue;
    const unsigned long long rise = *later - *earlier;
    total += rise;
    out.push_back("link " + std::to_string(now.link) + ": " + std::to_string(rise) + " " + what);
  }
}

/// NVLink5 (Blackwell), after DCGM 4.6.0's health watch as probe's table has it (probe/nvlink5.hpp, shared with doctor
/// and watch): any rise of an error counter fails (MonitorNVLink5Fields, DCGM_LIMIT_MAX_NVLINK_ERROR 1,
/// common/DcgmGPUHardwareLimits.h) but those whose rise only warns, which go to `warnings`, and those shown, not judged
/// (effective errors: the effective bit error rate judges them), which go to `shown`; a bit error rate past its limit
/// fails. gpuenv's own policy where it is gentler than DCGM's (probe/nvlink5.hpp).
std::vector<std::string> nvlink5_faults(const FabricCounters& before, const FabricCounters& after,
                                        std::vector<std::string>& warnings, std::vector<std::string>& shown) {
  std::vector<std::string> out;
  for (const NvLinkCounters& now : after.nvlinks) {
    const auto then = std::find_if(before.nvlinks.begin(), before.nvlinks.end(),
                                   [&](const NvLinkCounters& link) { return link.link == now.link; });
    if (then == before.nvlinks.end()) continue;
    for (const NvLink5Counter& counter : now.nvlink5) {
      const auto earlier = std::find_if(then->nvlink5.begin(), then->nvlink5.end(),
                                        [&](const NvLink5Counter& c) { return c.field == counter.field; });
      if (earlier == then->nvlink5.end() || counter.value <= earlier->value) continue;
      (!probe::nvlink5_judged(counter.field)      ? shown
       : probe::nvlink5_warns_only(counter.field) ? warnings
                                                  : out)
          .push_back("link " + std::to_string(now.link) + ": " + std::to_string(counter.value - earlier->value) + " " +
                     probe::nvlink5_counter_name(counter.field));
    }
  }
  for (std::string& fault : probe::nvlink5_ber_faults(after.nvlink5_effective_ber, after.nvlink5_symbol_ber))
    out.push_back(std::move(fault));
  return out;
}

}  // namespace

Finding judge_link_errors(const FabricCounters& before, const FabricCounters& after, double seconds,
                          bool inactive_fails) {
  if (!before.any() || !after.any()) {
    return Finding{"smoke.link_errors",
                   Status::skip,
                   "PCIe replay and NVLink counters not readable through NVML (no NVML, or not supported)",
                   {},
                   {}};
  }
  std::vector<std::string> failing, warning, counted;
  if (before.pcie_replays && after.pcie_replays && *after.pcie_replays >= *before.pcie_replays) {
    const unsigned replays = *after.pcie_replays - *before.pcie_replays;
    // DCGM pcie plugin: "Maximum PCIe replays allowed per device while the plugin runs" max_pcie_replays = 80.
    (replays > 80 ? failing : counted)
        .push_back(std::to_string(replays) + " PCIe replays during the run" +
                   (replays > 80 ? " (more than DCGM's 80 per run)" : " (DCGM fails above 80)"));
  }
  unsigned long long replay = 0, recovery = 0, crc_flit = 0, crc_data = 0;
  std::vector<std::string> replay_parts, recovery_parts, crc_parts;
  rises(before, after, &NvLinkCounters::replay, "replay errors", replay_parts, replay);
  rises(before, after, &NvLinkCounters::recovery, "recovery errors", recovery_parts, recovery);
  rises(before, after, &NvLinkCounters::crc_flit, "CRC flit errors", crc_parts, crc_flit);
  rises(before, after, &NvLinkCounters::crc_data, "CRC data errors", crc_parts, crc_data);
  // DCGM health NVLINK (modules/health/DcgmHealthWatch.cpp MonitorNVLink4Fields): a replay or recovery error fails;
  // CRC errors fail at 100 a second (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR) and warn below. DCGM rates each field on its own
  // (DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL, then ..._CRC_DATA_ERROR_TOTAL, each summed over the links), so flit and
  // data errors are not added together: 60 + 60 a second is a warning there, not a failure.
  if (replay + recovery > 0) {
    std::vector<std::string> errors = replay_parts;
    errors.insert(errors.end(), recovery_parts.begin(), recovery_parts.end());
    failing.push_back("NVLink " + util::join(errors, ", "));
  }
  if (crc_flit + crc_data > 0) {
    auto per_second = [seconds](unsigned long long count) {
      return seconds > 0 ? static_cast<double>(count) / seconds : static_cast<double>(count);
    };
    const double rate = std::max(per_second(crc_flit), per_second(crc_data));
    (rate >= 100 ? failing : warning)
        .push_back("NVLink " + util::join(crc_parts, ", ") + " (" + std::to_string(static_cast<long long>(rate)) +
                   " a second of one kind; DCGM fails at 100)");
  }
  std::vector<std::string> nvlink5_warnings, nvlink5_shown;
  if (const std::vector<std::string> nvlink5 = nvlink5_faults(before, after, nvlink5_warnings, nvlink5_shown);
      !nvlink5.empty())
    failing.push_back("NVLink " + util::join(nvlink5, ", "));
  // NVLink5's ECC data error total over all links (read on NVLink5 GPUs only): any rise fails (DCGM 4.6.0
  // MonitorNVLink5Fields, DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL); a counter that went down counts its later value, as
  // probe's growth has it; unread at either end is no growth.
  if (std::optional<std::string> rise =
          probe::nvlink_ecc_rise(probe::nvlink_ecc_growth(before.nvlink5_ecc_errors, after.nvlink5_ecc_errors)))
    failing.push_back(std::move(*rise));
  if (!nvlink5_warnings.empty()) warning.push_back("NVLink " + util::join(nvlink5_warnings, ", "));
  if (!nvlink5_shown.empty())
    counted.push_back("NVLink " + util::join(nvlink5_shown, ", ") + " (not judged: the effective bit error rate is)");
  std::vector<std::string> went_down, inactive;
  for (const NvLinkCounters& now : after.nvlinks) {
    const auto then = std::find_if(before.nvlinks.begin(), before.nvlinks.end(),
                                   [&](const NvLinkCounters& link) { return link.link == now.link; });
    if (now.active) continue;
    if (then != before.nvlinks.end() && then->active) {
      went_down.push_back(std::to_string(now.link));
    } else {
      inactive.push_back(std::to_string(now.link));
    }
  }
  if (!went_down.empty()) failing.push_back("NVLink " + util::join(went_down, ", ") + " went down during the run");
  const std::size_t active = static_cast<std::size_t>(
      std::count_if(after.nvlinks.begin(), after.nvlinks.end(), [](const NvLinkCounters& l) { return l.active; }));
  if (!inactive.empty()) {
    const std::string text = "NVLink " + util::join(inactive, ", ") + " inactive (" + std::to_string(active) + " of " +
                             std::to_string(after.nvlinks.size()) + " active)";
    (inactive_fails ? failing : counted)
        .push_back(text + (inactive_fails ? ": every link of an 8-GPU NVSwitch board must be up (aznhc "
                                            "check_nvlink_status)"
                                          : ", not judged on this board"));
  } else if (!after.nvlinks.empty()) {
    counted.push_back("all " + std::to_string(active) + " NVLinks active");
  }
  std::vector<std::string> parts = failing;
  parts.insert(parts.end(), warning.begin(), warning.end());
  parts.insert(parts.end(), counted.begin(), counted.end());
  const std::string message = util::join(parts, "; ");
  if (!failing.empty()) {
    return Finding{"smoke.link_errors", Status::fail, message,
                   "check the links: `nvidia-smi nvlink --status`, `nvidia-smi nvlink -e`, `nvidia-smi -q -d PCIE`; "
                   "reseat or replace the GPU or board if errors persist, and run `gpuenv doctor`",
                   "NVIDIA/DCGM nvvs/plugin_src/pcie (max_pcie_replays 80, NVLink recovery errors), "
                   "modules/health/DcgmHealthWatch.cpp (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR 100/s per field; NVLink5: "
                   "gpuenv's policy after MonitorNVLink5Fields: a counter rise fails but successful link recoveries "
                   "warn and effective errors are not judged, effective BER above 1e-12 and any uncorrected symbol "
                   "error fail, as does any NVLink ECC data error (DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL)); "
                   "Azure/azurehpc-health-checks azure_gpu_nvlink.nhc"};
  }
  if (!warning.empty()) {
    return Finding{"smoke.link_errors", Status::warn, message,
                   "watch the NVLink error counters (`nvidia-smi nvlink -e`); a rising rate points at a marginal link",
                   "NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp (NVLink CRC errors below 100 a second warn; "
                   "NVLink5 successful link recoveries warn: gpuenv's policy after MonitorNVLinkErrorFields; DCGM's "
                   "MonitorNVLink5Fields fails any rise of the recovery total)"};
  }
  return Finding{"smoke.link_errors", Status::pass, message.empty() ? "no counter rose" : message, {}, {}};
}

}  // namespace gpuenv::smoke
