// The event rules on hand-made histories: a rising counter raises one event with its rate and clears after a quiet
// hour; temperature, throttling (gpud's 6-of-10-minutes rule), idle time, a lost GPU, a smaller GPU count and new
// Xid records; the open conditions survive a restart through the state the store keeps.

#include "watch/rules.hpp"

#include <catch2/catch.hpp>

using gpuenv::report::Status;
using gpuenv::watch::Event;
using gpuenv::watch::GpuSample;
using gpuenv::watch::History;
using gpuenv::watch::KernelRecord;
using gpuenv::watch::NodeSample;
using gpuenv::watch::RuleSettings;
using gpuenv::watch::RuleState;

namespace {

constexpr std::int64_t k_start = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
constexpr std::int64_t k_step = 10'000;              // a 10 s interval

RuleSettings settings() {
  auto loaded = gpuenv::watch::builtin_rule_settings();
  REQUIRE(loaded);
  return *loaded;
}

GpuSample gpu(unsigned index) {
  GpuSample g;
  g.index = index;
  g.uuid = "GPU-0000000" + std::to_string(index);
  g.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  g.name = "NVIDIA H100 80GB HBM3";
  g.utilization_percent = 95;
  g.temperature_c = 40;
  g.ecc_uncorrected = 0;
  g.ecc_corrected = 0;
  g.remapped_correctable = 0;
  g.remapped_uncorrectable = 0;
  g.nvlink_replay = 0;
  g.nvlink_recovery = 0;
  g.nvlink_crc = 0;
  g.nvlink_inactive = 0;
  return g;
}

NodeSample node(std::int64_t time_ms, std::vector<GpuSample> gpus) {
  NodeSample sample;
  sample.time_ms = time_ms;
  sample.nvml = true;
  sample.attached_gpus = static_cast<unsigned>(gpus.size());
  sample.gpus = std::move(gpus);
  return sample;
}

/// Feeds one sample per interval through the rules, as the monitor does, and collects every event.
struct Run {
  RuleSettings rules = settings();
  History history;
  RuleState state;
  std::vector<Event> events;
  std::int64_t now = k_start;

  std::vector<Event> step(std::vector<GpuSample> gpus, std::vector<KernelRecord> records = {}) {
    history.add(node(now, std::move(gpus)), rules.longest_window_ms());
    auto raised = gpuenv::watch::derive_events(history, records, rules, state);
    events.insert(events.end(), raised.begin(), raised.end());
    now += k_step;
    return raised;
  }
  std::size_t count(const std::string& id, Status status) const {
    return static_cast<std::size_t>(std::count_if(events.begin(), events.end(), [&](const Event& e) {
      return e.finding.id == id && e.finding.status == status;
    }));
  }
};

}  // namespace

TEST_CASE("a healthy node raises no event", "[watch]") {
  Run run;
  for (int i = 0; i < 400; ++i) run.step({gpu(0), gpu(1)});
  CHECK(run.events.empty());
  CHECK(run.state.open.empty());
  CHECK(run.state.most_gpus == 2u);
}

TEST_CASE("an uncorrectable ECC error raises one fail event with its rate, and clears after a quiet hour", "[watch]") {
  Run run;
  for (int i = 0; i < 3; ++i) run.step({gpu(0)});
  GpuSample bad = gpu(0);
  bad.ecc_uncorrected = 2;
  const auto raised = run.step({bad});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.ecc_uncorrected");
  CHECK(raised[0].finding.status == Status::fail);
  CHECK(raised[0].action == "reset_gpu");
  CHECK(raised[0].gpu_uuid == "GPU-00000000");
  CHECK_THAT(raised[0].finding.message, Catch::Contains("2 uncorrectable ECC errors in the last 10 s (0.20/s"));
  CHECK_THAT(raised[0].finding.source, Catch::Contains("DCGM"));
  // It keeps growing: still one event (the condition is open); then quiet for an hour: one pass event.
  bad.ecc_uncorrected = 3;
  CHECK(run.step({bad}).empty());
  for (int i = 0; i < 359; ++i) CHECK(run.step({bad}).empty());
  const auto cleared = run.step({bad});
  REQUIRE(cleared.size() == 1);
  CHECK(cleared[0].finding.status == Status::pass);
  CHECK_THAT(cleared[0].finding.message, Catch::Contains("cleared: uncorrectable ECC errors growing"));
  CHECK(run.count("watch.ecc_uncorrected", Status::fail) == 1);
}

TEST_CASE("a counter reset (driver reload) counts the new value as growth, not a negative one", "[watch]") {
  Run run;
  GpuSample before = gpu(0);
  before.nvlink_crc = 500;
  run.step({before});
  GpuSample after = gpu(0);
  after.nvlink_crc = 3;  // the driver reloaded: the counter restarted and 3 errors came since
  const auto raised = run.step({after});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.nvlink_errors");
  CHECK(raised[0].finding.status == Status::warn);  // CRC errors warn (DCGM); 0.3/s is far under 100/s
  CHECK_THAT(raised[0].finding.message, Catch::Contains("3 NVLink CRC errors"));
}

TEST_CASE("NVLink CRC errors at 100/s or more fail, as DCGM's health watch does", "[watch]") {
  Run run;
  run.step({gpu(0)});
  GpuSample fast = gpu(0);
  fast.nvlink_crc = 2000;  // 200/s over 10 s
  const auto raised = run.step({fast});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.status == Status::fail);
}

// DCGM's PCIe health watch warns only when the replay counter grew by more than DCGM_LIMIT_MAX_PCIREPLAY_RATE (8) in
// the last minute ("8 replays per minute is the maximum recommended by RM": NVIDIA/DCGM @ 72fa3fe
// common/DcgmGPUHardwareLimits.h; modules/health/DcgmHealthWatch.cpp MonitorPcie). A healthy link replays now and then.
TEST_CASE("PCIe replays warn only above DCGM's 8 a minute", "[watch]") {
  Run run;
  GpuSample link = gpu(0);
  link.pcie_replays = 100;
  for (int i = 0; i < 7; ++i) run.step({link});  // a minute of history
  // 8 replays in the last minute, one interval at a time: at DCGM's limit, not above it.
  for (int i = 0; i < 8; ++i) {
    link.pcie_replays = *link.pcie_replays + 1;
    CHECK(run.step({link}).empty());
  }
  CHECK(run.count("watch.pcie_replays", Status::warn) == 0);
  // A burst: 30 in one interval is far above 8 a minute.
  link.pcie_replays = *link.pcie_replays + 30;
  const auto raised = run.step({link});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.pcie_replays");
  CHECK(raised[0].finding.status == Status::warn);
}

TEST_CASE("a warning that turns into a failure raises a second event", "[watch]") {
  Run run;
  run.step({gpu(0)});
  GpuSample slow = gpu(0);
  slow.nvlink_crc = 5;
  CHECK(run.step({slow}).size() == 1);
  slow.nvlink_crc = 5 + 5000;
  const auto worse = run.step({slow});
  REQUIRE(worse.size() == 1);
  CHECK(worse[0].finding.status == Status::fail);
}

TEST_CASE("temperature at the shared 85 C limit warns and clears after an hour below it", "[watch]") {
  Run run;
  GpuSample hot = gpu(1);
  hot.temperature_c = 85;  // doctor's gpu.temperature_c warn_at
  const auto raised = run.step({gpu(0), hot});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.temperature");
  CHECK(raised[0].gpu_index == 1u);
  GpuSample warm = gpu(1);
  warm.temperature_c = 84;
  for (int i = 0; i < 359; ++i) CHECK(run.step({gpu(0), warm}).empty());
  CHECK(run.step({gpu(0), warm}).size() == 1);
  CHECK(run.count("watch.temperature", Status::pass) == 1);
}

TEST_CASE("throttling counts only past 60 % of the last 10 minutes (gpud's hw-slowdown rule)", "[watch]") {
  Run run;
  GpuSample slowed = gpu(0);
  slowed.throttle = gpuenv::watch::k_hw_slowdown;
  // 5 minutes throttled, 5 not: half the window, no event.
  for (int i = 0; i < 30; ++i) run.step({gpu(0)});
  for (int i = 0; i < 30; ++i) CHECK(run.step({slowed}).empty());
  // Throttled on: the event comes once 360 s of the last 600 s are throttled.
  std::vector<Event> raised;
  int steps = 0;
  while (raised.empty() && steps < 60) {
    raised = run.step({slowed});
    ++steps;
  }
  REQUIRE(raised.size() == 1);
  CHECK(steps == 7);  // 30 samples before + 7 more = 37 samples, 36 intervals of 10 s = 360 s
  CHECK(raised[0].finding.id == "watch.throttle");
  CHECK(raised[0].finding.status == Status::fail);  // hw_slowdown fails in doctor's thresholds
  CHECK_THAT(raised[0].finding.message, Catch::Contains("hw_slowdown"));
  // A software power cap (the GPU working as configured) is never judged.
  Run capped;
  GpuSample cap = gpu(0);
  cap.throttle = gpuenv::watch::k_sw_power_cap;
  for (int i = 0; i < 200; ++i) capped.step({cap});
  CHECK(capped.events.empty());
}

TEST_CASE("an idle GPU is reported after the window, and idle time is exposed before", "[watch]") {
  Run run;
  GpuSample idle = gpu(2);
  idle.utilization_percent = 3;
  run.step({idle});
  for (int i = 0; i < 359; ++i) CHECK(run.step({idle}).empty());
  CHECK(gpuenv::watch::idle_ms(run.history, idle, 60) == 359 * k_step);
  const auto raised = run.step({idle});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.idle");
  CHECK(raised[0].finding.status == Status::warn);
  CHECK_THAT(raised[0].finding.message, Catch::Contains("below 60 % for 60 min"));
  // Busy again: the idle time drops to 0 and the condition clears.
  const auto busy = run.step({gpu(2)});
  CHECK(gpuenv::watch::idle_ms(run.history, gpu(2), 60) == 0);
  REQUIRE(busy.size() == 1);
  CHECK(busy[0].finding.status == Status::pass);
}

TEST_CASE("a GPU that is lost, or gone from the count, fails; its other conditions stay open", "[watch]") {
  Run run;
  GpuSample hot = gpu(1);
  hot.temperature_c = 90;
  run.step({gpu(0), hot});
  GpuSample lost = gpu(1);
  lost.access_error = "GPU is lost";
  lost.temperature_c.reset();
  const auto raised = run.step({gpu(0), lost});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.gpu_lost");
  CHECK(raised[0].action == "reboot");
  CHECK(run.state.open.count("watch.temperature|GPU-00000001") == 1);  // unknown now, not cleared
  const auto fewer = run.step({gpu(0)});
  REQUIRE(fewer.size() == 1);
  CHECK(fewer[0].finding.id == "watch.gpu_count");
  CHECK_THAT(fewer[0].finding.message, Catch::Contains("1 GPU(s) visible, 2 before; missing: GPU 1"));
}

TEST_CASE("NVML that stops answering fails once; the GPUs' conditions wait for it", "[watch]") {
  Run run;
  GpuSample idle = gpu(0);
  idle.utilization_percent = 0;
  for (int i = 0; i < 361; ++i) run.step({idle});
  REQUIRE(run.count("watch.idle", Status::warn) == 1);
  NodeSample down = node(run.now, {});
  down.nvml = false;
  down.nvml_reason = "NVML did not answer within 5000 ms (a hung GPU or driver)";
  run.history.add(down, run.rules.longest_window_ms());
  const auto raised = gpuenv::watch::derive_events(run.history, {}, run.rules, run.state);
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.nvml");
  CHECK(raised[0].finding.status == Status::fail);
  CHECK(run.state.open.count("watch.idle|GPU-00000000") == 1);
}

TEST_CASE("new Xid records become events judged by the Xid table", "[watch]") {
  Run run;
  run.step({gpu(0), gpu(1)});
  KernelRecord xid79{k_start, "xid", 79, "0000:11:00", "GPU has fallen off the bus."};
  KernelRecord xid31{k_start, "xid", 31, "PCI:0000:10:00", "Ch 00000008, intr 00000000. MMU Fault"};
  const auto raised = run.step({gpu(0), gpu(1)}, {xid79, xid31});
  REQUIRE(raised.size() == 2);
  CHECK(raised[0].finding.id == "watch.xid");
  CHECK(raised[0].finding.status == Status::fail);
  CHECK(raised[0].gpu_index == 1u);  // 0000:11:00 is GPU 1's bus (00000000:11:00.0)
  CHECK_THAT(raised[0].finding.message, Catch::Contains("Xid 79"));
  CHECK(raised[1].gpu_index == 0u);
}

TEST_CASE("the open conditions survive a restart through the stored state", "[watch]") {
  Run run;
  GpuSample hot = gpu(0);
  hot.temperature_c = 91;
  REQUIRE(run.step({hot}).size() == 1);
  const RuleState restored = RuleState::from_json(run.state.to_json());
  CHECK(restored.open.size() == run.state.open.size());
  CHECK(restored.most_gpus == run.state.most_gpus);
  CHECK(restored.open.at("watch.temperature|GPU-00000000").status == Status::warn);
  run.state = restored;
  CHECK(run.step({hot}).empty());  // not raised again
  CHECK(RuleState::from_json("not json").open.empty());
}
