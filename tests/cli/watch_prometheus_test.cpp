// watch's exposition checked by the real `promtool check metrics`: every family, with a lost GPU, throttle reasons,
// open conditions, an interruption notice and host text that is hostile to the format (quotes, backslashes, newlines,
// invalid UTF-8) in label values.

#include <catch2/catch.hpp>

#include "cli/watch_output.hpp"
#include "fleet/fleet_support.hpp"
#include "support/skip.hpp"
#include "support/text_files.hpp"

namespace {

using gpuenv::testing::fleet::run_tool;
using gpuenv::testing::fleet::TempDir;

gpuenv::watch::Snapshot snapshot() {
  gpuenv::watch::Snapshot s;
  s.sample.time_ms = 1'767'225'600'123;
  s.sample.nvml = true;
  gpuenv::watch::GpuSample busy;
  busy.index = 0;
  busy.uuid = "GPU-00000000-0000-0000-0000-000000000000";
  busy.name = "NVIDIA H100 80GB HBM3 \"quoted\" \\ back\nslash \xff";
  busy.pci_bus_id = "00000000:18:00.0";
  busy.utilization_percent = 97;
  busy.temperature_c = 86;
  busy.power_w = 650.5;
  busy.memory_used_mib = 70000;
  busy.sm_clock_mhz = 1755;
  busy.throttle = gpuenv::watch::k_hw_slowdown | gpuenv::watch::k_sw_power_cap;
  busy.processes = 1;
  busy.ecc_corrected = 3;
  busy.ecc_uncorrected = 0;
  busy.remapped_correctable = 1;
  busy.remapped_uncorrectable = 0;
  busy.nvlink_replay = 0;
  busy.nvlink_recovery = 2;
  busy.nvlink_crc = 10;
  busy.nvlink_inactive = 1;
  busy.pcie_replays = 4;
  gpuenv::watch::GpuSample lost;
  lost.index = 1;
  lost.uuid = "GPU-00000000-0000-0000-0000-000000000001";
  lost.access_error = "GPU is lost";
  s.sample.gpus = {busy, lost};
  s.sample.attached_gpus = 2;
  s.idle_ms = {0, 0};
  s.history = true;
  s.kernel_log_readable = true;
  s.interval_ms = 10000;
  s.work_seconds = 0.004;
  s.events_total[{"watch.gpu_lost", "fail"}] = 1;
  s.open["watch.gpu_lost|GPU-00000000-0000-0000-0000-000000000001"] = {0, 0, gpuenv::report::Status::fail};
  s.notices.push_back({"aws", "terminate", "spot-terminate-2026-12-03T15:02:00Z", 1'796'310'120'000, "x", true});
  return s;
}

}  // namespace

TEST_CASE("watch exposition: promtool accepts every family, hostile label text included", "[cli][watch]") {
  const std::string text = gpuenv::cli::watch_prometheus(snapshot(), "0.1.0");
  CHECK(text.find("gpuenv_gpu_throttle{gpu=\"0\",UUID=\"GPU-00000000-0000-0000-0000-000000000000\",reason=\"hw_"
                  "slowdown\"} 1\n") != std::string::npos);
  CHECK(text.find("gpuenv_gpu_lost{gpu=\"1\",UUID=\"GPU-00000000-0000-0000-0000-000000000001\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("gpuenv_gpu_utilization_ratio{gpu=\"0\",UUID=\"GPU-00000000-0000-0000-0000-000000000000\"} 0.97\n") !=
        std::string::npos);
  CHECK(text.find("gpuenv_watch_last_sample_timestamp_seconds 1767225600.123\n") != std::string::npos);
  CHECK(text.find("# gpuenv: host text in label values was cleaned") != std::string::npos);
  // Cumulative counts are counters named *_total, values that go up and down gauges
  // (https://prometheus.io/docs/practices/naming/: "an accumulating count has total as a suffix";
  // https://prometheus.io/docs/concepts/metric_types/: a counter "can only increase or be reset to zero"). promtool's
  // lint below holds the other half: a counter without _total, or a gauge with it, is reported.
  for (const char* counter : {"gpuenv_watch_events_total", "gpuenv_gpu_ecc_corrected_volatile_errors_total",
                              "gpuenv_gpu_ecc_uncorrected_volatile_errors_total", "gpuenv_gpu_pcie_replays_total",
                              "gpuenv_gpu_remapped_rows_total", "gpuenv_gpu_nvlink_errors_total"}) {
    INFO(counter);
    CHECK(text.find("# TYPE " + std::string(counter) + " counter\n") != std::string::npos);
  }
  for (const char* gauge : {"gpuenv_gpu_idle_seconds", "gpuenv_gpu_nvlinks_inactive", "gpuenv_gpu_remap_pending",
                            "gpuenv_gpu_temperature_celsius", "gpuenv_watch_condition"}) {
    INFO(gauge);
    CHECK(text.find("# TYPE " + std::string(gauge) + " gauge\n") != std::string::npos);
  }
  CHECK(text.find("gpuenv_gpu_nvlink_errors_total{gpu=\"0\",UUID=\"GPU-00000000-0000-0000-0000-000000000000\",type="
                  "\"crc\"} 10\n") != std::string::npos);
  GPUENV_SKIP_UNLESS(gpuenv::testing::fleet::have_tool("promtool"),
                     "promtool not installed (Debian package prometheus; scripts/bootstrap installs it)");
  TempDir dir;
  const auto file = dir.path() / "watch.prom";
  REQUIRE(gpuenv::testing::write_text(file, text));
  const auto run = run_tool({"sh", "-c", "promtool check metrics < \"$1\"", "sh", file.string()});
  INFO(run.out << run.err << "\n" << text);
  CHECK(run.exit_code == 0);
  CHECK(run.out.empty());
  CHECK(run.err.empty());
}
