#pragma once
// What doctor learns from watch's history when the database is there: the growth of each GPU's error counters over
// the last hours, as a rate, where doctor alone sees only counts since the driver loaded (docs/watch.md "doctor and
// the history"). Pure: samples in, findings out.

#include <cstdint>
#include <vector>

#include "report/finding.hpp"
#include "watch/sample.hpp"

namespace gpuenv::watch {

/// The `history.error_rates` finding for `samples` (oldest first) ending at `now_ms`: fail when uncorrectable ECC
/// errors or NVLink replay/recovery errors grew (DCGM's health watches fail on any), warn when rows were remapped or
/// NVLink CRC errors or PCIe replays grew, pass when nothing grew; skip when fewer than two samples cover the window.
report::Finding history_error_rates(const std::vector<NodeSample>& samples, std::int64_t now_ms);

}  // namespace gpuenv::watch
