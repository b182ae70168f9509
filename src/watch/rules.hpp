#pragma once
// The event rules: pure functions from the recent history (the samples of the last window, newest last) and the
// kernel-log records of the interval to events (docs/watch.md "Events"). Thresholds are data: watch's own windows in
// data/watch/watch_rules.toml, and the temperature and throttle-reason verdicts shared with doctor
// (data/doctor/thresholds.toml), so both judge a GPU alike.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/data_table.hpp"
#include "util/expected.hpp"
#include "watch/event.hpp"
#include "watch/sample.hpp"

namespace gpuenv::watch {

/// DCGM_LIMIT_MAX_PCIREPLAY_RATE: "8 replays per minute is the maximum recommended by RM"; DCGM's PCIe watch warns
/// only above it (NVIDIA/DCGM @ 72fa3fe common/DcgmGPUHardwareLimits.h, modules/health/DcgmHealthWatch.cpp
/// MonitorPcie). A healthy link replays now and then: fewer is no event.
inline constexpr double k_pcie_replays_per_minute = 8;

/// The numbers the rules use, each with its source for the events it raises.
struct RuleSettings {
  double idle_below_percent = 60;              ///< a GPU under this utilisation counts as idle
  std::int64_t idle_window_ms = 0;             ///< idle this long raises watch.idle
  std::int64_t throttle_window_ms = 0;         ///< throttling is judged over this window...
  double throttle_fraction = 0;                ///< ...and raises watch.throttle when active this share of it
  std::int64_t clear_after_ms = 0;             ///< a rising counter or a hot GPU clears after this long without it
  std::int64_t raw_retention_ms = 0;           ///< raw samples kept
  std::int64_t hourly_retention_ms = 0;        ///< hourly rollups and events kept
  double temperature_warn_c = 85;              ///< doctor's gpu.temperature_c
  unsigned throttle_fail_bits = 0;             ///< doctor's throttle reasons that fail
  unsigned throttle_warn_bits = 0;             ///< ... and that warn
  std::map<std::string, std::string> sources;  ///< by setting or threshold id

  /// The longest window a rule looks back over in the samples: how much history the monitor keeps in memory (idle
  /// time is kept in RuleState, not looked back for).
  std::int64_t longest_window_ms() const;
};

/// watch's table (watch_rules.toml, rows keyed by `id`) for the data overlay.
std::vector<util::DataTable> data_tables();
/// Parses watch_rules.toml text with `overlay` merged; an internal Error naming the row when it is bad.
util::Expected<RuleSettings> parse_rule_settings(std::string_view toml_text, const util::Overlay& overlay = {});
/// The compiled-in settings with the installed overlay and doctor's thresholds.
util::Expected<RuleSettings> builtin_rule_settings();
/// The compiled-in table with `overlay` merged, parsed anew (for `gpuenv data check`).
util::Expected<util::Ok> check_data(const util::Overlay& overlay);

/// The samples of the last window, oldest first.
class History {
 public:
  /// Appends `sample` (newer than every sample held) and drops those older than `keep_ms` before it.
  void add(NodeSample sample, std::int64_t keep_ms);
  const std::deque<NodeSample>& samples() const { return m_samples; }
  const NodeSample* latest() const { return m_samples.empty() ? nullptr : &m_samples.back(); }
  /// The sample before the latest, or nullptr.
  const NodeSample* previous() const { return m_samples.size() < 2 ? nullptr : &m_samples[m_samples.size() - 2]; }

 private:
  std::deque<NodeSample> m_samples;
};

/// The GPU of `sample` that is `gpu` (by UUID, else by index when neither has one), or nullptr.
const GpuSample* find_gpu(const NodeSample& sample, const GpuSample& gpu);

/// How long GPU `gpu` has been idle at `now_ms`: the time since the first sample of its current run below the idle
/// line, as derive_events keeps it in `state` (0 when it is busy, or its utilisation is unknown).
std::int64_t idle_ms(const RuleState& state, const GpuSample& gpu, std::int64_t now_ms);

/// Replaces each GPU's NVLink sums in `sample` (NVML's, over the links read now) with counts compared like with
/// like: the count `state` kept for the GPU grown by each link's growth since its last reading, over the links and
/// counters read both times; the first reading of a GPU keeps NVML's sum. So a link that goes down, or one read that
/// fails, neither shrinks the count nor makes its return look like new errors. Call it before the sample joins the
/// history.
void count_nvlink_errors(NodeSample& sample, RuleState& state);

/// The events of the latest sample of `history` and of the interval's kernel-log `records`; `state` carries the
/// open conditions from one call to the next.
std::vector<Event> derive_events(const History& history, const std::vector<KernelRecord>& records,
                                 const RuleSettings& settings, RuleState& state);

}  // namespace gpuenv::watch
