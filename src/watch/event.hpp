#pragma once
// An event derived from the history: a finding with a stable id (docs/rules.md, "watch.*"), the GPU it is about and
// when it happened. Statuses as doctor's: fail and warn name a problem, pass says a condition cleared.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/fabric_facts.hpp"
#include "report/finding.hpp"

namespace gpuenv::watch {

struct Event {
  std::int64_t time_ms = 0;  ///< Unix milliseconds
  report::Finding finding;
  std::string gpu_uuid;  ///< empty for the node
  std::optional<unsigned> gpu_index;
  /// What to do about it, from least to most disruptive: none, restart_job, reset_gpu, reboot, drain_and_inspect,
  /// replace_hardware (the vocabulary of doctor's actions, docs/doctor-json.md).
  std::string action = "none";
};

/// A condition that holds over several intervals (a hot GPU, a rising counter, an idle GPU): it raises one event
/// when it starts (and again only when it gets worse) and one pass event when it clears, not one per interval.
struct Condition {
  std::int64_t since_ms = 0;      ///< when it started
  std::int64_t last_seen_ms = 0;  ///< the last interval it held (a rising counter: its last growth)
  report::Status status = report::Status::warn;
};

/// What count_nvlink_errors compares the next reading of one GPU's NVLinks with: the last value read of each link's
/// counters (a counter not read since keeps its older value) and the counts watch stored with it.
struct NvLinkBaseline {
  std::vector<probe::NvLinkCounters> links;  ///< NVLink5's counters (probe::NvLinkCounters::nvlink5) included
  std::optional<std::uint64_t> replay, recovery, crc;
  std::optional<std::uint64_t> nvlink5_errors, nvlink5_warnings;
  std::string boot;  ///< the boot id `links` were read in ("" unknown): a reboot resets every counter (review L2)
};

/// The conditions open now, keyed "<rule id>|<GPU UUID>" ("|" alone for the node), the highest GPU count of this
/// boot and when each idle GPU went idle: what the rules carry from one interval to the next (persisted in the store
/// with every interval, so a restart neither raises a condition again nor forgets an idle hour).
struct RuleState {
  std::map<std::string, Condition> open;
  /// The most GPUs NVML listed during boot `most_gpus_boot`: a new boot (an instance-type change, an image baked
  /// with the database) starts the count anew, so a smaller node is not a lost GPU forever.
  std::optional<unsigned> most_gpus;
  std::string most_gpus_boot;
  /// By GPU key (gpu_key): Unix ms of the first sample of the GPU's current run below the idle line. Kept here,
  /// not derived from the samples in memory, so idle time is not bounded by the window the monitor keeps.
  std::map<std::string, std::int64_t> idle_since_ms;
  /// By GPU key: each GPU's NVLink counters as last read.
  std::map<std::string, NvLinkBaseline> nvlink;

  /// The state as a small JSON text for the store, and back (an unreadable text gives an empty state).
  std::string to_json() const;
  static RuleState from_json(const std::string& text);
};

}  // namespace gpuenv::watch
