#pragma once
// Renderers of `gpuenv watch` and `gpuenv events`: the Prometheus exposition of an interval (watch_prometheus.cpp)
// and the event list as text or JSON (events_command.cpp).

#include <string>
#include <vector>

#include "watch/monitor.hpp"
#include "watch/store.hpp"

namespace gpuenv::cli {

/// An interval's snapshot as Prometheus text (format 0.0.4): doctor's names for what doctor also reports, per-GPU
/// series labelled `gpu` and `UUID`, and watch's own families (docs/watch.md "Exposition").
std::string watch_prometheus(const watch::Snapshot& snapshot, const std::string& version);

/// The events as a table for a terminal, oldest first.
std::string events_text(const std::vector<watch::StoredEvent>& events);
/// The events as a JSON array (docs/watch.md "gpuenv events").
std::string events_json(const std::vector<watch::StoredEvent>& events);

}  // namespace gpuenv::cli
