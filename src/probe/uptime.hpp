#pragma once
// The machine's uptime, read through System: the kernel-log window (--since) and doctor's boot retry use it.

#include <optional>

#include "system/system.hpp"

namespace gpuenv::probe {

/// Seconds since boot from /proc/uptime ("12345.67 54321.00": the first number), nullopt when unreadable.
std::optional<double> uptime_seconds(system::System& system);

}  // namespace gpuenv::probe
