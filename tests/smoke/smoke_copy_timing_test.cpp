// Copy timing behind the spin kernel (issue 11 review): a spin kernel that timed out is recorded and its sample
// discarded, the kernel gets the device address of mapped pinned memory; bidirectional peer copies.

#include <algorithm>
#include <catch2/catch.hpp>

#include "smoke/fake_cuda_fixture.hpp"
#include "smoke/internal/step.hpp"
#include "smoke/smoke.hpp"

using namespace gpuenv::smoke;
using namespace gpuenv::smoke::testing;
using gpuenv::report::Finding;
using gpuenv::report::Status;

namespace {

SmokeOptions copy_options() {
  SmokeOptions options = small_options();
  options.copy_bytes = mib;
  options.repetitions = 3;
  options.cublas = false;
  return options;
}

const Metric& metric_of(const DeviceResult& device, const std::string& id) {
  const auto it =
      std::find_if(device.metrics.begin(), device.metrics.end(), [&](const Metric& m) { return m.id == id; });
  REQUIRE(it != device.metrics.end());
  return *it;
}

}  // namespace

TEST_CASE("smoke: a copy sample whose spin kernel timed out is discarded, and all timed out is not judged", "[smoke]") {
  // 1 MiB x copies_per_sample per 1 ms: 8.4 GB/s read + write for d2d, below the operator's floor of 100 GB/s.
  SmokeOptions options = copy_options();
  options.overrides["d2d"].minimum = 100;
  const SmokeReport one = run_fake("elapsed_ms = 1\nspin_timeouts = 1\n", options);
  const DeviceResult& gpu = one.devices.at(0);
  // The first spin launch is the first timed sample of the D2D copy (the device copies run first): left out, the other
  // two kept.
  CHECK(metric_of(gpu, "d2d").summary.count == 2);
  CHECK(metric_of(gpu, "d2d").summary.discarded == 1);
  CHECK_FALSE(metric_of(gpu, "d2d").summary.invalid);
  const Finding* first = find(gpu.findings, "smoke.d2d");
  REQUIRE(first != nullptr);
  CHECK(first->message.find("median of 2") != std::string::npos);
  CHECK(first->message.find("1 of 3 samples discarded: the spin kernel timed out") != std::string::npos);
  CHECK(first->status == Status::fail);  // a valid slow figure still fails the operator's minimum
  CHECK(metric_of(gpu, "h2d_pinned").summary.discarded == 0);

  // Every spin kernel timed out: no valid sample, so the slow figure is a lower bound: not judged (a skip, since a host
  // that stalled for seconds is no fault of the GPU).
  const SmokeReport all = run_fake("elapsed_ms = 1\nspin_timeouts = 1000\n", options);
  const Metric& d2d_metric = metric_of(all.devices.at(0), "d2d");
  CHECK(d2d_metric.summary.invalid);
  CHECK(d2d_metric.summary.count == 3);
  const Finding* d2d = find(all.devices.at(0).findings, "smoke.d2d");
  REQUIRE(d2d != nullptr);
  CHECK(d2d->status == Status::skip);
  CHECK(d2d->message.find("data verified; timing invalid: in all 3 samples the spin kernel timed out") !=
        std::string::npos);
  CHECK(d2d->message.find("not judged") != std::string::npos);
}

TEST_CASE("smoke: the spin kernel waits on mapped pinned memory through its device address", "[smoke]") {
  // The fake hands out device aliases that differ from the host address (as cuMemHostGetDevicePointer may); a launch
  // with the host pointer would not count as mapped.
  const int spins_before = fake_counter("fake_cuda_spin_launches");
  const int mapped_before = fake_counter("fake_cuda_spin_mapped_launches");
  const int live_before = fake_counter("fake_cuda_live_allocations");
  const SmokeReport mapped = run_fake("elapsed_ms = 1\n", copy_options());
  const int spins = fake_counter("fake_cuda_spin_launches") - spins_before;
  CHECK(spins == 12);  // d2d, the stream copy, d2h and h2d pinned copies, three samples each
  CHECK(fake_counter("fake_cuda_spin_mapped_launches") - mapped_before == spins);
  CHECK(fake_counter("fake_cuda_live_allocations") == live_before);  // the flag is freed

  // No device address: no spin kernel, copies are timed one per event pair (1 MiB per 1 ms), nothing leaks.
  const SmokeReport unmapped = run_fake("elapsed_ms = 1\nhost_get_device_pointer_result = 801\n", copy_options());
  CHECK(fake_counter("fake_cuda_spin_launches") - spins_before == spins);
  CHECK(metric_of(unmapped.devices.at(0), "h2d_pinned").summary.median == Approx(mib / 1e-3 / 1e9));
  CHECK(metric_of(mapped.devices.at(0), "h2d_pinned").summary.median == Approx(copies_per_sample * mib / 1e-3 / 1e9));
  CHECK(fake_counter("fake_cuda_live_allocations") == live_before);
}

TEST_CASE("smoke: peer copies both ways at once, each direction shown beside the pair's one-way floor",
          "[smoke][system-test]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  options.overrides["p2p"].minimum = 100;  // the one-way floor; an H100 pair on a 2-GPU node has none of its own
  // 64 KiB x copies_per_sample per 0.1 us each way: 5243 GB/s per direction.
  const SmokeReport fast = run_fake("device_count = 2\nelapsed_ms = 0.0001\n", options);
  REQUIRE(fast.bidirectional.size() == 2);
  CHECK(fast.bidirectional[0].metric.id == "p2p_bidir_0_1");
  CHECK(fast.bidirectional[1].metric.id == "p2p_bidir_1_0");
  CHECK(fast.bidirectional[0].metric.summary.median == Approx(copies_per_sample * 655.36));
  CHECK(fast.bidirectional[0].metric.summary.count == 2);
  REQUIRE(fast.bidirectional_findings.size() == 1);
  const Finding& pass = fast.bidirectional_findings[0];
  CHECK(pass.id == "smoke.p2p_bidirectional");
  CHECK(pass.status == Status::pass);
  CHECK(pass.message.find("GPU 0 <-> GPU 1: GPU 0 -> GPU 1 5243 GB/s and GPU 1 -> GPU 0 5243 GB/s at once (sum 10486 "
                          "GB/s; medians of 2, 64 KiB each way), data verified; ") == 0);
  // Shown, not judged. One-way and bidirectional copies are both queued behind the spin kernel, so the fake's equal
  // intervals give equal rates: 1 x, as full duplex should on hardware.
  CHECK(pass.message.find("; 1.00 x the one-way copies' sum (10486 GB/s); ") != std::string::npos);
  CHECK(pass.message.find("; the slower direction is 52.43 x the one-way floor 100 GB/s, not judged (uncalibrated: no "
                          "anchor tool has a bidirectional floor)") != std::string::npos);
  CHECK(pass.source == "--minimum p2p=100 (operator)");

  // GPU 1's stream (GPU 1 reads GPU 0) is slow while both run: 26.2 GB/s, below half the one-way floor. No anchor tool
  // has a bidirectional floor (issue 23 item 1): reported with its ratio, never judged; the one-way copies are.
  const SmokeReport slow = run_fake("device_count = 2\nelapsed_ms = 0.0001\nelapsed_ms_gpu1 = 0.02\n", options);
  REQUIRE(slow.bidirectional_findings.size() == 1);
  CHECK(slow.bidirectional_findings[0].status == Status::pass);
  CHECK(slow.bidirectional_findings[0].message.find("GPU 0 -> GPU 1 26.2 GB/s and GPU 1 -> GPU 0 5243 GB/s") !=
        std::string::npos);
  CHECK(slow.bidirectional_findings[0].message.find("the slower direction is 0.26 x the one-way floor") !=
        std::string::npos);

  // No one-way floor for the pair: numbers only, and why.
  const SmokeReport no_floor = run_fake("device_count = 2\nelapsed_ms = 0.0001\n", small_options());
  REQUIRE(no_floor.bidirectional_findings.size() == 1);
  CHECK(no_floor.bidirectional_findings[0].status == Status::skip);
  CHECK(no_floor.bidirectional_findings[0].message.find("numbers only (no floor: ") != std::string::npos);

  // Wrong data either way fails; no peer access: nothing to run both ways.
  const SmokeReport corrupt = run_fake("device_count = 2\ncorrupt_peer = 1\n", options);
  REQUIRE(corrupt.bidirectional_findings.size() == 1);
  CHECK(corrupt.bidirectional_findings[0].status == Status::fail);
  CHECK(corrupt.bidirectional_findings[0].message.find("data corrupted") != std::string::npos);
  const SmokeReport no_peer = run_fake("device_count = 2\npeer_access = 0\n", options);
  CHECK(no_peer.bidirectional.empty());
  CHECK(no_peer.bidirectional_findings.empty());

  // Without a spin kernel to release both queues together, the directions would not overlap for sure: not measured.
  const int live_before = fake_counter("fake_cuda_live_allocations");
  const SmokeReport unheld = run_fake("device_count = 2\nhost_get_device_pointer_result = 801\n", options);
  REQUIRE(unheld.bidirectional_findings.size() == 1);
  CHECK(unheld.bidirectional_findings[0].status == Status::skip);
  CHECK(unheld.bidirectional_findings[0].message.find("not measured: both directions at once need the spin kernel") !=
        std::string::npos);
  CHECK(fake_counter("fake_cuda_live_allocations") == live_before);

  // Every spin kernel timed out: the overlap is unknown, so the figures are not judged (a skip: a host that stalled is
  // no fault of the GPUs).
  const SmokeReport timed_out = run_fake("device_count = 2\nelapsed_ms = 0.0001\nspin_timeouts = 1000\n", options);
  REQUIRE(timed_out.bidirectional_findings.size() == 1);
  CHECK(timed_out.bidirectional_findings[0].status == Status::skip);
  CHECK(timed_out.bidirectional_findings[0].message.find("timing invalid") != std::string::npos);
}

TEST_CASE("smoke: peer copies without peer access are not queued behind a spin kernel the host could not release",
          "[smoke]") {
  // Staged through host memory, cuMemcpyPeerAsync may block until the stream's earlier work ran: a spin kernel ahead
  // of it would then time out on every sample (2 s each, 56 pairs on an 8-GPU node).
  SmokeOptions options = small_options();
  options.cublas = false;
  options.peer = false;
  const int before_alone = fake_counter("fake_cuda_spin_launches");
  run_fake("device_count = 2\npeer_access = 0\n", options);
  const int without_peers = fake_counter("fake_cuda_spin_launches") - before_alone;
  options.peer = true;
  const int before_staged = fake_counter("fake_cuda_spin_launches");
  const SmokeReport staged = run_fake("device_count = 2\npeer_access = 0\n", options);
  CHECK(fake_counter("fake_cuda_spin_launches") - before_staged == without_peers);
  REQUIRE(staged.peers.size() == 2);
  CHECK_FALSE(staged.peers[0].peer_access);
  const int before_peer = fake_counter("fake_cuda_spin_launches");
  run_fake("device_count = 2\npeer_access = 1\n", options);
  CHECK(fake_counter("fake_cuda_spin_launches") - before_peer > without_peers);  // queued with peer access
}

TEST_CASE("smoke: peer copies whose every sample timed out say 'timing invalid' also without a floor", "[smoke]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  // Two H100s: no floor on a 2-GPU node (the 335 GB/s floor is for 8-GPU boards). Every spin kernel times out.
  const SmokeReport report = run_fake("device_count = 2\nspin_timeouts = 100000\n", options);
  REQUIRE(report.peer_findings.size() == 2);
  for (const Finding& finding : report.peer_findings) {
    CHECK(finding.status == Status::skip);
    CHECK(finding.message.find("timing invalid") != std::string::npos);
  }
  REQUIRE(report.bidirectional_findings.size() == 1);
  CHECK(report.bidirectional_findings[0].status == Status::skip);
  CHECK(report.bidirectional_findings[0].message.find("timing invalid") != std::string::npos);
}
