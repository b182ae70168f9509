// GPUs in parallel under one budget (issue 23 items 11, 12, 14): each GPU on its own thread, their timed host copies
// taking turns on the host link, peer pairs in rounds of disjoint pairs; after a hang every other step gets at most a
// short extra time ("not tested: driver blocked by GPU N"); a GPU that fails before the concurrent start line does not
// hold the others there; a sticky error in a peer copy stops the GPU whose context faulted; where step threads really
// run is said. No test asserts a wall-clock time: each asserts what only the fixed behaviour produces.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <set>
#include <shared_mutex>

#include "smoke/fake_cuda_fixture.hpp"
#include "smoke/internal/step.hpp"
#include "smoke/smoke.hpp"

using namespace gpuenv::smoke;
using namespace gpuenv::smoke::testing;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::report::Verdict;

namespace {

bool has_finding(const std::vector<Finding>& findings, const std::string& prefix) {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& finding) { return finding.message.rfind(prefix, 0) == 0; });
}

}  // namespace

TEST_CASE("smoke: peer pairs run in rounds of disjoint pairs that cover every pair once", "[smoke]") {
  for (std::size_t count = 0; count <= 9; ++count) {
    CAPTURE(count);
    const auto rounds = disjoint_rounds(count);
    std::set<std::pair<std::size_t, std::size_t>> seen;
    for (const auto& round : rounds) {
      std::set<std::size_t> busy;
      for (const auto& [a, b] : round) {
        CHECK(a < b);
        CHECK(b < count);
        CHECK(busy.insert(a).second);  // no GPU twice in a round
        CHECK(busy.insert(b).second);
        CHECK(seen.insert({a, b}).second);  // no pair twice
      }
    }
    CHECK(seen.size() == count * (count > 0 ? count - 1 : 0) / 2);
    if (count >= 2) CHECK(rounds.size() == (count % 2 == 0 ? count - 1 : count));
  }
}

TEST_CASE("smoke: the pairs of a round copy at the same time, and a GPU is in one pair at a time", "[smoke][peer]") {
  // Four GPUs: three rounds of two disjoint pairs, each pair on its own thread. Every peer copy lasts 2 ms on the host
  // (peer_sleep_ms), so the two pairs of a round overlap; no copy may overlap another pair's that shares a GPU with it.
  SmokeOptions options = small_options();
  options.cublas = false;
  options.memtest_fraction = 0;
  options.repetitions = 1;
  const int parallel = fake_counter("fake_cuda_parallel_peer_copies");
  const int conflicts = fake_counter("fake_cuda_peer_gpu_conflicts");
  const SmokeReport report =
      run_fake("device_count = 4\nname = NVIDIA L4\npeer_sleep_ms = 2\nelapsed_ms = 0.01\n", options);
  CHECK(report.peers.size() == 12);
  CHECK(fake_counter("fake_cuda_parallel_peer_copies") > parallel);
  CHECK(fake_counter("fake_cuda_peer_gpu_conflicts") == conflicts);
}

TEST_CASE("smoke: GPUs run their steps at the same time, and their timed host copies take turns", "[smoke]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  options.repetitions = 3;
  const int peak_before = fake_counter("fake_cuda_peak_concurrent_gemms");
  // Each GEMM launch sleeps 30 ms: four GPUs in parallel have several in flight at once (one thread per GPU).
  // host_link_shared: a host copy queued while another GPU's are in flight would take that many times longer; with
  // event_sleep each sample is in flight 5 ms. Taking turns, every GPU measures the link alone.
  const SmokeReport report = run_fake(
      "device_count = 4\nname = NVIDIA L4\ngemm_sleep_ms = 30\nelapsed_ms = 5\nevent_sleep = 1\n"
      "host_link_shared = 1\n",
      options);
  CHECK(fake_counter("fake_cuda_peak_concurrent_gemms") >= 2);
  CHECK(fake_counter("fake_cuda_peak_concurrent_gemms") > peak_before);
  const double alone = 65536.0 * copies_per_sample / 5e-3 / 1e9;  // 8 copies of 64 KiB per 5 ms
  for (const DeviceResult& gpu : report.devices) {
    CAPTURE(gpu.index);
    for (const Metric& metric : gpu.metrics) {
      if (metric.id == "h2d_pinned" || metric.id == "d2h_pinned") CHECK(metric.summary.median == Approx(alone));
    }
  }
}

// Issue 23 item 13 (scripts/bench: 8 GPUs took 1.9 x one GPU): a matmul's operand upload held the socket's turn lock
// shared, so while one GPU took its turn (a second or more of timed copies) the other GPUs of the socket stalled at
// their next matmul. It now waits only for the timed sample in flight (HostLink::samples), never for the turn.
TEST_CASE("smoke: a matmul's bulk transfer waits for one timed sample, not for another GPU's whole turn", "[smoke]") {
  HostLink link;
  std::unique_lock<std::shared_timed_mutex> turn(link.mutex);  // another GPU's turn, between two samples
  auto during_turn = std::async(std::launch::async, [&link] { return bulk_transfer(link).owns_lock(); });
  REQUIRE(during_turn.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(during_turn.get());
  std::unique_lock<std::shared_timed_mutex> sample(link.samples);  // a timed sample in flight
  auto during_sample = std::async(std::launch::async, [&link] { return bulk_transfer(link).owns_lock(); });
  CHECK(during_sample.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  sample.unlock();
  REQUIRE(during_sample.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(during_sample.get());
}

TEST_CASE("smoke: copy buffers are written and verified by the GPU, not on one host core", "[smoke]") {
  // Issue 23 item 12: the source pattern is written by smoke_fill_words and every copy's destination is compared by
  // smoke_check_words on the GPU that holds it, so verification moves nothing through PCIe.
  SmokeOptions options = small_options();
  options.cublas = false;
  options.peer = false;
  const int fills = fake_counter("fake_cuda_fill_words_launches");
  const int checks = fake_counter("fake_cuda_check_words_launches");
  const SmokeReport report = run_fake("elapsed_ms = 0.0001\n", options);
  CHECK(fake_counter("fake_cuda_fill_words_launches") - fills == 1);  // the copies' source, written once
  // D2D, the stream copy, and the pinned and pageable round trips (D2H then H2D back), each checked once.
  CHECK(fake_counter("fake_cuda_check_words_launches") - checks == 4);
  for (const char* id : {"smoke.d2d", "smoke.memory_bandwidth", "smoke.h2d_pinned", "smoke.d2h_pinned",
                         "smoke.h2d_pageable", "smoke.d2h_pageable"}) {
    CAPTURE(id);
    REQUIRE(find(report.devices.at(0).findings, id) != nullptr);
    CHECK(find(report.devices.at(0).findings, id)->message.find("data verified") != std::string::npos);
  }
}

TEST_CASE("smoke: after a hang, the other GPUs' steps are cut short and said to be blocked by it",
          "[smoke][system-test]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  options.step_timeout = std::chrono::milliseconds(3000);
  options.blocked_timeout = std::chrono::milliseconds(500);
  // GPU 0's first kernel launch hangs for 4 s holding the driver lock (its step is abandoned at 3 s); GPU 1 starts
  // 1.5 s later (its context takes that long) and its first allocation waits on that lock. With the cut its deadline
  // is GPU 0's hang (3 s) + 0.5 s, before the lock is freed at 4 s: not tested, blocked by GPU 0. Without the cut its
  // own deadline (1.5 s + 3 s) outlasts the hang: the step finishes and nothing says GPU 0 blocked it.
  const SmokeReport report = run_fake(
      "device_count = 2\nlaunch_hang_seconds_gpu0 = 4\nhang_holds_driver_lock = 1\n"
      "retain_delay_ms_gpu1 = 1500\n",
      options);
  CHECK(report.abandoned_work);
  const auto& gpu0 = report.devices.at(0).findings;
  const auto& gpu1 = report.devices.at(1).findings;
  CHECK(has_finding(gpu0, "hang: the step did not finish within 3 s"));
  CHECK(has_finding(gpu1, "not tested: driver blocked by GPU 0 (it hung first; this step got 0.5 s more"));
  CHECK_FALSE(has_finding(gpu1, "hang:"));
}

TEST_CASE("smoke: a run that outlasts its budget reports the rest as not tested, not as hung", "[smoke]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  options.peer = false;
  options.run_timeout = std::chrono::milliseconds(600);
  // Every GEMM launch takes 150 ms and a matmul has several: the run's 0.6 s deadline passes inside the matmuls, well
  // before their own step deadline. Without the budget the run would go on to the end.
  const SmokeReport report = run_fake("device_count = 2\nelapsed_ms = 0.0001\ngemm_sleep_ms = 150\n", options);
  for (const DeviceResult& gpu : report.devices) {
    CAPTURE(gpu.index);
    CHECK(has_finding(gpu.findings, "not tested: the run's time budget (--budget) was spent"));
    CHECK_FALSE(has_finding(gpu.findings, "hang:"));
    CHECK_FALSE(gpu.hung);
    CHECK(find(gpu.findings, "smoke.memtest") == nullptr);  // after the matmuls: never started
    for (const Finding& finding : gpu.findings) {
      CAPTURE(finding.id, finding.message);
      CHECK(finding.status != Status::fail);
    }
  }
  for (const Finding& finding : report.findings) {
    CAPTURE(finding.id, finding.message);
    CHECK(finding.status != Status::fail);
  }
  // Not OK either: GPUs that were not all tested are not vouched for (DEGRADED until a run finishes).
  CHECK(report.verdict == Verdict::degraded);
}

TEST_CASE("smoke: a budget spent before a GPU's steps start leaves the run DEGRADED, not OK", "[smoke]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  options.peer = false;
  options.run_timeout = std::chrono::milliseconds(1);  // spent before (or during) the first step
  const SmokeReport report = run_fake("device_count = 2\nelapsed_ms = 0.0001\n", options);
  bool untested = false;
  for (const DeviceResult& gpu : report.devices) {
    for (const Finding& finding : gpu.findings) {
      if (finding.message.find("not tested: the run's time budget (--budget) was spent") != 0) continue;
      untested = true;
      CAPTURE(finding.id, finding.message);
      CHECK(finding.status == Status::warn);
    }
  }
  CHECK(untested);
  CHECK(report.verdict == Verdict::degraded);
}

TEST_CASE("smoke: a GPU that fails before the concurrent start line does not hold the others there", "[smoke]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  options.peer = false;
  options.step_timeout = std::chrono::seconds(4);  // the start line waits at most half of it
  // GPU 1's third pinned allocation (after its copy buffer and spin flag) is the concurrent step's: out of memory.
  const SmokeReport report = run_fake("device_count = 3\nelapsed_ms = 0.01\nalloc_host_fail_after_gpu1 = 2\n", options);
  const Finding* failed = nullptr;
  const Finding* together = nullptr;
  for (const Finding& finding : report.findings) {
    if (finding.id != "smoke.h2d_concurrent") continue;
    (finding.message.rfind("GPU 1: ", 0) == 0 ? failed : together) = &finding;
  }
  REQUIRE(failed != nullptr);
  CHECK(failed->message.find("out of GPU memory: cuMemAllocHost_v2") != std::string::npos);
  REQUIRE(together != nullptr);
  CHECK(together->message.find("on 2 GPUs at once") != std::string::npos);
  CHECK(together->message.find("start line timed out") == std::string::npos);
}

TEST_CASE("smoke: a sticky error in a peer copy stops the GPU whose context faulted", "[smoke]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  // GPU 1's third smoke_fill_words (its copy pattern, its concurrent H2D, then a peer source) faults (700, sticky).
  // Rounds for three GPUs: {1, 2}, then {0, 2}, then {0, 1}. The fault is in 1 -> 2, on GPU 2's step thread: GPU 1
  // stops, so {0, 2} still runs and {0, 1} does not (stopping GPU 2, the step's own GPU, would do the reverse).
  const SmokeReport report = run_fake(
      "device_count = 3\nelapsed_ms = 0.01\nfault_kernel_gpu1 = smoke_fill_words\nfault_kernel_after_gpu1 = 2\n",
      options);
  CHECK(has_finding(report.peer_findings, "GPU 1 -> GPU 2: the GPU faulted: cuLaunchKernel(smoke_fill_words)"));
  CHECK(has_finding(report.peer_findings, "GPU 0 -> GPU 2: "));
  CHECK(has_finding(report.peer_findings, "GPU 2 -> GPU 0: "));
  CHECK_FALSE(has_finding(report.peer_findings, "GPU 0 -> GPU 1: "));
}

TEST_CASE("smoke: where the step threads really run is said, also when the NUMA placement is refused", "[smoke]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  {
    const SysfsTree sysfs("0000:1b:00.0", "16.0 GT/s PCIe", 16, "0");
    options.sysfs_root = sysfs.root();
    const SmokeReport placed = run_fake("elapsed_ms = 0.01\n", options);
    const Finding* cpus = find(placed.devices.at(0).findings, "smoke.cpu_placement");
    REQUIRE(cpus != nullptr);
    CHECK(cpus->status == Status::pass);
    CHECK(cpus->message == "step threads run on CPUs 0, the GPU's NUMA node (0)");
    CHECK(placed.devices.at(0).info.step_cpulist == "0");
  }
  {
    // CPU 1000 does not exist here: pthread_setaffinity_np refuses (EINVAL), the threads stay where they were.
    const SysfsTree sysfs("0000:1b:00.0", "16.0 GT/s PCIe", 16, "1000");
    options.sysfs_root = sysfs.root();
    const SmokeReport refused = run_fake("elapsed_ms = 0.01\n", options);
    const Finding* cpus = find(refused.devices.at(0).findings, "smoke.cpu_placement");
    REQUIRE(cpus != nullptr);
    CHECK(cpus->status == Status::skip);
    CHECK(cpus->message.find("step threads could not be placed on the GPU's NUMA node (CPUs 1000): "
                             "pthread_setaffinity_np returned Invalid argument; they run on CPUs ") == 0);
  }
}
