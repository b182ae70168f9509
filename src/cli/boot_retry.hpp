#pragma once
// doctor --boot-retry: at boot the node may be NOT READY only because fabric manager, the persistence daemon or the
// driver is still starting; gpuenv-doctor.service runs doctor once (Type=oneshot), so one such run would fail
// gpuenv-ready.target for the whole boot. The retry lives in the one ExecStart (docs/fleet.md "systemd").

#include <chrono>
#include <functional>

#include "system/system.hpp"

namespace gpuenv::cli {

/// The wait between two tries.
inline constexpr std::chrono::seconds k_boot_retry_interval{10};

/// Calls `attempt(n)` (n from 1) until it returns true, waiting k_boot_retry_interval (System::sleep_for) between
/// tries while the machine will have been up for less than `until_uptime` when the next try starts. The uptime is
/// /proc/uptime at the first try plus System::now()'s progress; no retry when /proc/uptime cannot be read or the
/// machine is up for longer already (the periodic runs of the timer). `before_wait(n)` is called when try n failed
/// and another follows. Returns the number of tries.
int retry_during_boot(system::System& system, std::chrono::seconds until_uptime,
                      const std::function<bool(int)>& attempt, const std::function<void(int)>& before_wait);

}  // namespace gpuenv::cli
