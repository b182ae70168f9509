// doctor's and watch's textfiles in one node_exporter directory (issue 28): gpuenv-doctor.service writes gpuenv.prom
// and gpuenv-watch.service gpuenv-watch.prom beside it, and both declared gpuenv_gpus_visible, gpuenv_gpu_info,
// gpuenv_gpu_ecc_uncorrected_volatile_errors_total (and, with --prometheus-gpu-gauges, temperature and power) with the
// same labels. node_exporter's textfile collector reads the files in name order and hands every sample to
// client_golang's registry, which refuses a second series with the same name and label values ("was collected before
// with the same name and label values", prometheus/client_golang prometheus/registry.go, checkMetricConsistency and
// checkSeries); node_exporter serves with promhttp.ContinueOnError (node_exporter.go), so doctor's copies were dropped
// and an error logged at every scrape. doctor now leaves to a current watch textfile the families it exports. The
// engine test runs Debian's real prometheus-node-exporter over both files.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <ctime>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "cli/doctor_output.hpp"
#include "cli/prometheus.hpp"
#include "cli/watch_output.hpp"
#include "fleet/fleet_support.hpp"
#include "support/run_binary.hpp"
#include "support/skip.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::read_text;
using gpuenv::testing::fleet::have_tool;
using gpuenv::testing::fleet::run_tool;
using gpuenv::testing::fleet::TempDir;

constexpr const char* k_uuid = "GPU-3b0b3a2e-1f7c-4a53-9d49-0a7f2b0c5d11";

/// One H100 as watch samples it at Unix time `seconds` (10 s interval).
gpuenv::watch::Snapshot watch_snapshot(long long seconds) {
  gpuenv::watch::Snapshot s;
  s.sample.time_ms = seconds * 1000;
  s.sample.nvml = true;
  gpuenv::watch::GpuSample gpu;
  gpu.index = 0;
  gpu.uuid = k_uuid;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.pci_bus_id = "00000000:18:00.0";
  gpu.utilization_percent = 97;
  gpu.temperature_c = 61;
  gpu.power_w = 650.5;
  gpu.memory_used_mib = 70000;
  gpu.ecc_uncorrected = 0;
  s.sample.gpus = {gpu};
  s.sample.attached_gpus = 1;
  s.idle_ms = {0};
  s.history = true;
  s.kernel_log_readable = true;
  s.interval_ms = 10000;
  return s;
}

/// The same GPU as doctor reports it.
gpuenv::doctor::DoctorReport doctor_report() {
  gpuenv::doctor::DoctorReport r;
  r.verdict = gpuenv::report::Verdict::ok;
  r.facts.kernel.module_version = "570.195.03";
  gpuenv::probe::GpuFacts gpu;
  gpu.index = 0;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.uuid = k_uuid;
  gpu.pci_bus_id = "00000000:18:00.0";
  gpu.memory_total_mib = 81559;
  gpu.temperature_c = 41;
  gpu.power_draw_w = 71.5;
  gpu.ecc_uncorrected_volatile = 0;
  r.facts.gpus.gpus.push_back(gpu);
  r.findings = {{"gpu.ecc", gpuenv::report::Status::pass, "ok", "", ""}};
  return r;
}

/// The families `text` has samples of.
std::set<std::string> declared(const std::string& text) { return gpuenv::cli::parse_watch_textfile(text).families; }

std::set<std::string> common(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const std::string& name : a)
    if (b.count(name) != 0) out.insert(name);
  return out;
}

}  // namespace

TEST_CASE("textfiles: doctor leaves to a current watch textfile the families it exports", "[cli][prometheus]") {
  const long long now = 1'796'000'000;
  const std::string watch = gpuenv::cli::watch_prometheus(watch_snapshot(now - 5), "0.1.0");
  const gpuenv::cli::WatchTextfile parsed = gpuenv::cli::parse_watch_textfile(watch);
  CHECK(parsed.last_sample_seconds == Approx(now - 5));
  CHECK(parsed.interval_seconds == Approx(10));
  CHECK(parsed.families.count("gpuenv_gpu_info") == 1);
  CHECK(parsed.families.count("gpuenv_watch_info") == 1);

  gpuenv::cli::PrometheusOptions gauges;
  gauges.gpu_gauges = true;
  const std::string alone = gpuenv::cli::doctor_prometheus(doctor_report(), "0.1.0", now, gauges);
  // What overlapped: the same names, the same labels (gpu, UUID), in two files.
  CHECK(common(declared(alone), parsed.families) ==
        std::set<std::string>{"gpuenv_gpu_ecc_uncorrected_volatile_errors_total", "gpuenv_gpu_info",
                              "gpuenv_gpu_power_draw_watts", "gpuenv_gpu_temperature_celsius", "gpuenv_gpus_visible"});

  struct Case {
    const char* what;
    double age_seconds;
    bool left;
  };
  for (const Case& c : {Case{"5 s old", 5, true}, Case{"60 s old (3 intervals are 30 s; at least 60)", 60, true},
                        Case{"61 s old: watch stopped", 61, false}, Case{"an hour ahead", -3600, false}}) {
    INFO(c.what);
    const auto left =
        gpuenv::cli::families_left_to_watch(gpuenv::cli::parse_watch_textfile(gpuenv::cli::watch_prometheus(
                                                watch_snapshot(now - static_cast<long long>(c.age_seconds)), "0.1.0")),
                                            static_cast<double>(now));
    CHECK(left.empty() != c.left);
  }
  CHECK(gpuenv::cli::families_left_to_watch(gpuenv::cli::parse_watch_textfile("# TYPE x gauge\nx 1\n"), now).empty());
  // NVML not answering watch: it declares the per-GPU families without samples, and doctor keeps its own.
  gpuenv::watch::Snapshot blind = watch_snapshot(now - 5);
  blind.sample.nvml = false;
  blind.sample.gpus.clear();
  blind.sample.attached_gpus.reset();
  const auto left_blind = gpuenv::cli::families_left_to_watch(
      gpuenv::cli::parse_watch_textfile(gpuenv::cli::watch_prometheus(blind, "0.1.0")), now);
  CHECK(left_blind.count("gpuenv_watch_nvml_up") == 1);
  CHECK(left_blind.count("gpuenv_gpu_info") == 0);
  CHECK(left_blind.count("gpuenv_gpu_temperature_celsius") == 0);

  gauges.left_to_watch = gpuenv::cli::families_left_to_watch(parsed, static_cast<double>(now));
  gauges.watch_textfile = "/var/lib/node_exporter/textfile/gpuenv-watch.prom";
  const std::string beside = gpuenv::cli::doctor_prometheus(doctor_report(), "0.1.0", now, gauges);
  CHECK(common(declared(beside), parsed.families).empty());
  CHECK(beside.find("gpuenv_doctor_verdict 0\n") != std::string::npos);
  CHECK(beside.find("gpuenv_gpu_memory_total_bytes{") != std::string::npos);  // watch has no memory total
  CHECK(beside.find("# gpuenv: left to /var/lib/node_exporter/textfile/gpuenv-watch.prom, which exports them too: "
                    "gpuenv_gpu_ecc_uncorrected_volatile_errors_total") != std::string::npos);
}

TEST_CASE("textfiles: doctor --prometheus reads the gpuenv-watch.prom beside its file", "[cli][prometheus]") {
  TempDir scratch;
  const fs::path file = scratch.path() / "gpuenv.prom";
  const auto doctor = [&file] {
    const auto run = gpuenv::testing::run_gpuenv(
        gpuenv::testing::fleet::doctor_on_tree("healthy-8xh100", {"--quick", "--prometheus", file.string()}));
    INFO(run.err);
    REQUIRE((run.exit_code == 0 || run.exit_code == 1));
    return read_text(file);
  };
  CHECK(doctor().find("# TYPE gpuenv_gpu_info gauge") != std::string::npos);  // no watch: doctor's own
  const long long now = static_cast<long long>(::time(nullptr));
  REQUIRE(gpuenv::testing::write_text(scratch.path() / "gpuenv-watch.prom",
                                      gpuenv::cli::watch_prometheus(watch_snapshot(now - 2), "0.1.0")));
  const std::string beside = doctor();
  CHECK(beside.find("# TYPE gpuenv_gpu_info gauge") == std::string::npos);
  CHECK(beside.find("# gpuenv: left to " + (scratch.path() / "gpuenv-watch.prom").string()) != std::string::npos);
  REQUIRE(gpuenv::testing::write_text(scratch.path() / "gpuenv-watch.prom",
                                      gpuenv::cli::watch_prometheus(watch_snapshot(now - 3600), "0.1.0")));
  CHECK(doctor().find("# TYPE gpuenv_gpu_info gauge") != std::string::npos);  // a stopped watch: doctor's again
}

TEST_CASE("textfiles: node_exporter serves doctor's and watch's files together without a collision",
          "[cli][prometheus][system-test][engine]") {
  GPUENV_SKIP_UNLESS(have_tool("prometheus-node-exporter") && have_tool("curl"),
                     "prometheus-node-exporter or curl not installed (scripts/bootstrap installs both)");
  TempDir scratch;
  const long long now = static_cast<long long>(::time(nullptr));
  const std::string watch = gpuenv::cli::watch_prometheus(watch_snapshot(now), "0.1.0");
  gpuenv::cli::PrometheusOptions gauges;
  gauges.gpu_gauges = true;
  const std::string before = gpuenv::cli::doctor_prometheus(doctor_report(), "0.1.0", now, gauges);
  gauges.left_to_watch = gpuenv::cli::families_left_to_watch(gpuenv::cli::parse_watch_textfile(watch), now);
  gauges.watch_textfile = "gpuenv-watch.prom";
  const std::string after = gpuenv::cli::doctor_prometheus(doctor_report(), "0.1.0", now, gauges);

  // One scrape of a real node_exporter over the directory: its log and what it served.
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  const auto scrape = [&](const std::string& doctor_text) {
    const fs::path dir = scratch.path() / "textfile";
    fs::remove_all(dir);
    fs::create_directories(dir);
    REQUIRE(gpuenv::testing::write_text(dir / "gpuenv.prom", doctor_text));
    REQUIRE(gpuenv::testing::write_text(dir / "gpuenv-watch.prom", watch));
    const auto run = run_tool(
        {"sh", "-c",
         "prometheus-node-exporter --collector.disable-defaults --collector.textfile "
         "--collector.textfile.directory=\"$1\" --web.listen-address=127.0.0.1:\"$2\" 2>\"$3\" & pid=$!; "
         "for i in $(seq 100); do curl -sf -o \"$4\" http://127.0.0.1:\"$2\"/metrics && break; sleep 0.1; done; "
         "curl -sf -o \"$4\" http://127.0.0.1:\"$2\"/metrics; status=$?; kill $pid; wait $pid; exit $status",
         "sh", dir.string(), port, (scratch.path() / "log").string(), (scratch.path() / "metrics").string()},
        std::chrono::seconds(60));
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    return std::pair{read_text(scratch.path() / "log"), read_text(scratch.path() / "metrics")};
  };
  const std::regex gathering_errors(R"(promhttp_metric_handler_errors_total\{cause="gathering"\} (\d+))");
  std::smatch errors;

  const auto [log_before, metrics_before] = scrape(before);
  INFO(log_before);
  // The engine's contract this fixes: the same series in two files is an error, and one copy is dropped.
  CHECK(log_before.find("was collected before with the same name and label values") != std::string::npos);
  REQUIRE(std::regex_search(metrics_before, errors, gathering_errors));
  CHECK(errors[1] != "0");

  const auto [log_after, metrics_after] = scrape(after);
  INFO(log_after);
  CHECK(log_after.find("collected before") == std::string::npos);
  CHECK(log_after.find("level=error") == std::string::npos);
  REQUIRE(std::regex_search(metrics_after, errors, gathering_errors));
  CHECK(errors[1] == "0");
  CHECK(metrics_after.find("node_textfile_scrape_error 0") != std::string::npos);
  // Each file's own families are served, the shared ones once (watch's values: 61 degrees, not doctor's 41).
  CHECK(metrics_after.find("gpuenv_doctor_verdict 0") != std::string::npos);
  CHECK(metrics_after.find("gpuenv_watch_info{") != std::string::npos);
  CHECK(metrics_after.find("gpuenv_gpu_temperature_celsius{UUID=\"" + std::string(k_uuid) + "\",gpu=\"0\"} 61") !=
        std::string::npos);
}
