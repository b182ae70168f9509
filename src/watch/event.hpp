#pragma once
// An event derived from the history: a finding with a stable id (docs/rules.md, "watch.*"), the GPU it is about and
// when it happened. Statuses as doctor's: fail and warn name a problem, pass says a condition cleared.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

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
  std::int64_t since_ms = 0;        ///< when it started
  std::int64_t last_seen_ms = 0;    ///< the last interval it held (a rising counter: its last growth)
  report::Status status = report::Status::warn;
};

/// The conditions open now, keyed "<rule id>|<GPU UUID>" ("|" alone for the node), plus the highest GPU count seen:
/// what the rules carry from one interval to the next (persisted in the store, so a restart does not raise them
/// again).
struct RuleState {
  std::map<std::string, Condition> open;
  std::optional<unsigned> most_gpus;  ///< the most GPUs NVML listed since watch began on this database

  /// The state as a small JSON text for the store, and back (an unreadable text gives an empty state).
  std::string to_json() const;
  static RuleState from_json(const std::string& text);
};

}  // namespace gpuenv::watch
