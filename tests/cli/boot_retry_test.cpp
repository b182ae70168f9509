// doctor --boot-retry's loop (cli/boot_retry.hpp) on FakeSystem's clock: tries while the machine is still booting,
// stops at the first success, and never retries on a machine that has been up for longer (the timer's runs).

#include "cli/boot_retry.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "support/fake_system.hpp"

namespace {

using namespace std::chrono_literals;
using gpuenv::cli::retry_during_boot;
using gpuenv::testing::FakeSystem;

/// Records the tries announced before a wait.
struct Announced {
  std::vector<int> tries;
  std::function<void(int)> callback() {
    return [this](int n) { tries.push_back(n); };
  }
};

/// A try that takes `run` of the fake clock and succeeds from try `ready_at` on (0: never).
auto tries_until(FakeSystem& system, int ready_at, std::chrono::seconds run) {
  return [&system, ready_at, run](int n) {
    system.clock += run;
    return ready_at > 0 && n >= ready_at;
  };
}

}  // namespace

TEST_CASE("boot retry: tries again every 10 s while the machine boots, stops at the first ready try",
          "[cli][boot_retry]") {
  FakeSystem system;
  system.files["/proc/uptime"] = "35.20 60.10\n";  // 35 s after boot: fabric manager may still be starting
  Announced announced;
  CHECK(retry_during_boot(system, 300s, tries_until(system, 3, 5s), announced.callback()) == 3);
  CHECK(system.sleeps == std::vector<std::chrono::milliseconds>{10s, 10s});
  CHECK(announced.tries == std::vector<int>{1, 2});
}

TEST_CASE("boot retry: gives up when the next try would start past the uptime limit", "[cli][boot_retry]") {
  FakeSystem system;
  system.files["/proc/uptime"] = "35.20 60.10\n";
  // Tries start at uptime 35, 50, 65, 80; each runs 5 s. A fifth would start at 95 >= 90.
  Announced announced;
  CHECK(retry_during_boot(system, 90s, tries_until(system, 0, 5s), announced.callback()) == 4);
  CHECK(system.sleeps.size() == 3);
  CHECK(announced.tries == std::vector<int>{1, 2, 3});  // the last failed try is not followed by a wait
}

TEST_CASE("boot retry: one try on a machine up for longer, on a ready node, or without /proc/uptime",
          "[cli][boot_retry]") {
  FakeSystem up_long;
  up_long.files["/proc/uptime"] = "86400.00 100000.00\n";  // the timer's run a day later
  CHECK(retry_during_boot(up_long, 300s, tries_until(up_long, 0, 5s), Announced().callback()) == 1);
  CHECK(up_long.sleeps.empty());

  FakeSystem ready;
  ready.files["/proc/uptime"] = "20.00 30.00\n";
  CHECK(retry_during_boot(ready, 300s, tries_until(ready, 1, 5s), Announced().callback()) == 1);
  CHECK(ready.sleeps.empty());

  FakeSystem no_uptime;  // unreadable: no way to tell a boot from a later run
  CHECK(retry_during_boot(no_uptime, 300s, tries_until(no_uptime, 0, 5s), Announced().callback()) == 1);
  CHECK(no_uptime.sleeps.empty());
}
