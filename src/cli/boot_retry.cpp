#include "cli/boot_retry.hpp"

#include "probe/uptime.hpp"

namespace gpuenv::cli {

int retry_during_boot(system::System& system, std::chrono::seconds until_uptime,
                      const std::function<bool(int)>& attempt, const std::function<void(int)>& before_wait) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto uptime = probe::uptime_seconds(system);
  const auto start = system.now();
  const milliseconds up_at_start{uptime ? static_cast<long long>(*uptime * 1000) : 0};
  for (int tries = 1;; ++tries) {
    if (attempt(tries)) return tries;
    const auto up_at_next = up_at_start + duration_cast<milliseconds>(system.now() - start) + k_boot_retry_interval;
    if (!uptime || up_at_next >= until_uptime) return tries;
    before_wait(tries);
    system.sleep_for(k_boot_retry_interval);
  }
}

}  // namespace gpuenv::cli
