// The clock smoke's steps time what they report with (RunClock, smoke/internal/step.hpp): System::now while the run
// is attached, the steady clock once run_smoke has detached it (an abandoned step may outlive the System).

#include <catch2/catch.hpp>
#include <chrono>

#include "smoke/internal/step.hpp"
#include "support/fake_system.hpp"

TEST_CASE("smoke: steps read time through System until the run detaches the clock", "[smoke]") {
  using std::chrono::steady_clock;
  gpuenv::testing::FakeSystem system;
  const steady_clock::time_point start{std::chrono::hours(1)};
  system.clock = start;
  gpuenv::smoke::RunClock clock(&system);
  CHECK(clock.now() == start);
  system.clock += std::chrono::milliseconds(2500);
  CHECK(gpuenv::smoke::seconds_between(start, clock.now()) == Approx(2.5));

  clock.detach();
  system.clock = start;  // no longer read
  const steady_clock::time_point before = steady_clock::now();
  const steady_clock::time_point read = clock.now();
  CHECK(read >= before);
  CHECK(read <= steady_clock::now());
  CHECK(gpuenv::smoke::RunClock().now() >= before);  // made without a System: the steady clock
}
