// HBM bandwidth by the SMs (issue 23 item 2), the PCIe link read while the copies run (item 7) and the default memory
// test (item 10), through the fake libcuda. A copy-engine copy saturates near 66% of HBM bandwidth on H200
// (NVIDIA/cccl#1672: "thrust::copy uses cudaMemcpy ... which saturates at most 66% of memory bandwidth on H200"), so
// the D2D copy is a figure and smoke_stream_copy is judged against DCGM's memory_bandwidth minimum (DCGM
// nvvs/diag-skus.yaml.in: 0.75 x dcgmproftester's DRAM figure).

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "smoke/fake_cuda_fixture.hpp"
#include "smoke/internal/step.hpp"
#include "smoke/smoke.hpp"

using namespace gpuenv::smoke;
using namespace gpuenv::smoke::testing;
using gpuenv::report::Finding;
using gpuenv::report::Status;

namespace {

const Metric* metric(const DeviceResult& device, const std::string& id) {
  const auto it =
      std::find_if(device.metrics.begin(), device.metrics.end(), [&](const Metric& m) { return m.id == id; });
  return it == device.metrics.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("smoke: HBM bandwidth is measured by the SM stream kernel and judged, the copy-engine D2D is a figure",
          "[smoke]") {
  // The fake H100 (DCGM SKU 2330 "H100 80GB HBM3": minimum_bandwidth 1905000 MB/s, verified for the row). 64 KiB
  // buffers; the stream kernel's 8 launches per sample in stream_elapsed_ms.
  SmokeOptions options = small_options();
  options.cublas = false;
  // 2 x 64 KiB x 8 per 0.0004 ms: 2621 GB/s, above 1905; the copy engine at 1 us: 1049 GB/s, not judged.
  const SmokeReport healthy = run_fake("elapsed_ms = 0.001\nstream_elapsed_ms = 0.0004\n", options);
  const DeviceResult& gpu = healthy.devices.at(0);
  const Metric* stream = metric(gpu, "memory_bandwidth");
  REQUIRE(stream != nullptr);
  CHECK(stream->summary.median == Approx(2 * 65536.0 * copies_per_sample / 0.0004e-3 / 1e9));
  CHECK(stream->work == 2.0 * 65536);  // bytes read + written
  const Finding* hbm = find(gpu.findings, "smoke.memory_bandwidth");
  REQUIRE(hbm != nullptr);
  CHECK(hbm->status == Status::pass);
  CHECK(hbm->message.find("SM stream copy (read + write) 2621 GB/s") == 0);
  CHECK(hbm->message.find("data verified") != std::string::npos);
  CHECK(hbm->message.find("fail below 1905 GB/s (anchor minimum)") != std::string::npos);
  CHECK(hbm->source.find("DCGM memory_bandwidth minimum 1905 GB/s") != std::string::npos);
  const Finding* d2d = find(gpu.findings, "smoke.d2d");
  REQUIRE(d2d != nullptr);
  CHECK(d2d->status == Status::pass);
  CHECK(d2d->message.find("copy-engine device->device 1049 GB/s") == 0);
  CHECK(d2d->message.find("not judged (uncalibrated)") != std::string::npos);

  // A slow stream copy fails against DCGM's floor; a copy engine as slow would not have (a figure only).
  const SmokeReport slow = run_fake("elapsed_ms = 0.001\nstream_elapsed_ms = 0.001\n", options);
  CHECK(find(slow.devices.at(0).findings, "smoke.memory_bandwidth")->status == Status::fail);
  CHECK(find(slow.devices.at(0).findings, "smoke.d2d")->status == Status::pass);
  // Wrong data from the stream kernel fails whatever its rate.
  const SmokeReport corrupt = run_fake("stream_elapsed_ms = 0.0004\ncorrupt_stream = 1\n", options);
  const Finding* wrong = find(corrupt.devices.at(0).findings, "smoke.memory_bandwidth");
  CHECK(wrong->status == Status::fail);
  CHECK(wrong->message.find("data corrupted: 1 of 16384 words differ; first at byte offset 0x8") != std::string::npos);
  // An H200 NVL: DCGM names its SKUs "H200", not "H200 NVL": the minimum is shown, not judged.
  const SmokeReport nvl = run_fake("name = NVIDIA H200 NVL\nstream_elapsed_ms = 0.01\n", options);
  const Finding* unverified = find(nvl.devices.at(0).findings, "smoke.memory_bandwidth");
  CHECK(unverified->status == Status::pass);
  CHECK(unverified->source.find("(not verified for this product: not judged)") != std::string::npos);
}

TEST_CASE("smoke: the PCIe link is read while the pinned copies run, not after the link went idle", "[smoke]") {
  // The fake writes 32.0 GT/s (Gen5) into current_link_speed while its host copies are in flight and 2.5 GT/s (Gen1)
  // at each synchronisation, as T4/L4/RTX cards retrain at idle; event_sleep keeps each sample in flight 20 ms.
  const SysfsTree sysfs("0000:1b:00.0", "32.0 GT/s PCIe", 16);
  SmokeOptions options = small_options();
  options.sysfs_root = sysfs.root();
  options.cublas = false;
  options.repetitions = 3;
  const SmokeReport report = run_fake("elapsed_ms = 20\nevent_sleep = 1\npcie_speed_file = " + sysfs.speed_file() +
                                          "\npcie_speed_busy = 32.0 GT/s PCIe\npcie_speed_idle = 2.5 GT/s PCIe\n",
                                      options);
  const DeviceResult& gpu = report.devices.at(0);
  CHECK(gpu.info.pcie_generation == 5);  // under load, though the file reads Gen1 when the copies are done
  CHECK(find(gpu.findings, "smoke.pcie_link") == nullptr);
  std::ifstream idle(sysfs.speed_file());
  std::string now;
  std::getline(idle, now);
  CHECK(now == "2.5 GT/s PCIe");
  // A link that really runs Gen1 under load warns.
  const SmokeReport degraded = run_fake("elapsed_ms = 20\nevent_sleep = 1\npcie_speed_file = " + sysfs.speed_file() +
                                            "\npcie_speed_busy = 2.5 GT/s PCIe\npcie_speed_idle = 2.5 GT/s PCIe\n",
                                        options);
  const Finding* link = find(degraded.devices.at(0).findings, "smoke.pcie_link");
  REQUIRE(link != nullptr);
  CHECK(link->status == Status::warn);
  CHECK(link->message.find("PCIe link ran Gen1 x16 while the pinned copies ran") == 0);
}

TEST_CASE("smoke: the memory test runs by default over a small share of free memory, at least 8 x the L2", "[smoke]") {
  // 256 MiB free, L2 8 KiB: the default takes 5% of the free memory (13 MiB), never less than 8 x L2.
  SmokeOptions options = small_options();
  options.cublas = false;
  options.memtest_chunk_bytes = std::size_t{64} << 20;
  const SmokeReport report = run_fake("free_memory = 268435456\nl2_bytes = 8192\n", options);
  const Finding* memtest = find(report.devices.at(0).findings, "smoke.memtest");
  REQUIRE(memtest != nullptr);
  CHECK(memtest->status == Status::pass);
  CHECK(memtest->message.find("5 patterns over 13 MiB (5% of 256 MiB free") != std::string::npos);
  // A tiny free memory with a large L2: the default takes 8 x the L2 (here 8 x 64 KiB = 512 KiB of 4 MiB).
  const SmokeReport l2 = run_fake("free_memory = 4194304\nl2_bytes = 65536\n", options);
  CHECK(find(l2.devices.at(0).findings, "smoke.memtest")->message.find("over 512 KiB") != std::string::npos);
  // --no-memtest: none.
  options.memtest_fraction = 0;
  CHECK(find(run_fake("", options).devices.at(0).findings, "smoke.memtest") == nullptr);
}
