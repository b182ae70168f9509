// Issue 30 item 6: a file root trusts because a flag named it must be root's. `install --resume` skips the steps
// the state file lists as completed; a state file in a directory a job user can write (`--state-dir` pointed at
// it) let that user mark the driver's step done. System::trust_problem decides (tests/system/file_safety_test.cpp
// checks it on the real filesystem); here the state is refused before it is believed.

#include <catch2/catch.hpp>

#include "install/apply.hpp"
#include "install/checkpoint.hpp"
#include "support/fake_system.hpp"

namespace {

constexpr const char* k_home_state = "/home/alice/state/install-state.json";
constexpr const char* k_forged =
    R"({"profile": "t", "target": "ubuntu:22.04/x86_64", "completed": ["install.driver"], "updated": "x"})";

}  // namespace

TEST_CASE("install state: a state file someone else could change is refused, not believed", "[install][security]") {
  gpuenv::testing::FakeSystem fake;
  fake.files[k_home_state] = k_forged;
  REQUIRE(gpuenv::install::load_state(fake, k_home_state));  // trusted: read as before
  fake.untrusted[k_home_state] = "/home/alice/state belongs to uid 1000";
  const auto refused = gpuenv::install::load_state(fake, k_home_state);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("/home/alice/state belongs to uid 1000") != std::string::npos);
  CHECK(refused.error().message.find("not trusted") != std::string::npos);
}

TEST_CASE("install --resume: a forged state file in a user's directory stops the run instead of skipping the driver",
          "[install][security]") {
  gpuenv::install::InstallPlan plan;
  plan.profile = "t";
  plan.target.distro = "ubuntu";
  plan.target.version = "22.04";
  plan.target.arch = "x86_64";
  gpuenv::install::Step step;
  step.id = "install.driver";
  step.why = "the driver";
  step.commands = {{"apt-get", "install", "-y", "nvidia-driver-580"}};
  plan.steps.push_back(step);
  gpuenv::testing::FakeSystem fake;
  fake.files[k_home_state] = k_forged;
  fake.files["/var/log/gpuenv/.keep"] = "";
  fake.untrusted[k_home_state] = "/home/alice/state belongs to uid 1000";
  gpuenv::install::ApplyOptions options;
  options.log_path = "/var/log/gpuenv/install.log";
  options.state_dir = "/home/alice/state";
  options.resume = true;
  options.clock = [] { return std::string("2026-01-01T00:00:00Z"); };
  const auto report = gpuenv::install::apply_plan(fake, plan, options);
  // Before: the run "converged", the driver step reported "completed in an earlier run" and never ran.
  REQUIRE_FALSE(report);
  CHECK(report.error().message.find("not trusted") != std::string::npos);
}
