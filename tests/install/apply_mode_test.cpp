// Issue 30 item 4: the mode a plan gives a file is the mode the file gets (it was never applied: under umask 000
// files under /etc/apt came out 0666). apply_plan passes it to System::write_file_atomic, which sets it with fchmod
// (tests/system/file_safety_test.cpp checks that on the real filesystem).

#include <catch2/catch.hpp>

#include "install/apply.hpp"
#include "support/fake_system.hpp"

TEST_CASE("apply: each file is written with its plan's mode", "[install][security]") {
  gpuenv::install::InstallPlan plan;
  plan.profile = "t";
  gpuenv::install::Step step;
  step.id = "install.repo.test";
  step.why = "a step that writes two files";
  step.files = {{"/etc/apt/sources.list.d/cuda.list", "deb https://x/ /\n", "0644"},
                {"/etc/apt/auth.conf.d/mirror.conf", "machine x login y password z\n", "0600"},
                {"/etc/x/odd", "x\n", "not octal"}};
  plan.steps.push_back(step);
  gpuenv::testing::FakeSystem fake;
  fake.files["/etc/apt/sources.list.d/.keep"] = "";
  fake.files["/etc/apt/auth.conf.d/.keep"] = "";
  fake.files["/etc/x/.keep"] = "";
  fake.files["/log/.keep"] = "";
  fake.files["/state/.keep"] = "";
  gpuenv::install::ApplyOptions options;
  options.log_path = "/log/install.log";
  options.state_dir = "/state";
  options.clock = [] { return std::string("2026-01-01T00:00:00Z"); };
  const auto report = gpuenv::install::apply_plan(fake, plan, options);
  REQUIRE(report);
  CHECK(fake.written_modes.at("/etc/apt/sources.list.d/cuda.list") == 0644);
  CHECK(fake.written_modes.at("/etc/apt/auth.conf.d/mirror.conf") == 0600);
  CHECK(fake.written_modes.at("/etc/x/odd") == 0644);  // a mode that is not octal falls back to 0644
}
