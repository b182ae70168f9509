// What NVML says around a run (issue 23): a GPU another process uses is not judged on its performance (item 4), a MIG
// slice is not an OK for its whole GPU (item 5), the level-2 counters DCGM's diagnostic watches (item 9: PCIe replays,
// NVLink replay/recovery/CRC errors and link state) and the GPU count. Driven through the fake libcuda and the fake
// libnvidia-ml (tests/fake_nvml, its "smoke" keys).

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "smoke/fake_cuda_fixture.hpp"
#include "smoke/internal/nvml_monitor.hpp"
#include "smoke/smoke.hpp"

using namespace gpuenv::smoke;
using namespace gpuenv::smoke::testing;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::report::Verdict;

namespace {

/// Sets an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : m_name(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(m_name); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* m_name;
};

GpuUsage usage(std::vector<unsigned> pids, std::optional<unsigned> utilization = 0) {
  return GpuUsage{std::move(pids), utilization};
}

}  // namespace

TEST_CASE("smoke: other processes on the GPU, before or during the run, and this one seen from a container",
          "[smoke][nvml]") {
  const unsigned self = 1000;
  CHECK_FALSE(busy_reason(usage({}), usage({self}), self));  // only this process
  CHECK_FALSE(busy_reason(usage({}), usage({77}), self));    // this process, host PID in a container
  CHECK(*busy_reason(usage({4321}), usage({4321, self}), self) == "GPU in use by PID 4321");
  CHECK(*busy_reason(usage({}), usage({self, 555}), self) == "GPU in use by PID 555");  // arrived during the run
  CHECK(*busy_reason(usage({}), usage({77, 555}), self) == "GPU in use by PID 77, 555");
  CHECK(busy_reason(usage({}, 40), usage({self}), self)->find("40% utilisation before the run") != std::string::npos);
  CHECK_FALSE(busy_reason(GpuUsage{}, GpuUsage{}, self));  // NVML cannot say: nothing to go on
}

TEST_CASE("smoke: a GPU another process uses gets its performance findings skipped, not failed", "[smoke][nvml]") {
  // Without NVML's word, the fake H100's slow cuBLAS SGEMM fails DCGM's floor (a hardware remedy). With PID 4321 on
  // the GPU before the run, every performance judgement is a skip naming it; wrong results still fail.
  const SmokeReport idle = run_with_nvml("smoke_pids = \n", "elapsed_ms = 0.001\n", small_options());
  CHECK(find(idle.devices.at(0).findings, "smoke.cublas_sgemm_fp32")->status == Status::fail);
  CHECK(find(idle.devices.at(0).findings, "smoke.busy") == nullptr);

  const SmokeReport busy =
      run_with_nvml("smoke_pids = 4321\n", "elapsed_ms = 0.001\ncorrupt_stream = 1\n", small_options());
  const DeviceResult& gpu = busy.devices.at(0);
  const Finding* sgemm = find(gpu.findings, "smoke.cublas_sgemm_fp32");
  REQUIRE(sgemm != nullptr);
  CHECK(sgemm->status == Status::skip);
  CHECK(sgemm->message.find("; not judged: GPU in use by PID 4321") != std::string::npos);
  CHECK(sgemm->remedy.empty());
  CHECK(find(gpu.findings, "smoke.d2d")->status == Status::skip);
  CHECK(find(gpu.findings, "smoke.d2d")->message.find("not judged: GPU in use by PID 4321") != std::string::npos);
  // Corrupted data is no busy GPU's doing: the stream copy's wrong words still fail.
  CHECK(find(gpu.findings, "smoke.memory_bandwidth")->status == Status::fail);
  REQUIRE(find(gpu.findings, "smoke.busy") != nullptr);
  CHECK(find(gpu.findings, "smoke.busy")->message.find("GPU in use by PID 4321") == 0);

  // A process that arrives during the run (second read), beside this one.
  const SmokeReport arrived = run_with_nvml("smoke_pids = \nsmoke_pids_self_later = 1\nsmoke_pids_later = 555\n",
                                            "elapsed_ms = 0.001\n", small_options());
  CHECK(find(arrived.devices.at(0).findings, "smoke.cublas_sgemm_fp32")->message.find("GPU in use by PID 555") !=
        std::string::npos);
  // Only this process, seen with another PID from a container: not busy.
  const SmokeReport container =
      run_with_nvml("smoke_pids = \nsmoke_pids_alias_later = 99\n", "elapsed_ms = 0.001\n", small_options());
  CHECK(find(container.devices.at(0).findings, "smoke.busy") == nullptr);
}

TEST_CASE("smoke: one MIG instance of several is never an OK for the whole GPU", "[smoke][nvml]") {
  const std::string slice = "name = NVIDIA A100-SXM4-40GB MIG 1g.5gb\nelapsed_ms = 0.01\n";
  const SmokeReport three = run_with_nvml("mig_mode = 1\nsmoke_mig_instances = 3\n", slice, small_options());
  const Finding* mig = find(three.devices.at(0).findings, "smoke.mig");
  REQUIRE(mig != nullptr);
  CHECK(mig->status == Status::warn);
  CHECK(mig->message.find("1 of 3 MIG instances tested: this process sees no other instance of this GPU") == 0);
  CHECK(mig->remedy.find("CUDA_VISIBLE_DEVICES=<uuid> gpuenv smoke (instances: MIG-fake-0-0, MIG-fake-0-1, "
                         "MIG-fake-0-2)") != std::string::npos);
  CHECK(three.verdict != Verdict::ok);
  // The operator picked this instance: what was asked for was tested.
  {
    const ScopedEnv chosen("CUDA_VISIBLE_DEVICES", "MIG-fake-0-1");
    const SmokeReport picked = run_with_nvml("mig_mode = 1\nsmoke_mig_instances = 3\n", slice, small_options());
    const Finding* one = find(picked.devices.at(0).findings, "smoke.mig");
    CHECK(one->status == Status::skip);
    CHECK(one->message.find("CUDA_VISIBLE_DEVICES selects it, the GPU's other 2 instances are not tested") !=
          std::string::npos);
  }
  // The only instance: nothing else to test.
  const SmokeReport only = run_with_nvml("mig_mode = 1\nsmoke_mig_instances = 1\n", slice, small_options());
  CHECK(find(only.devices.at(0).findings, "smoke.mig")->status == Status::skip);
  // From R570 CUDA shows one device per GPU instance (MIG user guide, "CUDA Device Enumeration"): all three
  // instances of the GPU are tested side by side, which is no "1 of 3".
  const SmokeReport all = run_with_nvml("mig_mode = 1\nsmoke_mig_instances = 3\n",
                                        "device_count = 3\nmig_shared_bus = 1\n" + slice, small_options());
  REQUIRE(all.devices.size() == 3);
  for (const DeviceResult& instance : all.devices) {
    const Finding* covered = find(instance.findings, "smoke.mig");
    REQUIRE(covered != nullptr);
    CHECK(covered->status == Status::skip);
    CHECK(covered->message.find("all 3 MIG instances of GPU") == 0);
  }
  const SmokeReport two = run_with_nvml("mig_mode = 1\nsmoke_mig_instances = 3\n",
                                        "device_count = 2\nmig_shared_bus = 1\n" + slice, small_options());
  CHECK(find(two.devices.at(1).findings, "smoke.mig")->status == Status::warn);
  CHECK(find(two.devices.at(1).findings, "smoke.mig")->message.find("2 of 3 MIG instances of GPU") == 0);
  // An 8-GPU node in MIG mode (doctor passes the instance type's 8): before R570 CUDA shows one instance, from R570
  // one per GPU instance (MIG user guide, "CUDA Device Enumeration"): its count is no GPU count either way.
  SmokeOptions eight = small_options();
  eight.expect_gpus = 8;
  const SmokeReport node = run_with_nvml("mig_mode = 1\nsmoke_mig_instances = 1\n", slice, eight);
  const Finding* count = find(node.findings, "smoke.gpu_count");
  REQUIRE(count != nullptr);
  CHECK(count->status == Status::skip);
  CHECK(count->message.find("1 CUDA devices visible, 8 GPUs expected: MIG instances are visible") == 0);
  CHECK(node.verdict != Verdict::not_ok);
}

TEST_CASE("smoke: level-2 counters before and after the run, judged as DCGM's diagnostic and health watch do",
          "[smoke][nvml]") {
  FabricCounters before;
  before.pcie_replays = 10;
  for (unsigned link = 0; link < 18; ++link) before.nvlinks.push_back(NvLinkCounters{link, true, 0, 0, 0, 0});
  const Finding clean = judge_link_errors(before, before, 10, true);
  CHECK(clean.status == Status::pass);
  CHECK(clean.message == "0 PCIe replays during the run (DCGM fails above 80); all 18 NVLinks active");
  // DCGM pcie plugin: "Maximum PCIe replays allowed per device while the plugin runs" (max_pcie_replays 80).
  FabricCounters replays = before;
  replays.pcie_replays = 90;
  CHECK(judge_link_errors(before, replays, 10, true).status == Status::pass);  // 80: allowed
  replays.pcie_replays = 91;
  const Finding many = judge_link_errors(before, replays, 10, true);
  CHECK(many.status == Status::fail);
  CHECK(many.message.find("81 PCIe replays during the run (more than DCGM's 80 per run)") == 0);
  // DCGM health NVLINK: a replay or recovery error fails (DCGM_LIMIT_MAX_NVLINK_ERROR 1).
  FabricCounters recovery = before;
  recovery.nvlinks[4].recovery = 1;
  const Finding recovered = judge_link_errors(before, recovery, 10, true);
  CHECK(recovered.status == Status::fail);
  CHECK(recovered.message.find("NVLink link 4: 1 recovery errors") == 0);
  // CRC errors: fail at 100 a second, warn below (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR 100.0).
  FabricCounters crc = before;
  crc.nvlinks[2].crc_flit = 50;
  CHECK(judge_link_errors(before, crc, 10, true).status == Status::warn);  // 5 a second
  crc.nvlinks[2].crc_flit = 2000;
  CHECK(judge_link_errors(before, crc, 10, true).status == Status::fail);  // 200 a second
  // DCGM rates each CRC field on its own (DcgmHealthWatch.cpp MonitorNVLink4Fields: CRC_FLIT_ERROR_TOTAL and
  // CRC_DATA_ERROR_TOTAL are separate fields, each per second against 100): 60 flit + 60 data a second warns.
  FabricCounters both_kinds = before;
  both_kinds.nvlinks[2].crc_flit = 600;
  both_kinds.nvlinks[3].crc_data = 600;
  CHECK(judge_link_errors(before, both_kinds, 10, true).status == Status::warn);
  both_kinds.nvlinks[5].crc_data = 500;  // data: 110 a second over the links
  CHECK(judge_link_errors(before, both_kinds, 10, true).status == Status::fail);
  // A link lost during the run fails anywhere; one inactive from the start fails only where aznhc checks link state
  // with a verified floor (an 8-GPU NVSwitch board), else it is counted: NVL bridges leave links unused by design.
  FabricCounters down = before;
  down.nvlinks[7].active = false;
  CHECK(judge_link_errors(before, down, 10, false).status == Status::fail);
  CHECK(judge_link_errors(before, down, 10, false).message.find("NVLink 7 went down during the run") == 0);
  FabricCounters inactive_before = down;
  CHECK(judge_link_errors(inactive_before, down, 10, true).status == Status::fail);
  const Finding counted = judge_link_errors(inactive_before, down, 10, false);
  CHECK(counted.status == Status::pass);
  CHECK(counted.message.find("NVLink 7 inactive (17 of 18 active), not judged on this board") != std::string::npos);
  CHECK(judge_link_errors(FabricCounters{}, FabricCounters{}, 10, true).status == Status::skip);

  // Through the runner: read before the first step and after the peer copies, through the fake NVML.
  const SmokeReport report = run_with_nvml(
      "nvlinks = 18\nsmoke_pcie_replays = 3\nsmoke_pcie_replays_rise = 100\nsmoke_nvlink_down_later = 5\n",
      "elapsed_ms = 0.001\n", small_options());
  const Finding* errors = find(report.devices.at(0).findings, "smoke.link_errors");
  REQUIRE(errors != nullptr);
  CHECK(errors->status == Status::fail);
  CHECK(errors->message.find("100 PCIe replays during the run") != std::string::npos);
  CHECK(errors->message.find("NVLink 5 went down during the run") != std::string::npos);
}

// Blackwell (NVLink5): nvml.h marks the replay/recovery/CRC counters "unsupported for Blackwell+"; DCGM 4.6.0's
// health watch reads the NVML_FI_DEV_NVLINK_COUNT_* fields instead (modules/health/DcgmHealthWatch.cpp
// MonitorNVLink5Fields): any rise of an error counter fails (DCGM_LIMIT_MAX_NVLINK_ERROR 1), an effective bit error
// rate above 1e-12 fails (common/DcgmUtilities.cpp IsEffectiveBerThresholdExceeded: (1,12) and (10,13) pass, (2,12),
// (11,13) and (1,11) fail), and a symbol bit error rate above the all-links floor 15e-238 fails (its tests: raw 73710
// passes, (15,237) fails). Encoding (nvml.h NVML_NVLINK_ERROR_COUNTER_BER_GET): bits 0-7 exponent, 8-11 mantissa.
TEST_CASE("smoke: NVLink5 counters and bit error rates, judged as DCGM's MonitorNVLink5Fields", "[smoke][nvml]") {
  const auto ber = [](unsigned mantissa, unsigned exponent) -> unsigned long long {
    return (static_cast<unsigned long long>(mantissa) << 8) | exponent;
  };
  FabricCounters before;
  for (unsigned link = 0; link < 18; ++link) {
    NvLinkCounters counters{link, true, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
    counters.nvlink5 = {{221, 7}, {213, 0}, {219, 0}, {214, 0}};
    before.nvlinks.push_back(counters);
  }
  before.nvlink5_effective_ber = 0xfff;  // NVML's zero: 15e-255
  before.nvlink5_symbol_ber = 73710;     // DCGM's healthy Blackwell aggregate (bit 16 set, masked)
  const Finding clean = judge_link_errors(before, before, 10, true);
  CHECK(clean.status == Status::pass);
  CHECK(clean.message == "all 18 NVLinks active");

  FabricCounters symbol = before;
  symbol.nvlinks[3].nvlink5[0].value = 9;
  const Finding symbols = judge_link_errors(before, symbol, 10, true);
  CHECK(symbols.status == Status::fail);
  CHECK(symbols.message.find("NVLink link 3: 2 symbol errors") == 0);
  // Link recoveries as DCGM's MonitorNVLinkErrorFields splits them: a successful one warns, a failed one fails.
  FabricCounters recovered = before;
  recovered.nvlinks[17].nvlink5[1].value = 1;
  const Finding warned = judge_link_errors(before, recovered, 10, true);
  CHECK(warned.status == Status::warn);
  CHECK(warned.message.find("link 17: 1 successful link recoveries") != std::string::npos);
  FabricCounters failed = before;
  failed.nvlinks[17].nvlink5[3].value = 1;
  CHECK(judge_link_errors(before, failed, 10, true).status == Status::fail);
  // Effective errors are shown, not judged (gpuenv's policy): the effective bit error rate, allowed up to 1e-12
  // (DCGM 4.6.0 common/DcgmUtilities.cpp IsEffectiveBerThresholdExceeded), judges the link.
  FabricCounters effective = before;
  effective.nvlinks[2].nvlink5[2].value = 40;
  const Finding shown = judge_link_errors(before, effective, 10, true);
  CHECK(shown.status == Status::pass);
  CHECK_THAT(shown.message, Catch::Contains("NVLink link 2: 40 effective errors (not judged"));

  struct Case {
    const char* what;
    unsigned long long effective, symbol;
    Status expected;
  };
  const Case cases[] = {
      {"effective 1e-12: at the limit", ber(1, 12), 73710, Status::pass},
      {"effective 10e-13: at the limit", ber(10, 13), 73710, Status::pass},
      {"effective raw 0: a zero rate", 0, 73710, Status::pass},
      {"effective 2e-12", ber(2, 12), 73710, Status::fail},
      {"effective 11e-13", ber(11, 13), 73710, Status::fail},
      {"effective 1e-11", ber(1, 11), 73710, Status::fail},
      {"symbol 15e-238 (no bit 16)", 0xfff, ber(15, 238), Status::pass},
      {"symbol mantissa 0", 0xfff, ber(0, 5), Status::pass},
      {"symbol 15e-237", 0xfff, ber(15, 237), Status::fail},
      {"symbol 1e-13", 0xfff, ber(1, 13), Status::fail},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    FabricCounters after = before;
    after.nvlink5_effective_ber = c.effective;
    after.nvlink5_symbol_ber = c.symbol;
    CHECK(judge_link_errors(before, after, 10, true).status == c.expected);
  }

  // Through the runner and the fake NVML: a B200 whose link 0 gains 4 symbol errors during the run.
  const SmokeReport report = run_with_nvml(
      "nvlinks = 18\nsmoke_nvlink5 = 1\nsmoke_nvlink5_symbol_errors = 10\nsmoke_nvlink5_symbol_errors_rise = 4\n",
      "elapsed_ms = 0.001\n", small_options());
  const Finding* errors = find(report.devices.at(0).findings, "smoke.link_errors");
  REQUIRE(errors != nullptr);
  CHECK(errors->status == Status::fail);
  CHECK(errors->message.find("NVLink link 0: 4 symbol errors") == 0);
  CHECK(errors->message.find("link 1:") == std::string::npos);  // link 0's counter, read on link 0 only
  // The same GPU with nothing rising: the older counters answer "not supported", the NVLink5 ones judge it.
  const SmokeReport healthy =
      run_with_nvml("nvlinks = 18\nsmoke_nvlink5 = 1\n", "elapsed_ms = 0.001\n", small_options());
  const Finding* quiet = find(healthy.devices.at(0).findings, "smoke.link_errors");
  REQUIRE(quiet != nullptr);
  CHECK(quiet->status == Status::pass);
}

// NVLink5's ECC data error total over all links (NVML field 160, DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL): DCGM 4.6.0
// MonitorNVLink5Fields fails any rise (DCGM_LIMIT_MAX_NVLINK_ERROR 1) and skips a value missing at either end.
TEST_CASE("smoke: a rise of NVLink5's ECC data error total fails smoke.link_errors", "[smoke][nvml]") {
  FabricCounters base;
  base.nvlinks.push_back(NvLinkCounters{0, true, std::nullopt, std::nullopt, std::nullopt, std::nullopt});
  base.nvlinks[0].nvlink5 = {{221, 0}};
  base.nvlink5_effective_ber = 0xfff;
  base.nvlink5_symbol_ber = 73710;
  using Reading = std::optional<unsigned long long>;
  struct Case {
    const char* what;
    Reading before, after;
    Status expected;
    const char* part;  // in the message; nullptr: no ECC part
  } const cases[] = {
      {"equal", 3, 3, Status::pass, nullptr},
      {"a rise of one", 3, 4, Status::fail, "1 NVLink ECC data errors (all links)"},
      {"went down (driver reload): its later value", 8, 2, Status::fail, "2 NVLink ECC data errors (all links)"},
      {"unread before", std::nullopt, 9, Status::pass, nullptr},
      {"unread after", 9, std::nullopt, Status::pass, nullptr},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    FabricCounters before = base, after = base;
    before.nvlink5_ecc_errors = c.before;
    after.nvlink5_ecc_errors = c.after;
    const Finding judged = judge_link_errors(before, after, 10, true);
    CHECK(judged.status == c.expected);
    CHECK((judged.message.find("NVLink ECC data errors") != std::string::npos) == (c.part != nullptr));
    if (c.part != nullptr) CHECK(judged.message.find(c.part) == 0);
  }

  // Through the runner and the fake NVML (smoke.link_errors of its one GPU): a B200 whose ECC data error total rises
  // by 2 during the run fails, one whose total stands still passes, and a GPU before NVLink5 that answers field 160
  // and sees it rise is not judged by it (no rate read).
  const auto link_finding = [](const char* fake_nvml) {
    const SmokeReport report = run_with_nvml(fake_nvml, "elapsed_ms = 0.001\n", small_options());
    const Finding* finding = find(report.devices.at(0).findings, "smoke.link_errors");
    REQUIRE(finding != nullptr);
    return *finding;
  };
  const Finding rising = link_finding(
      "nvlinks = 18\nsmoke_nvlink5 = 1\nsmoke_nvlink5_ecc_errors = 5\nsmoke_nvlink5_ecc_errors_rise = 2\n");
  CHECK(rising.status == Status::fail);
  CHECK(rising.message.find("2 NVLink ECC data errors (all links)") == 0);
  CHECK(link_finding("nvlinks = 18\nsmoke_nvlink5 = 1\nsmoke_nvlink5_ecc_errors = 5\n").status == Status::pass);
  const Finding hopper = link_finding("nvlinks = 4\nsmoke_nvlink5_ecc_errors = 5\nsmoke_nvlink5_ecc_errors_rise = 2\n");
  CHECK(hopper.status == Status::pass);
  CHECK(hopper.message.find("ECC") == std::string::npos);
}

TEST_CASE("smoke: fewer GPUs than expected fail, and the board's peer floor still applies", "[smoke]") {
  SmokeOptions options = small_options();
  options.cublas = false;
  options.expect_gpus = 8;
  // Seven H100 SXM of an 8-GPU board: without the expectation the 335 GB/s floor "is for 8-GPU boards" and would be
  // dropped, so a degraded board missing a GPU would pass its peer copies.
  const SmokeReport report = run_fake("device_count = 7\nelapsed_ms = 0.001\n", options);
  const Finding* count = find(report.findings, "smoke.gpu_count");
  REQUIRE(count != nullptr);
  CHECK(count->status == Status::fail);
  CHECK(count->message.find("the driver reports 7 GPUs, 8 expected") == 0);
  REQUIRE_FALSE(report.peer_findings.empty());
  for (const Finding& pair : report.peer_findings) {
    CAPTURE(pair.message);
    CHECK(pair.source.find("H100 SXM peer read minimum 335 GB/s, measured on 8-GPU NVSwitch boards") == 0);
  }
  options.expect_gpus = 7;
  CHECK(
      find(run_fake("device_count = 7\nelapsed_ms = 0.001\nemulate_kernels = 0\n", options).findings, "smoke.gpu_count")
          ->status == Status::pass);
}
