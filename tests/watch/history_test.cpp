// doctor's view of watch's history: the error counters' growth over the window, as a rate, judged as DCGM's health
// watches judge growth (uncorrectable ECC and NVLink replay/recovery fail, CRC and remaps warn).

#include "watch/history.hpp"

#include <catch2/catch.hpp>

using gpuenv::report::Status;
using gpuenv::watch::GpuSample;
using gpuenv::watch::NodeSample;

namespace {

NodeSample node(std::int64_t time_ms, std::uint64_t ecc, std::uint64_t crc) {
  GpuSample gpu;
  gpu.index = 4;
  gpu.uuid = "GPU-4";
  gpu.ecc_uncorrected = ecc;
  gpu.nvlink_crc = crc;
  return NodeSample{time_ms, true, "", 1u, {gpu}, {}};
}

}  // namespace

TEST_CASE("history.error_rates: growth over the window as a rate per hour", "[watch]") {
  constexpr std::int64_t hour = 3600 * 1000;
  const std::vector<NodeSample> quiet = {node(0, 5, 100), node(hour, 5, 100), node(2 * hour, 5, 100)};
  const auto pass = gpuenv::watch::history_error_rates(quiet, 2 * hour);
  CHECK(pass.status == Status::pass);
  CHECK_THAT(pass.message, Catch::Contains("in the last 2.0 h of gpuenv watch's history (3 samples)"));

  const std::vector<NodeSample> crc = {node(0, 5, 100), node(hour, 5, 104), node(2 * hour, 5, 110)};
  const auto warn = gpuenv::watch::history_error_rates(crc, 2 * hour);
  CHECK(warn.status == Status::warn);
  CHECK_THAT(warn.message, Catch::Contains("GPU 4: 10 NVLink CRC errors (5.00/h)"));

  // A driver reload resets the counters: the reading after it counts as new growth.
  const std::vector<NodeSample> ecc = {node(0, 5, 100), node(hour, 1, 0), node(2 * hour, 2, 0)};
  const auto fail = gpuenv::watch::history_error_rates(ecc, 2 * hour);
  CHECK(fail.status == Status::fail);
  CHECK_THAT(fail.message, Catch::Contains("GPU 4: 2 uncorrectable ECC errors"));

  CHECK(gpuenv::watch::history_error_rates({node(0, 0, 0)}, hour).status == Status::skip);
}

TEST_CASE("history.error_rates: PCIe replays are judged only above DCGM's 8 a minute", "[watch]") {
  // DCGM_LIMIT_MAX_PCIREPLAY_RATE 8, "8 replays per minute is the maximum recommended by RM" (NVIDIA/DCGM @ 72fa3fe
  // common/DcgmGPUHardwareLimits.h): DCGM's PCIe watch warns only above it.
  constexpr std::int64_t hour = 3600 * 1000;
  const auto replays = [](std::int64_t time_ms, std::uint64_t count) {
    NodeSample sample = node(time_ms, 0, 0);
    sample.gpus[0].pcie_replays = count;
    return sample;
  };
  const auto few = gpuenv::watch::history_error_rates({replays(0, 10), replays(hour, 40)}, hour);
  CHECK(few.status == Status::pass);  // 30 in an hour: listed, not judged
  CHECK_THAT(few.message, Catch::Contains("GPU 4: 30 PCIe replays"));
  const auto many = gpuenv::watch::history_error_rates({replays(0, 10), replays(hour, 10 + 600)}, hour);
  CHECK(many.status == Status::warn);  // 10 a minute
}

TEST_CASE("history.error_rates: NVLink5's counters by the judgement of probe's table", "[watch]") {
  // probe/nvlink5.hpp after DCGM 4.6.0 (modules/health/DcgmHealthWatch.cpp MonitorNVLink5Fields: any rise of an error
  // counter fails; MonitorNVLinkErrorFields: a successful link recovery warns).
  constexpr std::int64_t hour = 3600 * 1000;
  struct Row {
    const char* name;
    std::uint64_t errors_later, warnings_later;
    Status expected;
    const char* says;
  };
  const Row rows[] = {
      {"quiet", 3, 40, Status::pass, "no error counter grew"},
      {"NVLink5 errors", 5, 40, Status::fail, "GPU 4: 2 NVLink5 errors (2.00/h)"},
      {"successful recoveries", 3, 52, Status::warn, "GPU 4: 12 NVLink5 successful link recoveries"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const auto nvlink5_sample = [](std::int64_t time_ms, std::uint64_t errors, std::uint64_t warnings) {
      NodeSample sample = node(time_ms, 0, 0);
      sample.gpus[0].nvlink_crc.reset();  // refused on Blackwell
      sample.gpus[0].nvlink5_errors = errors;
      sample.gpus[0].nvlink5_warnings = warnings;
      return sample;
    };
    const auto found = gpuenv::watch::history_error_rates(
        {nvlink5_sample(0, 3, 40), nvlink5_sample(hour, row.errors_later, row.warnings_later)}, hour);
    CHECK(found.status == row.expected);
    CHECK_THAT(found.message, Catch::Contains(row.says));
  }
}
