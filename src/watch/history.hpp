#pragma once
// What doctor learns from watch's history when the database is there: the growth of each GPU's error counters over
// the last hours, as a rate, where doctor alone sees only counts since the driver loaded (docs/watch.md "doctor and
// the history"). history_error_rates is pure: samples in, a finding out; read_history_error_rates reads them from the
// database first.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/finding.hpp"
#include "system/system.hpp"
#include "watch/sample.hpp"

namespace gpuenv::watch {

/// The `history.error_rates` finding for `samples` (oldest first) ending at `now_ms`: fail when uncorrectable ECC
/// errors or NVLink replay/recovery errors grew (DCGM's health watches fail on any), warn when rows were remapped or
/// NVLink CRC errors or PCIe replays grew, pass when nothing grew; skip when fewer than two samples cover the window.
report::Finding history_error_rates(const std::vector<NodeSample>& samples, std::int64_t now_ms);

/// The window doctor judges the history over.
inline constexpr std::int64_t k_history_window_ms = 24 * 3600 * 1000;

/// history_error_rates over the last k_history_window_ms of the database `db`, opened read-only beside a running
/// watch (WAL readers never block the writer); a skip finding when it cannot be read; nullopt when there is no
/// database (`db` empty, "none" or absent).
std::optional<report::Finding> read_history_error_rates(system::System& system, const std::string& db,
                                                        std::int64_t now_ms);

}  // namespace gpuenv::watch
