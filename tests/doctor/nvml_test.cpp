// probe::read_nvml through the real dlopen path against the fake libnvidia-ml (tests/fake_nvml), driven by the
// fixtures in tests/fixtures/nvml/*.conf; and `gpuenv doctor` end to end with GPUENV_NVML_LIBRARY pointing at it.

#include "probe/nvml.hpp"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "doctor/rule_rows.hpp"
#include "doctor/rules.hpp"
#include "probe/link_counters.hpp"
#include "support/fake_nvml_library.hpp"
#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"
#include "support/text_files.hpp"
#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::FakeNvmlCopy;
using gpuenv::testing::fixture_path;
using gpuenv::testing::ScopedEnv;
using namespace std::chrono_literals;

/// read_nvml on the real system against the fake, with GPUENV_FAKE_NVML naming tests/fixtures/nvml/<conf>.
gpuenv::probe::GpuInventory read_fake(const std::string& conf, std::chrono::milliseconds timeout = 5s) {
  const ScopedEnv fixture("GPUENV_FAKE_NVML", fixture_path("nvml/" + conf));
  const FakeNvmlCopy library;
  auto real = gpuenv::system::make_real_system();
  return gpuenv::probe::read_nvml(*real, library.path(), timeout);
}

}  // namespace

TEST_CASE("fake NVML: a healthy 8x H100 node reads as eight GPUs with every fact", "[doctor][nvml]") {
  const auto inventory = read_fake("healthy-8xh100.conf");
  INFO(inventory.availability.reason);
  REQUIRE(inventory.availability.available);
  CHECK(inventory.availability.reason.empty());
  CHECK(inventory.availability.source.find("NVML (") == 0);
  CHECK(inventory.driver_version == "565.57.01");
  CHECK(inventory.nvml_version == "12.565.57.01");
  CHECK(inventory.cuda_driver_version == "12.7");
  REQUIRE(inventory.attached_gpus);
  CHECK(*inventory.attached_gpus == 8);
  REQUIRE(inventory.gpus.size() == 8);
  const char* buses[] = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
                         "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"};
  for (unsigned i = 0; i < 8; ++i) {
    const auto& gpu = inventory.gpus[i];
    INFO("GPU " << i);
    CHECK(gpu.index == i);
    CHECK(gpu.name == "NVIDIA H100 80GB HBM3");
    CHECK(gpu.uuid == "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i));
    CHECK(gpu.pci_bus_id == buses[i]);
    CHECK(gpu.memory_total_mib == std::optional<std::uint64_t>(81559));
    CHECK(gpu.memory_used_mib == std::optional<std::uint64_t>(1));
    CHECK(gpu.compute_capability == "9.0");
    CHECK(gpu.persistence_mode == std::optional<bool>(true));
    CHECK(gpu.mig_enabled == std::optional<bool>(false));
    CHECK(gpu.ecc_enabled == std::optional<bool>(true));
    CHECK(gpu.ecc_uncorrected_volatile == std::optional<std::uint64_t>(0));
    CHECK(gpu.ecc_uncorrected_aggregate == std::optional<std::uint64_t>(0));
    CHECK(gpu.remapped_rows_uncorrectable == std::optional<unsigned>(0));
    CHECK(gpu.remapped_rows_pending == std::optional<bool>(false));
    CHECK(gpu.remapped_rows_failure == std::optional<bool>(false));
    // Page retirement is not supported on Hopper: the fixture leaves it out, so NVML says "not supported".
    CHECK_FALSE(gpu.retired_pages_single_bit);
    CHECK_FALSE(gpu.retired_pages_pending);
    CHECK_FALSE(gpu.temperature_slowdown_c);
    REQUIRE(gpu.temperature_c);
    CHECK(*gpu.temperature_c >= 28);
    CHECK(*gpu.temperature_c <= 31);
    CHECK(gpu.power_limit_w == std::optional<double>(700.0));
    CHECK(gpu.utilization_percent == std::optional<double>(0));
    CHECK(gpu.throttle_reasons.empty());  // 0x1 (idle) is not a problem and is not listed
    CHECK(gpu.pcie_gen_current == std::optional<unsigned>(5));
    CHECK(gpu.pcie_gen_max == std::optional<unsigned>(5));
    CHECK(gpu.pcie_width_current == std::optional<unsigned>(16));
    CHECK(gpu.pcie_width_max == std::optional<unsigned>(16));
    CHECK(gpu.process_count == std::optional<unsigned>(0));
  }
  CHECK(inventory.gpus[0].power_draw_w == std::optional<double>(100.0));
  CHECK(inventory.gpus[7].power_draw_w == std::optional<double>(75.0));
}

TEST_CASE("fake NVML: NVLink state and error counters per GPU", "[doctor][nvml]") {
  const auto healthy = read_fake("healthy-8xh100.conf");
  REQUIRE(healthy.gpus.size() == 8);
  CHECK_FALSE(healthy.gpus[0].nvlink);  // the fixture reports no NVLink: NVML says "not supported"

  const auto inventory = read_fake("nvlink-link-down.conf");
  REQUIRE(inventory.gpus.size() == 8);
  REQUIRE(inventory.gpus[0].nvlink);
  CHECK(inventory.gpus[0].nvlink->active.size() == 18);
  CHECK(inventory.gpus[0].nvlink->inactive.empty());
  CHECK(inventory.gpus[0].nvlink->recovery_errors == std::optional<std::uint64_t>(2));
  CHECK(inventory.gpus[0].nvlink->crc_errors == std::optional<std::uint64_t>(0));
  REQUIRE(inventory.gpus[3].nvlink);
  CHECK(inventory.gpus[3].nvlink->active.size() == 16);
  CHECK(inventory.gpus[3].nvlink->inactive == std::vector<unsigned>{4, 9});
}

TEST_CASE("fake NVML: nvmlInit failures keep NVML's own error text and code", "[doctor][nvml]") {
  SECTION("18: driver/library version mismatch") {
    const auto inventory = read_fake("init-version-mismatch.conf");
    CHECK_FALSE(inventory.availability.available);
    CHECK(inventory.gpus.empty());
    CHECK(inventory.availability.reason.find("nvmlInit failed") != std::string::npos);
    CHECK(inventory.availability.reason.find("RM has detected an NVML/RM version mismatch") != std::string::npos);
    CHECK(inventory.availability.reason.find("(NVML error 18)") != std::string::npos);
  }
  SECTION("9: driver not loaded") {
    const auto inventory = read_fake("init-driver-not-loaded.conf");
    CHECK_FALSE(inventory.availability.available);
    CHECK(inventory.gpus.empty());
    CHECK(inventory.availability.reason.find("Driver Not Loaded") != std::string::npos);
    CHECK(inventory.availability.reason.find("(NVML error 9)") != std::string::npos);
  }
}

TEST_CASE("fake NVML: a lost GPU stays in the list as inaccessible", "[doctor][nvml]") {
  const auto inventory = read_fake("gpu-lost.conf");
  REQUIRE(inventory.availability.available);
  REQUIRE(inventory.attached_gpus);
  CHECK(*inventory.attached_gpus == 8);
  REQUIRE(inventory.gpus.size() == 8);
  const auto& lost = inventory.gpus[3];
  CHECK(lost.index == 3);
  CHECK(lost.name == "(inaccessible)");
  CHECK(lost.uuid.empty());
  CHECK(lost.pci_bus_id.empty());
  CHECK_FALSE(lost.memory_total_mib);
  CHECK_FALSE(lost.temperature_c);
  for (unsigned i : {0u, 1u, 2u, 4u, 5u, 6u, 7u}) {
    INFO("GPU " << i);
    CHECK(inventory.gpus[i].name == "NVIDIA H100 80GB HBM3");
    CHECK(inventory.gpus[i].index == i);
  }
  CHECK(inventory.gpus[4].pci_bus_id == "00000000:9A:00.0");
}

TEST_CASE("fake NVML: a hung nvmlInit is reported at the timeout, not waited for", "[doctor][nvml][system-test]") {
  const auto start = std::chrono::steady_clock::now();
  const auto inventory = read_fake("hang-long.conf", 1000ms);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 900ms);
  // The fixture hangs for 20 s: a reader that waited for the call would take that long; half of it leaves a loaded
  // machine's ASan build ample time for the 1 s timeout.
  CHECK(elapsed < 10s);
  CHECK_FALSE(inventory.availability.available);
  CHECK(inventory.gpus.empty());
  CHECK(inventory.availability.reason.find("did not answer within 1000 ms") != std::string::npos);
  CHECK(inventory.availability.reason.find("hung") != std::string::npos);
}

TEST_CASE("fake NVML: a library that cannot be loaded says so", "[doctor][nvml]") {
  auto real = gpuenv::system::make_real_system();
  const auto inventory = gpuenv::probe::read_nvml(*real, fixture_path("nvml/no-such-libnvidia-ml.so"), 1s);
  CHECK_FALSE(inventory.availability.available);
  CHECK(inventory.availability.reason.find("cannot load") == 0);
}

namespace {

/// The child's environment for a live doctor run against the fake: PATH and LD_LIBRARY_PATH are removed so that the
/// run is hermetic (no nvidia-smi, dmesg or CUDA toolkit of the machine running the tests).
gpuenv::testing::EnvironmentChanges fake_nvml_environment(const FakeNvmlCopy& library, const std::string& conf) {
  return {{"GPUENV_NVML_LIBRARY", library.path()},
          {"GPUENV_FAKE_NVML", fixture_path("nvml/" + conf)},
          {"PATH", std::nullopt},
          {"LD_LIBRARY_PATH", std::nullopt}};
}

}  // namespace

TEST_CASE("doctor with GPUENV_NVML_LIBRARY at the fake sees eight H100s", "[doctor][nvml][e2e]") {
  const FakeNvmlCopy library;
  const auto result =
      gpuenv::testing::run_gpuenv({"doctor", "--quick", "--json", "--expect-gpus", "8", "--timeout", "5"},
                                  fake_nvml_environment(library, "healthy-8xh100.conf"));
  INFO("stdout: " << result.out);
  INFO("stderr: " << result.err);
  // The verdict depends on the machine the test runs on (its driver, disk, kernel log); the GPUs do not.
  CHECK((result.exit_code == 0 || result.exit_code == 1));
  const auto json = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  CHECK(json.at("schema") == 1);
  REQUIRE(json.at("gpus").size() == 8);
  for (const auto& gpu : json.at("gpus")) {
    CHECK(gpu.at("name") == "NVIDIA H100 80GB HBM3");
    CHECK(gpu.at("memory_mib") == 81559);
    CHECK(gpu.at("compute_capability") == "9.0");
  }
  CHECK(json.at("gpus")[7].at("pci_bus_id") == "00000000:DB:00.0");
  CHECK(json.at("gpu_source").get<std::string>().find("NVML (") == 0);
  bool count_checked = false;
  for (const auto& finding : json.at("findings")) {
    if (finding.at("id") != "gpu.count") continue;
    count_checked = true;
    CHECK(finding.at("status") == "pass");
    CHECK(finding.at("message").get<std::string>().find("8 GPUs: 8x NVIDIA H100 80GB HBM3") == 0);
  }
  CHECK(count_checked);
}

TEST_CASE("doctor with a fake NVML whose GPU 3 lost two NVLinks fails gpu.nvlink naming it", "[doctor][nvml][e2e]") {
  const FakeNvmlCopy library;
  const auto result = gpuenv::testing::run_gpuenv({"doctor", "--quick", "--json", "--timeout", "5"},
                                                  fake_nvml_environment(library, "nvlink-link-down.conf"));
  INFO("stdout: " << result.out);
  CHECK(result.exit_code == 1);
  const auto json = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  bool nvlink_checked = false;
  for (const auto& finding : json.at("findings")) {
    if (finding.at("id") != "gpu.nvlink") continue;
    nvlink_checked = true;
    CHECK(finding.at("status") == "fail");
    CHECK(finding.at("message").get<std::string>().find(
              "GPU 3 (00000000:5D:00.0): 16 of 18 NVLinks active (down: link 4, 9) while another NVIDIA H100 80GB "
              "HBM3 here has 18") == 0);
  }
  CHECK(nvlink_checked);
}

TEST_CASE("doctor with a hung fake NVML returns within its --timeout", "[doctor][nvml][e2e][system-test]") {
  const FakeNvmlCopy library;
  const auto start = std::chrono::steady_clock::now();
  const auto result = gpuenv::testing::run_gpuenv({"doctor", "--quick", "--json", "--timeout", "1"},
                                                  fake_nvml_environment(library, "hang-long.conf"));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  INFO("stdout: " << result.out);
  INFO("stderr: " << result.err);
  CHECK((result.exit_code == 0 || result.exit_code == 1));
  const auto json = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  // NVML gives up after 1 s (the fixture hangs for 20 s) and the process exits without joining the stuck call; with
  // no PATH there is no nvidia-smi to fall back to.
  CHECK(json.at("gpus").empty());
  CHECK(json.at("gpu_source").is_null());
  CHECK(elapsed < 10s);
}

TEST_CASE("doctor without --quick folds the smoke tests into its findings", "[doctor][nvml][e2e]") {
  const FakeNvmlCopy library;
  auto environment = fake_nvml_environment(library, "healthy-8xh100.conf");
  // No libcuda at this path: the smoke tests must say so as a failing finding of doctor's own report.
  environment.push_back({"GPUENV_CUDA_LIBRARY", std::string("/nonexistent/libcuda.so.1")});
  const auto result = gpuenv::testing::run_gpuenv({"doctor", "--json", "--timeout", "5"}, environment);
  INFO("stdout: " << result.out);
  const auto json = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  CHECK(result.exit_code == 1);
  CHECK(json.at("verdict") == "NOT READY");
  const auto& findings = json.at("findings");
  const bool smoke_failed = std::any_of(findings.begin(), findings.end(), [](const nlohmann::json& f) {
    return f.at("id") == "smoke.driver" && f.at("status") == "fail";
  });
  CHECK(smoke_failed);
}

// ---- fabric registration and link counters -------------------------------------------------------------------

TEST_CASE("fake NVML: fabric registration through GetGpuFabricInfoV v3, v2 and the v1 call", "[doctor][nvml][fabric]") {
  using gpuenv::probe::GpuFabricInfo;
  const auto v3 = read_fake("fabric-8xh100.conf");
  REQUIRE(v3.gpus.size() == 8);
  REQUIRE(v3.gpus[0].fabric);
  CHECK(v3.gpus[0].fabric->state == GpuFabricInfo::State::completed);
  CHECK(v3.gpus[0].fabric->status_ok);
  CHECK(v3.gpus[0].fabric->status == "Success");
  CHECK(v3.gpus[0].fabric->health_summary == "Healthy");
  CHECK(v3.gpus[0].fabric->cluster_uuid == "00000000-0000-0000-0000-000000000000");
  CHECK(v3.gpus[0].fabric->source == "nvmlDeviceGetGpuFabricInfoV");
  CHECK(v3.gpus[2].fabric->state == GpuFabricInfo::State::in_progress);

  const auto v2 = read_fake("fabric-v2-driver.conf");  // v3 refused: the v2 structure, no health summary
  REQUIRE(v2.gpus[0].fabric);
  CHECK(v2.gpus[0].fabric->state == GpuFabricInfo::State::completed);
  CHECK(v2.gpus[0].fabric->health_summary.empty());
  CHECK(v2.gpus[0].fabric->source == "nvmlDeviceGetGpuFabricInfoV");

  const auto v1 = read_fake("fabric-v1-driver.conf");
  REQUIRE(v1.gpus[0].fabric);
  CHECK(v1.gpus[0].fabric->state == GpuFabricInfo::State::completed);
  CHECK(v1.gpus[0].fabric->source == "nvmlDeviceGetGpuFabricInfo");

  const auto healthy = read_fake("healthy-8xh100.conf");  // no fabric keys: NVML says "not supported"
  REQUIRE(healthy.gpus[0].fabric);
  CHECK(healthy.gpus[0].fabric->state == GpuFabricInfo::State::not_supported);
}

TEST_CASE("fake NVML: link counters read twice, each with its own nvmlInit, grow between", "[doctor][nvml][fabric]") {
  const ScopedEnv fixture("GPUENV_FAKE_NVML", fixture_path("nvml/fabric-8xh100.conf"));
  const FakeNvmlCopy library;
  auto real = gpuenv::system::make_real_system();
  // doctor's order: the inventory (nvmlInit 1), then the run's first and last readings (2 and 3).
  const auto inventory = gpuenv::probe::read_nvml(*real, library.path(), 5s);
  REQUIRE(inventory.gpus.size() == 8);
  REQUIRE(inventory.gpus[1].nvlink);
  const auto start = gpuenv::probe::read_link_counters(*real, {library.path(), 5s});
  REQUIRE(start.nvml);
  REQUIRE(start.gpus.size() == 8);
  CHECK(start.gpus[0].nvlinks.size() == 18);  // links past the GPU's 18 answer INVALID_ARGUMENT and are left out
  CHECK(start.gpus[5].pcie_replays == std::optional<std::uint64_t>(107));
  CHECK(start.gpus[5].pcie_gen == std::optional<unsigned>(5));
  CHECK(start.gpus[1].nvlinks[3].replay == std::optional<std::uint64_t>(6));
  CHECK(start.gpus[6].nvlinks[11].active);
  const auto end = gpuenv::probe::read_link_counters(*real, {library.path(), 5s});
  REQUIRE(end.nvml);
  const auto growth = gpuenv::probe::link_counter_growth(start, end);
  REQUIRE(growth.gpus.size() == 8);
  CHECK(growth.gpus[5].pcie_replays == std::optional<std::uint64_t>(100));
  CHECK(growth.gpus[1].nvlinks[3].replay == std::optional<std::uint64_t>(2));
  CHECK(growth.gpus[0].nvlinks[0].replay == std::optional<std::uint64_t>(0));
  CHECK(growth.gpus[6].nvlinks[11].active_before);
  CHECK_FALSE(growth.gpus[6].nvlinks[11].active_after);
}

// A B200 refuses the older NVLink counters (nvml.h NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY: "This is unsupported for
// Blackwell+. Please use NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_*"; NVIDIA/go-nvml gen/nvml/nvml.h @ 2f9e261f): before
// NVLink5's field values were read, doctor's readings of such a GPU held no error count at all. The fake's NVLink5
// mode (smoke_nvlink5 = 1) with counters of their own per link (nvlink5_<name>_link<N>, growing per nvmlInit session),
// so that a reader asking for link 0 everywhere, or putting one link's counts on another, fails here.
TEST_CASE("fake NVML: a B200's NVLink5 counters per link, read at doctor's start and end, grow on their own links",
          "[doctor][nvml][fabric]") {
  const gpuenv::testing::TempDir dir("nvlink5");
  std::string text = gpuenv::testing::read_text(fixture_path("nvml/fabric-8xh100.conf"));
  const auto add_to_gpu = [&text](unsigned gpu, const std::string& keys) {
    std::size_t at = 0;
    for (unsigned i = 0; i <= gpu; ++i) at = text.find("[gpu]", at) + 5;
    text.insert(at, "\n" + keys);
  };
  add_to_gpu(4, "smoke_nvlink5 = 1\nnvlink5_failed_recoveries_link17 = 0\nnvlink5_failed_recoveries_link17_rise = 1");
  // The NVLink ECC data error total (field 160): rising on the B200 (GPU 4) and on an H100 (GPU 0) that answers it
  // too, which is not judged (no NVLink5 rate read).
  add_to_gpu(4, "nvlink_ecc_errors = 2\nnvlink_ecc_errors_rise = 1");
  add_to_gpu(0, "nvlink_ecc_errors = 2\nnvlink_ecc_errors_rise = 3");
  add_to_gpu(1,
             "smoke_nvlink5 = 1\nnvlink5_symbol_errors_link3 = 4\nnvlink5_symbol_errors_link3_rise = 2\n"
             "nvlink5_recoveries_link9 = 1\nnvlink5_recoveries_link9_rise = 1\nnvlink5_symbol_errors_link0 = 7");
  const ScopedEnv fixture("GPUENV_FAKE_NVML", dir.write("b200.conf", text));
  const FakeNvmlCopy library;
  auto real = gpuenv::system::make_real_system();
  // doctor's order: the inventory (nvmlInit 1), then the run's first and last readings (2 and 3).
  const auto inventory = gpuenv::probe::read_nvml(*real, library.path(), 5s);
  REQUIRE(inventory.gpus.size() == 8);
  REQUIRE(inventory.gpus[1].nvlink);
  CHECK_FALSE(inventory.gpus[1].nvlink->replay_errors);  // refused, as on a real B200: unknown, not 0
  const auto summed = [](const std::vector<gpuenv::probe::NvLink5Counter>& counters, unsigned field) {
    for (const auto& counter : counters)
      if (counter.field == field) return std::optional<std::uint64_t>(counter.value);
    return std::optional<std::uint64_t>();
  };
  CHECK(summed(inventory.gpus[1].nvlink->nvlink5, 221) == std::optional<std::uint64_t>(4 + 7));  // links 3 and 0
  CHECK(summed(inventory.gpus[1].nvlink->nvlink5, 213) == std::optional<std::uint64_t>(1));
  CHECK(inventory.gpus[0].nvlink->nvlink5.empty());  // an H100: the older counters, and no NVLink5 call
  CHECK(inventory.gpus[0].nvlink->replay_errors == std::optional<std::uint64_t>(0));

  const auto start = gpuenv::probe::read_link_counters(*real, {library.path(), 5s});
  const auto end = gpuenv::probe::read_link_counters(*real, {library.path(), 5s});
  REQUIRE(start.nvml);
  REQUIRE(end.nvml);
  REQUIRE(start.gpus.size() == 8);
  REQUIRE(start.gpus[1].nvlinks.size() == 18);
  CHECK(summed(start.gpus[1].nvlinks[3].nvlink5, 221) == std::optional<std::uint64_t>(4 + 2));
  CHECK(summed(start.gpus[1].nvlinks[0].nvlink5, 221) == std::optional<std::uint64_t>(7));
  CHECK(summed(start.gpus[1].nvlinks[5].nvlink5, 221) == std::optional<std::uint64_t>(0));
  CHECK(start.gpus[1].nvlink5_symbol_ber == std::optional<std::uint64_t>(73710));  // over all links
  CHECK_FALSE(start.gpus[0].nvlink5_symbol_ber);
  CHECK(start.gpus[4].nvlink5_ecc_errors == std::optional<std::uint64_t>(2 + 1));  // session 2: one rise
  CHECK(start.gpus[1].nvlink5_ecc_errors == std::optional<std::uint64_t>(0));      // a B200 with none
  CHECK_FALSE(start.gpus[0].nvlink5_ecc_errors);                                   // answered by the H100, dropped
  const auto growth = gpuenv::probe::link_counter_growth(start, end);
  REQUIRE(growth.gpus.size() == 8);
  CHECK(summed(growth.gpus[1].nvlinks[3].nvlink5, 221) == std::optional<std::uint64_t>(2));
  CHECK(summed(growth.gpus[1].nvlinks[0].nvlink5, 221) == std::optional<std::uint64_t>(0));
  CHECK(summed(growth.gpus[1].nvlinks[9].nvlink5, 213) == std::optional<std::uint64_t>(1));
  CHECK(summed(growth.gpus[4].nvlinks[17].nvlink5, 214) == std::optional<std::uint64_t>(1));
  CHECK(summed(growth.gpus[4].nvlinks[16].nvlink5, 214) == std::optional<std::uint64_t>(0));
  CHECK(growth.gpus[4].nvlink5_ecc_errors == std::optional<std::uint64_t>(1));
  CHECK(growth.gpus[1].nvlink5_ecc_errors == std::optional<std::uint64_t>(0));
  CHECK_FALSE(growth.gpus[0].nvlink5_ecc_errors);

  // doctor's judgement of the two readings, as it runs after its end reading.
  gpuenv::probe::HostFacts facts;
  facts.counters_start = start;
  facts.counters_end = end;
  const auto findings = gpuenv::doctor::evaluate_link_counters(facts, gpuenv::testing::doctor_rules::thresholds());
  const auto errors = std::find_if(findings.begin(), findings.end(),
                                   [](const gpuenv::report::Finding& f) { return f.id == "nvlink.errors"; });
  REQUIRE(errors != findings.end());
  INFO(errors->message);
  CHECK(errors->status == gpuenv::report::Status::fail);
  CHECK(errors->message.find("GPU 1 (00000000:2A:00.0) link 3: 2 symbol errors") != std::string::npos);
  CHECK(errors->message.find("GPU 1 (00000000:2A:00.0) link 9: 1 successful link recoveries") != std::string::npos);
  CHECK(errors->message.find("GPU 4 (00000000:9A:00.0) link 17: 1 failed link recoveries") != std::string::npos);
  CHECK(errors->message.find("link 0: ") == std::string::npos);
  CHECK(errors->message.find("GPU 4 (00000000:9A:00.0): 1 NVLink ECC data errors (all links)") != std::string::npos);
  CHECK(errors->message.find("GPU 0 ") == std::string::npos);  // the H100's rising field 160: not judged
}

TEST_CASE("doctor end to end on the fake NVML: fabric state and link rates in the JSON report",
          "[doctor][nvml][fabric][system-test]") {
  const FakeNvmlCopy library;
  const auto result = gpuenv::testing::run_gpuenv({"doctor", "--quick", "--json", "--timeout", "20"},
                                                  fake_nvml_environment(library, "fabric-8xh100.conf"));
  INFO("stdout: " << result.out);
  const auto json = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  CHECK(result.exit_code == 1);
  std::map<std::string, std::string> status;
  std::map<std::string, std::string> message;
  for (const auto& f : json.at("findings")) {
    status[f.at("id")] = f.at("status");
    message[f.at("id")] = f.at("message");
  }
  CHECK(status["fabric.state"] == "fail");
  CHECK(message["fabric.state"].find("GPU 2 (00000000:3A:00.0): NVLink fabric state In Progress") != std::string::npos);
  CHECK(status["nvlink.errors"] == "fail");
  CHECK(message["nvlink.errors"].find("GPU 1 (00000000:2A:00.0) link 3: 2 replay errors") != std::string::npos);
  CHECK(message["nvlink.errors"].find("GPU 6 (00000000:BA:00.0) link 11 went down during the run") !=
        std::string::npos);
  CHECK(status["pcie.replay"] == "fail");
  CHECK(message["pcie.replay"].find("100 PCIe replays") != std::string::npos);
}
