#include "watch/rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "doctor/rules.hpp"
#include "probe/nvlink5.hpp"
#include "probe/pci_bus_id.hpp"
#include "probe/sxid.hpp"
#include "probe/xid.hpp"
#include "util/strings.hpp"
#include "watch/link_counts.hpp"

namespace gpuenv::watch {
namespace {

using report::Status;

std::string gpu_label(const GpuSample& gpu) {
  return "GPU " + std::to_string(gpu.index) + (gpu.pci_bus_id.empty() ? "" : " (" + gpu.pci_bus_id + ")");
}

std::string number(double value, int decimals) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

/// "45 s", "12 min", "3.5 h".
std::string duration_text(std::int64_t ms) {
  const double seconds = static_cast<double>(ms) / 1000;
  if (seconds < 120) return number(seconds, 0) + " s";
  if (seconds < 7200) return number(seconds / 60, 0) + " min";
  return number(seconds / 3600, 1) + " h";
}

/// What one rule is about: its id, what it watches (for the message that clears it) and how long its condition
/// lingers without evidence before it clears.
struct RuleInfo {
  const char* id;
  const char* what;
  bool lingers;  ///< clears only after RuleSettings::clear_after_ms without evidence (counters, temperature)
};

// The rule ids (docs/rules.md "watch"). SEAM (issue 24): actions move to data/doctor/actions.toml rows once doctor's
// action table lands; until then each rule names its action here.
constexpr RuleInfo k_rules[] = {
    {"watch.nvml", "NVML answering", false},
    {"watch.gpu_lost", "GPU lost", false},
    {"watch.gpu_count", "GPU count", false},
    {"watch.ecc_uncorrected", "uncorrectable ECC errors growing", true},
    {"watch.remapped_rows", "row remaps growing", true},
    {"watch.remap_pending", "row remap pending", false},
    {"watch.remap_failure", "row remap failure", false},
    {"watch.nvlink_errors", "NVLink errors growing", true},
    {"watch.nvlink_recoveries", "NVLink5 successful link recoveries growing", true},
    {"watch.nvlink_crc", "NVLink CRC errors growing", true},
    {"watch.nvlink_down", "NVLinks down", false},
    {"watch.pcie_replays", "PCIe replays growing", true},
    {"watch.temperature", "temperature at or above the limit", true},
    {"watch.throttle", "throttling", false},
    {"watch.idle", "idle", false},
    {"watch.fabric", "NVLink fabric registration or health", false},
};

const RuleInfo& rule_info(const std::string& id) {
  for (const RuleInfo& info : k_rules) {
    if (id == info.id) return info;
  }
  return k_rules[0];
}

/// Raises and clears the events of one interval.
class Emitter {
 public:
  Emitter(const NodeSample& now, const RuleSettings& settings, RuleState& state, std::vector<Event>& out)
      : m_now(now), m_settings(settings), m_state(state), m_out(out) {}

  /// Condition `rule` holds for `gpu` (nullptr: the node) at `status`: an event when it opens or gets worse.
  void hold(const std::string& rule, const GpuSample* gpu, Status status, std::string message, std::string remedy,
            std::string action) {
    const std::string key = rule + "|" + (gpu != nullptr ? gpu_key(*gpu) : "");
    m_held.insert(key);
    auto [it, opened] = m_state.open.try_emplace(key, Condition{m_now.time_ms, m_now.time_ms, status});
    it->second.last_seen_ms = m_now.time_ms;
    if (!opened && status <= it->second.status) return;
    it->second.status = std::max(it->second.status, status);
    emit(rule, gpu, status, std::move(message), std::move(remedy), std::move(action));
  }

  /// A one-off event (a kernel-log record).
  void emit(const std::string& rule, const GpuSample* gpu, Status status, std::string message, std::string remedy,
            std::string action, std::string source = {}) {
    Event event;
    event.time_ms = m_now.time_ms;
    event.finding = report::Finding{rule, status, std::move(message), std::move(remedy),
                                    source.empty() ? source_of(rule) : std::move(source)};
    event.action = std::move(action);
    if (gpu != nullptr) {
      event.gpu_uuid = gpu->uuid;
      event.gpu_index = gpu->index;
    }
    m_out.push_back(std::move(event));
  }

  /// Clears the open conditions that did not hold this interval (those that linger: after clear_after_ms).
  void clear_the_rest(const std::vector<GpuSample>& known_gpus) {
    for (auto it = m_state.open.begin(); it != m_state.open.end();) {
      const std::string& key = it->first;
      const std::string rule = key.substr(0, key.find('|'));
      const RuleInfo& info = rule_info(rule);
      const bool quiet_long_enough =
          !info.lingers || m_now.time_ms - it->second.last_seen_ms >= m_settings.clear_after_ms;
      if (m_held.count(key) != 0 || !quiet_long_enough) {
        ++it;
        continue;
      }
      const std::string uuid = key.substr(key.find('|') + 1);
      const GpuSample* gpu = nullptr;
      for (const GpuSample& candidate : known_gpus) {
        if (!uuid.empty() && gpu_key(candidate) == uuid) gpu = &candidate;
      }
      // A GPU NVML cannot read now (lost, or NVML down) keeps its conditions: nothing says they cleared.
      if (!uuid.empty() && (gpu == nullptr || (gpu->lost() && rule != "watch.gpu_lost"))) {
        ++it;
        continue;
      }
      std::string where = gpu != nullptr ? gpu_label(*gpu) + ": " : (uuid.empty() ? "" : uuid + ": ");
      emit(rule, gpu, Status::pass,
           where + "cleared: " + info.what + " (since " + duration_text(m_now.time_ms - it->second.since_ms) + ")", {},
           "none");
      if (gpu == nullptr && !uuid.empty()) m_out.back().gpu_uuid = uuid;
      it = m_state.open.erase(it);
    }
  }

  const NodeSample& now() const { return m_now; }

 private:
  std::string source_of(const std::string& rule) const {
    const auto it = m_settings.sources.find(rule);
    return it == m_settings.sources.end() ? std::string() : it->second;
  }

  const NodeSample& m_now;
  const RuleSettings& m_settings;
  RuleState& m_state;
  std::vector<Event>& m_out;
  std::set<std::string> m_held;
};

// ------------------------------------------------------------------------------------------------ node rules

void check_nvml(const History& history, Emitter& emit) {
  const NodeSample& now = *history.latest();
  if (now.nvml) return;
  emit.hold("watch.nvml", nullptr, Status::fail, "NVML did not answer: " + now.nvml_reason,
            "check the driver (`nvidia-smi`, `gpuenv doctor`); a call that hangs points at a GPU or driver that needs "
            "a reset or reboot",
            "drain_and_inspect");
}

void check_gpu_count(const History& history, RuleState& state, Emitter& emit) {
  const NodeSample& now = *history.latest();
  if (!now.nvml) return;
  const unsigned count = now.attached_gpus.value_or(static_cast<unsigned>(now.gpus.size()));
  // The count is the boot's: after a reboot the node may be another instance type, or an image that carried the
  // database from the machine it was built on. A GPU missing from the start of a boot is doctor's to find (the
  // instance type's GPU count, data/doctor/instances.toml).
  if (now.boot_id != state.most_gpus_boot) {
    state.most_gpus.reset();
    state.most_gpus_boot = now.boot_id;
  }
  if (!state.most_gpus || count > *state.most_gpus) state.most_gpus = count;
  if (count >= *state.most_gpus) return;
  std::vector<std::string> missing;
  for (const NodeSample& earlier : history.samples()) {
    for (const GpuSample& gpu : earlier.gpus) {
      const std::string label = gpu_label(gpu) + (gpu.uuid.empty() ? "" : " " + gpu.uuid);
      if (find_gpu(now, gpu) == nullptr && std::find(missing.begin(), missing.end(), label) == missing.end())
        missing.push_back(label);
    }
  }
  emit.hold("watch.gpu_count", nullptr, Status::fail,
            std::to_string(count) + " GPU(s) visible, " + std::to_string(*state.most_gpus) + " before" +
                (missing.empty() ? std::string() : "; missing: " + util::join(missing, ", ")),
            "a GPU fell off the bus or was not initialised: drain the node and reboot it; if it repeats, check power "
            "and seating (`gpuenv doctor` names the Xid)",
            "reboot");
}

// ------------------------------------------------------------------------------------------------ GPU rules

/// Growth of `field` for `gpu` over the samples since `since_ms`, summed interval by interval (resets counted).
std::optional<std::uint64_t> growth_since(const History& history, const GpuSample& gpu,
                                          std::optional<std::uint64_t> GpuSample::*field, std::int64_t since_ms) {
  std::optional<std::uint64_t> total;
  const GpuSample* before = nullptr;
  for (const NodeSample& sample : history.samples()) {
    const GpuSample* here = find_gpu(sample, gpu);
    if (here == nullptr) continue;
    if (before != nullptr && sample.time_ms > since_ms) {
      if (auto grew = growth(before->*field, here->*field)) total = total.value_or(0) + *grew;
    }
    before = here;
  }
  return total;
}

struct CounterRule {
  const char* rule;
  std::optional<std::uint64_t> GpuSample::*field;
  const char* what;  ///< "uncorrectable ECC errors"
  Status status;
  const char* action;
  const char* remedy;
};

constexpr const char* k_memory_remedy =
    "drain the node, then reset the GPU (`nvidia-smi -r`) or reboot so that pending row remaps take effect; replace "
    "the GPU if errors keep coming (`nvidia-smi -q -d ECC,ROW_REMAPPER`, `gpuenv doctor`)";
constexpr const char* k_nvlink_remedy =
    "check `nvidia-smi nvlink -e` and `nvidia-smi nvlink --status`: NVLink errors that grow point at a failing link, "
    "NVSwitch or baseboard; drain the node, reboot, and open a hardware ticket if they come back";
constexpr const char* k_pcie_remedy =
    "PCIe replays retransmit corrupted packets: reseat the GPU or its riser, check the slot and BIOS PCIe settings; "
    "open a hardware ticket if they keep growing (`nvidia-smi -q -d PCIE`)";

// DCGM's health watches: a volatile uncorrectable ECC error fails (DcgmHealthWatch.cpp MonitorMem); NVLink replay and
// recovery errors that grow by one fail, CRC errors warn (MonitorNVLink, DcgmGPUHardwareLimits.h) and fail at DCGM's
// rate (check_counters: then under watch.nvlink_errors; the warning has a rule id of its own, so that CRC errors
// trickling in on a healthy link never keep a replay or recovery failure open); NVLink5's by probe/nvlink5.hpp's
// table.
constexpr CounterRule k_counters[] = {
    {"watch.ecc_uncorrected", &GpuSample::ecc_uncorrected, "uncorrectable ECC errors", Status::fail, "reset_gpu",
     k_memory_remedy},
    {"watch.remapped_rows", &GpuSample::remapped_uncorrectable, "rows remapped for uncorrectable errors", Status::warn,
     "reset_gpu", k_memory_remedy},
    {"watch.remapped_rows", &GpuSample::remapped_correctable, "rows remapped for correctable errors", Status::warn,
     "reset_gpu", k_memory_remedy},
    {"watch.nvlink_errors", &GpuSample::nvlink_replay, "NVLink replay errors", Status::fail, "drain_and_inspect",
     k_nvlink_remedy},
    {"watch.nvlink_errors", &GpuSample::nvlink_recovery, "NVLink recovery errors", Status::fail, "drain_and_inspect",
     k_nvlink_remedy},
    {"watch.nvlink_crc", &GpuSample::nvlink_crc, "NVLink CRC errors", Status::warn, "drain_and_inspect",
     k_nvlink_remedy},
    // NVLink5 (Blackwell): probe/nvlink5.hpp's table splits its counters into those whose rise fails and the
    // successful link recoveries, whose rise warns (gpuenv's policy after DCGM 4.6.0 MonitorNVLink5Fields and
    // MonitorNVLinkErrorFields), as smoke and doctor judge them; effective errors are not judged (the effective bit
    // error rate is). The recoveries warn under their own rule id, so that a warning never keeps a failure open.
    {"watch.nvlink_errors", &GpuSample::nvlink5_errors, "NVLink5 errors", Status::fail, "drain_and_inspect",
     k_nvlink_remedy},
    {"watch.nvlink_recoveries", &GpuSample::nvlink5_warnings, "NVLink5 successful link recoveries", Status::warn,
     "none", k_nvlink_remedy},
    {"watch.pcie_replays", &GpuSample::pcie_replays, "PCIe replays", Status::warn, "drain_and_inspect", k_pcie_remedy},
};

/// DCGM_LIMIT_MAX_NVLINK_CRC_ERROR: CRC errors at 100 per second or more fail (DcgmGPUHardwareLimits.h).
constexpr double k_nvlink_crc_fail_per_second = 100;
constexpr std::int64_t k_minute_ms = 60'000;

/// The PCIe replays per minute of `gpu` over the last minute of `history` (as DCGM: from the oldest sample of the
/// minute to the latest; from the previous sample when the interval is a minute or longer).
double pcie_replays_per_minute(const History& history, const GpuSample& gpu) {
  const std::int64_t now_ms = history.latest()->time_ms;
  const NodeSample* start = history.previous();
  for (const NodeSample& sample : history.samples()) {
    if (sample.time_ms >= now_ms - k_minute_ms && &sample != history.latest()) {
      if (find_gpu(sample, gpu) != nullptr) {
        start = &sample;
        break;
      }
    }
  }
  if (start == nullptr || start->time_ms >= now_ms) return 0;
  const auto grew = growth_since(history, gpu, &GpuSample::pcie_replays, start->time_ms);
  // Never scaled up: less than a minute of history counts as a minute (DCGM compares the raw growth over the last
  // minute with its limit, MonitorPcie), so 2 replays in a watch's first 10 s are 2 a minute, not 12.
  return static_cast<double>(grew.value_or(0)) * k_minute_ms /
         static_cast<double>(std::max<std::int64_t>(now_ms - start->time_ms, k_minute_ms));
}

/// "link 3: 2 symbol errors, link 7: 1 failed link recoveries": which NVLink5 counters of one judgement rose between
/// `before` and `gpu`, read per link at both ends ("" when a sample lacks its per-link readings: one read back from
/// the database).
std::string nvlink5_detail(const GpuSample& before, const GpuSample& gpu, bool warns) {
  std::vector<std::string> parts;
  for (const probe::NvLinkCounters& link : gpu.nvlink_links) {
    const auto earlier = std::find_if(before.nvlink_links.begin(), before.nvlink_links.end(),
                                      [&](const probe::NvLinkCounters& b) { return b.link == link.link; });
    if (earlier == before.nvlink_links.end()) continue;
    for (std::string& rise :
         probe::nvlink5_rises(link.link, probe::nvlink5_growth(earlier->nvlink5, link.nvlink5), warns))
      parts.push_back(std::move(rise));
  }
  return util::join(parts, ", ");
}

/// Whether the NVLink CRC errors between `before` and `gpu` reached DCGM's failing rate. DCGM rates flit and data CRC
/// errors each on its own (DcgmHealthWatch.cpp MonitorNVLink4Fields: DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL, then
/// ..._CRC_DATA_ERROR_TOTAL, each per second against DCGM_LIMIT_MAX_NVLINK_CRC_ERROR), so 60 + 60 a second is a
/// warning. Without per-link readings at both ends (a sample read back from the database) only a sum of twice the
/// limit proves one kind reached it.
bool nvlink_crc_fails(const GpuSample& before, const GpuSample& gpu, std::uint64_t sum, double seconds) {
  if (seconds <= 0) return false;
  if (before.nvlink_links.empty() || gpu.nvlink_links.empty())
    return static_cast<double>(sum) / seconds >= 2 * k_nvlink_crc_fail_per_second;
  const std::uint64_t flit =
      link_growth(before.nvlink_links, gpu.nvlink_links, &probe::NvLinkCounters::crc_flit, nullptr);
  const std::uint64_t data =
      link_growth(before.nvlink_links, gpu.nvlink_links, &probe::NvLinkCounters::crc_data, nullptr);
  return static_cast<double>(std::max(flit, data)) / seconds >= k_nvlink_crc_fail_per_second;
}

void check_counters(const History& history, const GpuSample& gpu, Emitter& emit) {
  const NodeSample* previous = history.previous();
  const GpuSample* before = previous != nullptr ? find_gpu(*previous, gpu) : nullptr;
  if (before == nullptr) return;
  const std::int64_t now_ms = emit.now().time_ms;
  const double seconds = static_cast<double>(now_ms - previous->time_ms) / 1000;
  for (const CounterRule& rule : k_counters) {
    const auto grew = growth(before->*rule.field, gpu.*rule.field);
    if (!grew || *grew == 0) continue;
    if (rule.field == &GpuSample::pcie_replays && pcie_replays_per_minute(history, gpu) <= k_pcie_replays_per_minute)
      continue;
    const auto hour = growth_since(history, gpu, rule.field, now_ms - k_hour_ms);
    Status status = rule.status;
    std::string rule_id = rule.rule;
    const double per_second = seconds > 0 ? static_cast<double>(*grew) / seconds : 0;
    if (rule.field == &GpuSample::nvlink_crc && nvlink_crc_fails(*before, gpu, *grew, seconds)) {
      status = Status::fail;
      rule_id = "watch.nvlink_errors";
    }
    std::string what = rule.what;
    if (rule.field == &GpuSample::nvlink5_errors || rule.field == &GpuSample::nvlink5_warnings) {
      const std::string detail = nvlink5_detail(*before, gpu, rule.field == &GpuSample::nvlink5_warnings);
      if (!detail.empty()) what += " (" + detail + ")";
    }
    emit.hold(rule_id, &gpu, status,
              gpu_label(gpu) + ": " + std::to_string(*grew) + " " + what + " in the last " +
                  duration_text(now_ms - previous->time_ms) + " (" + number(per_second, 2) + "/s; " +
                  std::to_string(hour.value_or(*grew)) + " in the last hour; " + std::to_string(*(gpu.*rule.field)) +
                  " in all)",
              rule.remedy, rule.action);
  }
}

/// NVLink5's bit error rates over all links past DCGM's limits fail as smoke and doctor fail them (probe/nvlink5.hpp:
/// MonitorNVLink5Fields judges the latest value; so does each interval here).
void check_nvlink5_rates(const GpuSample& gpu, Emitter& emit) {
  const std::vector<std::string> faults = probe::nvlink5_ber_faults(gpu.nvlink5_effective_ber, gpu.nvlink5_symbol_ber);
  if (faults.empty()) return;
  emit.hold("watch.nvlink_errors", &gpu, Status::fail, gpu_label(gpu) + ": NVLink5 " + util::join(faults, "; "),
            k_nvlink_remedy, "drain_and_inspect");
}

/// NVLink5's ECC data error total over all links rising between the previous sample and this one fails, as DCGM 4.6.0
/// MonitorNVLink5Fields fails any rise of DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL and smoke and doctor fail it. Unread in
/// either sample (an older GPU, or a sample read back from the database, which does not store it) is no growth.
void check_nvlink_ecc(const History& history, const GpuSample& gpu, Emitter& emit) {
  const NodeSample* previous = history.previous();
  const GpuSample* before = previous != nullptr ? find_gpu(*previous, gpu) : nullptr;
  if (before == nullptr) return;
  const std::optional<std::string> rise =
      probe::nvlink_ecc_rise(probe::nvlink_ecc_growth(before->nvlink5_ecc_errors, gpu.nvlink5_ecc_errors));
  if (!rise) return;
  emit.hold("watch.nvlink_errors", &gpu, Status::fail,
            gpu_label(gpu) + ": " + *rise + " in the last " + duration_text(emit.now().time_ms - previous->time_ms) +
                " (" + std::to_string(*gpu.nvlink5_ecc_errors) + " in all)",
            k_nvlink_remedy, "drain_and_inspect");
}

void check_memory_flags(const GpuSample& gpu, Emitter& emit) {
  if (gpu.remap_failure) {
    emit.hold("watch.remap_failure", &gpu, Status::fail,
              gpu_label(gpu) + ": a row remap failed (the GPU has no spare rows left for the failing memory)",
              "drain the node and replace the GPU (`nvidia-smi -q -d ROW_REMAPPER`)", "replace_hardware");
  }
  if (gpu.remap_pending) {
    emit.hold("watch.remap_pending", &gpu, Status::warn,
              gpu_label(gpu) + ": a row remap is pending (it takes effect at the next GPU reset)",
              "reset the GPU when its work allows (`nvidia-smi -r`), or reboot the node", "reset_gpu");
  }
}

void check_links_down(const History& history, const GpuSample& gpu, Emitter& emit) {
  if (!gpu.nvlink_inactive) return;
  unsigned fewest = *gpu.nvlink_inactive;
  for (const NodeSample& sample : history.samples()) {
    const GpuSample* earlier = find_gpu(sample, gpu);
    if (earlier != nullptr && earlier->nvlink_inactive) fewest = std::min(fewest, *earlier->nvlink_inactive);
  }
  if (*gpu.nvlink_inactive <= fewest) return;
  emit.hold("watch.nvlink_down", &gpu, Status::fail,
            gpu_label(gpu) + ": " + std::to_string(*gpu.nvlink_inactive - fewest) + " NVLink(s) went down (" +
                std::to_string(*gpu.nvlink_inactive) + " inactive now)",
            k_nvlink_remedy, "drain_and_inspect");
}

void check_temperature(const GpuSample& gpu, const RuleSettings& settings, Emitter& emit) {
  if (!gpu.temperature_c || *gpu.temperature_c < settings.temperature_warn_c) return;
  emit.hold("watch.temperature", &gpu, Status::warn,
            gpu_label(gpu) + ": " + number(*gpu.temperature_c, 0) + " °C, at or above the " +
                number(settings.temperature_warn_c, 0) + " °C limit",
            "check cooling (fans, airflow, inlet temperature) and the GPU's load: `nvidia-smi -q -d TEMPERATURE`",
            "none");
}

/// Time in the last window during which the GPU reported any of `bits`: each sample stands for the time up to the
/// next one (at most twice the gap before it, so a pause in sampling is not counted as throttled).
std::int64_t throttled_ms(const History& history, const GpuSample& gpu, unsigned bits, std::int64_t since_ms) {
  std::int64_t total = 0;
  const auto& samples = history.samples();
  for (std::size_t i = 0; i + 1 < samples.size(); ++i) {
    if (samples[i + 1].time_ms <= since_ms) continue;
    const GpuSample* here = find_gpu(samples[i], gpu);
    if (here == nullptr || (here->throttle & bits) == 0) continue;
    std::int64_t span = samples[i + 1].time_ms - std::max(samples[i].time_ms, since_ms);
    if (i > 0) span = std::min(span, 2 * (samples[i].time_ms - samples[i - 1].time_ms));
    total += std::max<std::int64_t>(span, 0);
  }
  return total;
}

void check_throttle(const History& history, const GpuSample& gpu, const RuleSettings& settings, Emitter& emit) {
  const unsigned judged = settings.throttle_fail_bits | settings.throttle_warn_bits;
  if ((gpu.throttle & judged) == 0) return;
  const std::int64_t since = emit.now().time_ms - settings.throttle_window_ms;
  const std::int64_t active = throttled_ms(history, gpu, judged, since);
  if (static_cast<double>(active) < settings.throttle_fraction * static_cast<double>(settings.throttle_window_ms))
    return;
  const bool failing = throttled_ms(history, gpu, settings.throttle_fail_bits, since) > 0;
  emit.hold("watch.throttle", &gpu, failing ? Status::fail : Status::warn,
            gpu_label(gpu) + ": throttled (" + util::join(throttle_names(gpu.throttle & judged), ", ") + ") for " +
                duration_text(active) + " of the last " + duration_text(settings.throttle_window_ms),
            "check cooling and power delivery (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`); a hardware "
            "slowdown or power brake that persists needs a hardware inspection",
            failing ? "drain_and_inspect" : "none");
}

/// Starts or ends each GPU's idle run at the latest sample. An interval without an NVML answer changes nothing (it
/// says neither busy nor idle); a GPU that is lost, reports no utilisation or is gone ends its run.
void track_idle(const NodeSample& now, const RuleSettings& settings, RuleState& state) {
  if (!now.nvml) return;
  std::map<std::string, std::int64_t> still_idle;
  for (const GpuSample& gpu : now.gpus) {
    if (gpu.lost() || !gpu.utilization_percent || *gpu.utilization_percent >= settings.idle_below_percent) continue;
    const auto it = state.idle_since_ms.find(gpu_key(gpu));
    still_idle[gpu_key(gpu)] = it != state.idle_since_ms.end() ? it->second : now.time_ms;
  }
  state.idle_since_ms = std::move(still_idle);
}

void check_idle(const GpuSample& gpu, const RuleSettings& settings, RuleState& state, Emitter& emit) {
  const std::int64_t idle = idle_ms(state, gpu, emit.now().time_ms);
  if (idle < settings.idle_window_ms) return;
  emit.hold("watch.idle", &gpu, Status::warn,
            gpu_label(gpu) + ": utilisation below " + number(settings.idle_below_percent, 0) + " % for " +
                duration_text(idle),
            "an idle GPU still costs money: give it work, or release or right-size the instance "
            "(`gpuenv_gpu_idle_seconds` tracks it)",
            "none");
}

constexpr const char* k_fabric_remedy =
    "check `nvidia-smi -q | grep -A12 Fabric`, the fabric manager (`journalctl -u nvidia-fabricmanager`) and "
    "`nvidia-smi nvlink --status`; drain the node and reset the GPUs and NVSwitches (reboot); open a hardware ticket "
    "if "
    "it stays";

/// The GPU's NVLink fabric registration judged as doctor's fabric.state (nvml.h: the status means something only
/// once the state is Completed): a completed registration whose status is not Success, or health Unhealthy, fails;
/// Limited Capacity warns. A GPU that leaves the Completed state it had earlier in the window fails too; one that
/// has not registered since watch started is doctor's to judge (the fabric manager may still be starting).
void check_fabric(const History& history, const GpuSample& gpu, Emitter& emit) {
  if (!gpu.fabric) return;
  using State = probe::GpuFabricInfo::State;
  const probe::GpuFabricInfo& fabric = *gpu.fabric;
  const std::string label = gpu_label(gpu) + ": NVLink fabric ";
  if (fabric.state != State::completed) {
    const auto& samples = history.samples();
    const bool was_completed = std::any_of(samples.begin(), samples.end(), [&](const NodeSample& sample) {
      const GpuSample* earlier = find_gpu(sample, gpu);
      return earlier != nullptr && earlier->fabric && earlier->fabric->state == State::completed;
    });
    // One interval's grace: a GPU reset or a fabric manager restart re-registers the GPU within seconds, so only a
    // state that is still not Completed at the next reading fails (gpuenv's choice; no tool publishes a window).
    const NodeSample* previous = history.previous();
    const GpuSample* before = previous != nullptr ? find_gpu(*previous, gpu) : nullptr;
    const bool still = before != nullptr && before->fabric && before->fabric->state != State::completed;
    if (was_completed && still) {
      emit.hold("watch.fabric", &gpu, Status::fail,
                label + "state " + probe::to_string(fabric.state) +
                    ", Completed before (CUDA refuses work until the GPU is registered again)",
                k_fabric_remedy, "drain_and_inspect");
    }
  } else if (!fabric.status_ok) {
    emit.hold("watch.fabric", &gpu, Status::fail,
              label + "registration completed with status " + (fabric.status.empty() ? "unknown" : fabric.status),
              k_fabric_remedy, "drain_and_inspect");
  } else if (fabric.health_summary == "Unhealthy") {
    emit.hold("watch.fabric", &gpu, Status::fail, label + "health Unhealthy", k_fabric_remedy, "drain_and_inspect");
  } else if (fabric.health_summary == "Limited Capacity") {
    emit.hold("watch.fabric", &gpu, Status::warn,
              label + "health Limited Capacity (degraded bandwidth or a recovering route)", k_fabric_remedy, "none");
  }
}

void check_gpu(const History& history, const GpuSample& gpu, const RuleSettings& settings, RuleState& state,
               Emitter& emit) {
  if (gpu.lost()) {
    emit.hold("watch.gpu_lost", &gpu, Status::fail, gpu_label(gpu) + ": " + gpu.access_error,
              "drain the node: the GPU needs a reset or a reboot, then `gpuenv doctor`; if it repeats, check power and "
              "seating or replace the GPU",
              "reboot");
    return;
  }
  check_counters(history, gpu, emit);
  check_nvlink5_rates(gpu, emit);
  check_nvlink_ecc(history, gpu, emit);
  check_memory_flags(gpu, emit);
  check_links_down(history, gpu, emit);
  check_temperature(gpu, settings, emit);
  check_throttle(history, gpu, settings, emit);
  check_idle(gpu, settings, state, emit);
  check_fabric(history, gpu, emit);
}

// ------------------------------------------------------------------------------------------------ kernel log

/// An NVSwitch SXid judged as doctor's fabric.sxid judges it (probe::judge_sxid: the driver's "Fatal" fails, else the
/// severity of its row in data/sxid.toml, a secondary row's warning at most). The actions are doctor's for fabric.sxid
/// (data/doctor/actions.toml): a failing SXid needs a person to follow the table's recovery.
void check_sxid_record(const KernelRecord& record, Emitter& emit) {
  const int code = record.code.value_or(0);
  const std::optional<probe::SxidInfo> info = probe::sxid_info(code);
  // record_of (kernel_log.cpp) keeps the driver's word first: "Fatal, Link 48 LTSSM Fault Up".
  const Status status = doctor::sxid_status(info, util::starts_with(record.message, "Fatal, "));
  const std::string where = record.pci_bus_id.empty() ? "an NVSwitch" : "NVSwitch " + record.pci_bus_id;
  emit.emit("watch.sxid", nullptr, status,
            where + ": SXid " + std::to_string(code) +
                (info ? " (" + info->name + ")" : std::string(" (not in gpuenv's SXid table)")),
            info && info->action != "-"
                ? "SXid " + std::to_string(code) + ": " + info->action + "; then `gpuenv doctor`"
                : "look up SXid " + std::to_string(code) +
                      " in the Fabric Manager user guide; `gpuenv doctor` reports it too",
            status == Status::fail ? "drain_and_inspect" : "none", info ? info->source : std::string());
}

void check_kernel_records(const std::vector<KernelRecord>& records, const NodeSample& now, Emitter& emit) {
  for (const KernelRecord& record : records) {
    const GpuSample* gpu = nullptr;
    const std::optional<std::string> bus = probe::canonical_pci_bus_id(record.pci_bus_id);
    for (const GpuSample& candidate : now.gpus) {
      if (bus && probe::canonical_pci_bus_id(candidate.pci_bus_id) == bus) gpu = &candidate;
    }
    const std::string label =
        gpu != nullptr ? gpu_label(*gpu) : (record.pci_bus_id.empty() ? "a GPU" : "PCI " + record.pci_bus_id);
    // The message names the GPU and the Xid, never the log's text (issue 30 item 1: a record's tail is the driver's
    // and the process names in it are a user's); `gpuenv doctor` and the kernel log itself give the details.
    if (record.kind == "fallen_off_bus") {
      emit.emit("watch.xid", gpu, Status::fail, label + " fell off the bus",
                "drain the node and reboot it; if it repeats, check power and seating or replace the GPU", "reboot");
      continue;
    }
    if (record.kind == "sxid") {
      check_sxid_record(record, emit);
      continue;
    }
    const int code = record.code.value_or(0);
    const std::optional<probe::XidInfo> info = probe::xid_info(code);
    // The verdict and action are the Xid's node_action in data/xid.toml (NVIDIA's resolution buckets), as doctor's:
    // none passes (Xid 63, 92: the driver handled it), restart_job warns (the job's fault), any other fails. An Xid
    // the table does not know fails: a missed fault costs a job.
    const std::string action = info ? info->node_action : std::string("drain_and_inspect");
    const Status status = action == "none" ? Status::pass : (action == "restart_job" ? Status::warn : Status::fail);
    emit.emit("watch.xid", gpu, status,
              label + ": Xid " + std::to_string(code) +
                  (info ? " (" + info->meaning + ")" : std::string(" (not in gpuenv's Xid table)")),
              info && info->action != "-" && info->action != "none" ? info->action + "; then `gpuenv doctor`"
                                                                    : "run `gpuenv doctor`",
              action, info ? info->source : std::string());
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------------ history

void History::add(NodeSample sample, std::int64_t keep_ms) {
  const std::int64_t oldest = sample.time_ms - keep_ms;
  m_samples.push_back(std::move(sample));
  while (!m_samples.empty() && m_samples.front().time_ms < oldest) m_samples.pop_front();
}

const GpuSample* find_gpu(const NodeSample& sample, const GpuSample& gpu) {
  for (const GpuSample& candidate : sample.gpus) {
    if (!gpu.uuid.empty() ? candidate.uuid == gpu.uuid : (candidate.uuid.empty() && candidate.index == gpu.index))
      return &candidate;
  }
  return nullptr;
}

std::int64_t idle_ms(const RuleState& state, const GpuSample& gpu, std::int64_t now_ms) {
  const auto it = state.idle_since_ms.find(gpu_key(gpu));
  return it == state.idle_since_ms.end() ? 0 : std::max<std::int64_t>(0, now_ms - it->second);
}

std::int64_t RuleSettings::longest_window_ms() const { return std::max(throttle_window_ms, k_hour_ms); }

std::vector<Event> derive_events(const History& history, const std::vector<KernelRecord>& records,
                                 const RuleSettings& settings, RuleState& state) {
  std::vector<Event> out;
  const NodeSample* now = history.latest();
  if (now == nullptr) return out;
  Emitter emit(*now, settings, state, out);
  check_nvml(history, emit);
  check_gpu_count(history, state, emit);
  track_idle(*now, settings, state);
  for (const GpuSample& gpu : now->gpus) check_gpu(history, gpu, settings, state, emit);
  check_kernel_records(records, *now, emit);
  emit.clear_the_rest(now->gpus);
  return out;
}

}  // namespace gpuenv::watch
