// Peer access within the driver's limits (issue 23 item 3): "On non-NVSwitch enabled systems, each device can support
// a system-wide maximum of eight peer connections" (CUDA C++ Programming Guide, Peer-to-Peer Memory Access), and
// cuCtxEnablePeerAccess returns CUDA_ERROR_TOO_MANY_PEERS (711) "if direct peer access is not possible because
// hardware resources required for peer access have been exhausted" (cuda.h). The fake libcuda models the limit
// (peer_connection_limit) and counts the connections still enabled.

#include <catch2/catch.hpp>

#include "smoke/fake_cuda_fixture.hpp"
#include "smoke/smoke.hpp"

using namespace gpuenv::smoke;
using namespace gpuenv::smoke::testing;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::report::Verdict;

namespace {

SmokeOptions peer_options() {
  SmokeOptions options = small_options();
  options.cublas = false;
  options.memtest_fraction = 0;
  return options;
}

}  // namespace

TEST_CASE("smoke: ten GPUs on a PCIe node with eight peer connections each copy every pair", "[smoke][peer]") {
  // Enabled for every source at once, destination 0 would need 9 connections: the 9th would be refused (711).
  const SmokeReport report =
      run_fake("device_count = 10\nname = NVIDIA L4\npeer_connection_limit = 8\nelapsed_ms = 0.01\n", peer_options());
  REQUIRE(report.peer_findings.size() == 90);
  for (const Finding& finding : report.peer_findings) {
    CAPTURE(finding.message);
    CHECK(finding.status != Status::fail);
    CHECK(finding.message.find("TOO_MANY_PEERS") == std::string::npos);
  }
  CHECK(report.peers.size() == 90);
  for (const PeerResult& pair : report.peers) CHECK(pair.peer_access);
  // Each pair's access was disabled again: never more than a pair's own at once, none left at the end.
  CHECK(fake_counter("fake_cuda_peak_peer_connections") <= 2);
  CHECK(fake_counter("fake_cuda_peer_connections") == 0);
}

TEST_CASE("smoke: CUDA_ERROR_TOO_MANY_PEERS is a skip, never a failure, also for an NVLink model", "[smoke][peer]") {
  // Eight H100 SXM (an NVLink model with a verified floor on an 8-GPU board): a pair whose peer access is refused for
  // want of connections is not "NVLink model without peer access".
  const SmokeReport report =
      run_fake("device_count = 8\npeer_enable_result = 711\nelapsed_ms = 0.0001\n", peer_options());
  REQUIRE(report.peer_findings.size() == 56);
  for (const Finding& finding : report.peer_findings) {
    CAPTURE(finding.message);
    CHECK(finding.status == Status::skip);
    CHECK(finding.message.find("CUDA_ERROR_TOO_MANY_PEERS (711)") != std::string::npos);
  }
  CHECK(report.peers.empty());  // nothing measured, nothing judged
  for (const Finding& finding : report.bidirectional_findings) CHECK(finding.status != Status::fail);
  for (const DeviceResult& device : report.devices) CHECK_FALSE(device.hung);
}
