// Xid events during a smoke run: the pure before/after judgement, and the runner reading the kernel log twice
// through a FakeSystem whose dmesg grows an Xid line while the fake libcuda runs.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "probe/xid.hpp"
#include "smoke/internal/xid_watch.hpp"
#include "smoke/smoke.hpp"
#include "support/fake_system.hpp"

using namespace gpuenv::smoke;
using gpuenv::report::Finding;
using gpuenv::report::Status;

namespace {

// Kernel-log lines in the format of tests/fixtures/probe/errors/*.log (dmesg with timestamps).
const std::string old_xid = "[ 1843.308145] NVRM: Xid (PCI:0000:1b:00): 13, pid=2211, name=python3, Graphics Exception";
const std::string new_xid_79 =
    "[ 2001.000001] NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.";
const std::string new_xid_43 = "[ 2002.000001] NVRM: Xid (PCI:0000:1b:01): 43, pid=4242, name=gpuenv, Ch 00000010";
const std::string other_gpu =
    "[ 2003.000001] NVRM: Xid (PCI:0000:9b:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.";

KernelLogSnapshot snapshot_with(std::initializer_list<std::string> raw) {
  KernelLogSnapshot snapshot;
  snapshot.readable = true;
  snapshot.source = "dmesg";
  snapshot.seen = raw;
  return snapshot;
}

const std::vector<TestedGpu> tested = {{0, "00000000:1B:00.0"}, {1, "00000000:1B:01.0"}};

/// The events of dmesg text, as kernel_events_since reads them.
std::vector<gpuenv::probe::KernelEvent> events(const std::string& text) {
  return gpuenv::probe::parse_xid_events(text).events;
}

}  // namespace

TEST_CASE("smoke: only Xid events new since the run began, on a tested GPU, are reported", "[smoke]") {
  const auto before = snapshot_with({old_xid});
  const auto none = judge_new_kernel_events(before, events(old_xid + "\n"), tested);
  REQUIRE(none.size() == 1);
  CHECK(none[0].status == Status::pass);
  CHECK(none[0].message == "no Xid event on a tested GPU during the run (dmesg)");

  const auto found = judge_new_kernel_events(
      before, events(old_xid + "\n" + new_xid_79 + "\n" + new_xid_43 + "\n" + other_gpu + "\n"), tested);
  REQUIRE(found.size() == 2);  // the old Xid 13 and the untested GPU's Xid are left out
  CHECK(found[0].id == "smoke.xid");
  CHECK(found[0].status == Status::fail);
  CHECK(found[0].message.find("GPU 0 (00000000:1B:00.0): Xid 79 during the smoke run (GPU has fallen off the bus") ==
        0);
  CHECK(found[0].remedy.find("reboot node") == 0);
  CHECK(found[1].status == Status::warn);  // Xid 43: a warning in data/xid.toml
  CHECK(found[1].message.find("GPU 1 (00000000:1B:01.0): Xid 43 during the smoke run") == 0);
  CHECK(found[1].remedy == "run `gpuenv doctor`");
}

TEST_CASE("smoke: findings name the GPU and the Xid number, never the log's text", "[smoke][security]") {
  // The tail of an Xid line and the process name are a user's text (a job names its process): a finding that
  // repeated them would carry it into Slurm reasons and --oneline (docs/security.md).
  const std::string hostile =
      "[ 2004.000001] NVRM: Xid (PCI:0000:1b:00): 999, pid=4242, name=$(reboot), `touch /tmp/x`; DRAIN ME";
  const auto found = judge_new_kernel_events(snapshot_with({}), events(hostile + "\n" + new_xid_79 + "\n"), {});
  REQUIRE(found.size() == 2);
  CHECK(found[0].message == "the GPU at 0000:1b:00: Xid 999 during the smoke run (not in gpuenv's Xid table)");
  CHECK(found[1].message.rfind("the GPU at 0000:1b:00: Xid 79 during the smoke run (GPU has fallen off the bus", 0) ==
        0);
  for (const auto& finding : found) {
    CHECK(finding.message.find("reboot") == std::string::npos);
    CHECK(finding.message.find("DRAIN") == std::string::npos);
    CHECK(finding.message.find("<unknown>") == std::string::npos);
  }
}

TEST_CASE("smoke: the runner reads the kernel log before and after, and says when it cannot", "[smoke]") {
  gpuenv::testing::FakeSystem system;
  system.real_libraries["fake-libcuda"] = GPUENV_FAKE_CUDA_LIBRARY;
  const auto config = std::filesystem::temp_directory_path() / ("gpuenv-xid-" + std::to_string(::getpid()) + ".conf");
  std::ofstream(config) << "elapsed_ms = 0.001\n";
  ::setenv("GPUENV_FAKE_CUDA", config.c_str(), 1);
  SmokeOptions options;
  options.library = "fake-libcuda";
  options.cublas = false;
  options.copy_bytes = 64 * 1024;
  options.sgemm_size = options.tensor_size = 64;
  options.repetitions = 1;
  // One launch a sustained window: the fake's 0.001 ms events would ask for the 1024-launch cap of CPU-emulated GEMMs
  // per window (minutes, more under ASan) for timing this test does not look at.
  options.gemm_window = std::chrono::milliseconds(0);
  options.gemm_windows = 1;

  gpuenv::system::CommandResult before, after;
  before.exit_code = after.exit_code = 0;
  before.out = old_xid + "\n";
  after.out = old_xid + "\n" + new_xid_79 + "\n";
  system.command_queue["dmesg"] = {before, after};
  auto report = run_smoke(system, options);
  REQUIRE(report);
  const auto xid = std::find_if(report->findings.begin(), report->findings.end(),
                                [](const Finding& finding) { return finding.id == "smoke.xid"; });
  REQUIRE(xid != report->findings.end());
  CHECK(system.commands_run == std::vector<std::string>{"dmesg", "dmesg"});
  CHECK(xid->status == Status::fail);
  CHECK(xid->message.find("GPU 0 (00000000:1B:00.0): Xid 79 during the smoke run") == 0);
  CHECK(report->verdict == gpuenv::report::Verdict::not_ok);

  gpuenv::testing::FakeSystem no_log;  // no dmesg, no log files
  no_log.real_libraries["fake-libcuda"] = GPUENV_FAKE_CUDA_LIBRARY;
  auto unread = run_smoke(no_log, options);
  REQUIRE(unread);
  const auto skipped = std::find_if(unread->findings.begin(), unread->findings.end(),
                                    [](const Finding& finding) { return finding.id == "smoke.xid"; });
  REQUIRE(skipped != unread->findings.end());
  CHECK(skipped->status == Status::skip);
  CHECK(skipped->message.find("Xid events during the run not checked: kernel log unreadable") == 0);
  ::unsetenv("GPUENV_FAKE_CUDA");
  std::filesystem::remove(config);
}
