// The event rules on hand-made histories: a rising counter raises one event with its rate and clears after a quiet
// hour; temperature, throttling (gpud's 6-of-10-minutes rule), idle time, a lost GPU, a smaller GPU count and new
// Xid records; the open conditions survive a restart through the state the store keeps; NVLink5 (Blackwell) counters
// judged by probe's table.

#include "watch/rules.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "probe/nvlink5.hpp"

using gpuenv::probe::NvLinkCounters;
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
  g.nvlink_links = {NvLinkCounters{0, true, 0, 0, 0, 0}};
  return g;
}

/// `g` with these active links read as NVML reads them (probe/nvml.cpp read_nvlinks): each link's counters, and their
/// sums over the links and counters that were read.
GpuSample with_links(GpuSample g, std::vector<NvLinkCounters> links, unsigned inactive = 0) {
  g.nvlink_links = std::move(links);
  g.nvlink_replay.reset();
  g.nvlink_recovery.reset();
  g.nvlink_crc.reset();
  const auto add = [](std::optional<std::uint64_t>& sum, const std::optional<std::uint64_t>& value) {
    if (value) sum = sum.value_or(0) + *value;
  };
  for (const NvLinkCounters& link : g.nvlink_links) {
    add(g.nvlink_replay, link.replay);
    add(g.nvlink_recovery, link.recovery);
    add(g.nvlink_crc, link.crc_flit);
    add(g.nvlink_crc, link.crc_data);
  }
  g.nvlink_inactive = inactive;
  return g;
}

/// `g` whose one NVLink has seen `crc` CRC (flit) errors.
GpuSample with_crc(GpuSample g, std::uint64_t crc) { return with_links(std::move(g), {{0, true, 0, 0, crc, 0}}); }

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
    NodeSample sample = node(now, std::move(gpus));
    gpuenv::watch::count_nvlink_errors(sample, state);
    history.add(std::move(sample), rules.longest_window_ms());
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
  run.step({with_crc(gpu(0), 500)});
  // The driver reloaded: the counter restarted and 3 errors came since.
  GpuSample after = with_crc(gpu(0), 3);
  const auto raised = run.step({after});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.nvlink_crc");
  CHECK(raised[0].finding.status == Status::warn);  // CRC errors warn (DCGM); 0.3/s is far under 100/s
  CHECK_THAT(raised[0].finding.message, Catch::Contains("3 NVLink CRC errors"));
}

TEST_CASE("NVLink CRC errors at 100/s or more fail, as DCGM's health watch does", "[watch]") {
  Run run;
  run.step({gpu(0)});
  const auto raised = run.step({with_crc(gpu(0), 2000)});  // 200/s over 10 s
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.nvlink_errors");
  CHECK(raised[0].finding.status == Status::fail);
}

// A healthy NVLink may count a CRC error now and then (DCGM only warns on them below its rate); were the warning
// under the id of the failures, each interval with one would hold a replay error's failure open for good.
TEST_CASE("NVLink CRC errors trickling in warn under their own id and never keep a replay failure open", "[watch]") {
  Run run;
  run.step({gpu(0)});
  const auto failed = run.step({with_links(gpu(0), {{0, true, 1, 0, 0, 0}})});  // one replay error
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].finding.id == "watch.nvlink_errors");
  CHECK(failed[0].finding.status == Status::fail);
  std::uint64_t crc = 0;
  std::vector<Event> later;
  for (int i = 0; i < 400; ++i) {  // 10 s apart: over an hour with one CRC error every interval
    ++crc;
    for (Event& event : run.step({with_links(gpu(0), {{0, true, 1, 0, crc, 0}})})) later.push_back(std::move(event));
  }
  REQUIRE(later.size() == 2);
  CHECK(later[0].finding.id == "watch.nvlink_crc");
  CHECK(later[0].finding.status == Status::warn);
  CHECK(later[1].finding.id == "watch.nvlink_errors");
  CHECK(later[1].finding.status == Status::pass);  // cleared: an hour without replay errors
}

// DCGM rates flit and data CRC errors each on its own (DcgmHealthWatch.cpp MonitorNVLink4Fields: the fields
// DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL and ..._CRC_DATA_ERROR_TOTAL, each per second against
// DCGM_LIMIT_MAX_NVLINK_CRC_ERROR 100): 60 flit + 60 data errors a second is a warning there, 110 data a failure.
TEST_CASE("NVLink CRC flit and data errors are rated apart, as DCGM does", "[watch]") {
  {
    Run run;
    run.step({with_links(gpu(0), {{0, true, 0, 0, 0, 0}, {1, true, 0, 0, 0, 0}})});
    const auto raised = run.step({with_links(gpu(0), {{0, true, 0, 0, 600, 0}, {1, true, 0, 0, 0, 600}})});
    REQUIRE(raised.size() == 1);
    CHECK(raised[0].finding.status == Status::warn);  // 120/s summed, 60/s of each kind
    const auto both = run.step({with_links(gpu(0), {{0, true, 0, 0, 1700, 0}, {1, true, 0, 0, 0, 600}})});
    REQUIRE(both.size() == 1);
    CHECK(both[0].finding.status == Status::fail);  // then 110/s of flit errors
  }
  {
    Run run;
    run.step({gpu(0)});
    const auto raised = run.step({with_links(gpu(0), {{0, true, 0, 0, 0, 1100}})});
    REQUIRE(raised.size() == 1);
    CHECK(raised[0].finding.status == Status::fail);  // 110/s of data CRC errors
  }
}

// DCGM's NVLink health watch judges the growth of the GPU's total replay, recovery and CRC counts between two readings
// (NVIDIA/DCGM @ 1f7a418 modules/health/DcgmHealthWatch.cpp MonitorNVLink: the DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL
// fields at the start and the end of the window).
// A total summed by gpuenv over the links it could read is not one total: a link read at one end only must be left
// out of both, or a link going down looks like errors vanishing and its return like new errors.
TEST_CASE("NVLink counts compare like with like: a link that goes down or a failed read is no new error", "[watch]") {
  Run run;
  const auto links = [](std::uint64_t l0, std::uint64_t l1, std::optional<std::uint64_t> l2) {
    std::vector<NvLinkCounters> out{{0, true, l0, 0, 0, 0}, {1, true, l1, 0, 0, 0}};
    if (l2) out.push_back({2, true, *l2, 0, 0, 0});
    return out;
  };
  CHECK(run.step({with_links(gpu(0), links(10, 10, 10))}).empty());
  // Link 2 goes down (NVML's sum drops by its 10 errors), then comes back: only watch.nvlink_down, never an error.
  const auto down = run.step({with_links(gpu(0), links(10, 10, std::nullopt), 1)});
  REQUIRE(down.size() == 1);
  CHECK(down[0].finding.id == "watch.nvlink_down");
  const auto back = run.step({with_links(gpu(0), links(10, 10, 10))});
  REQUIRE(back.size() == 1);
  CHECK(back[0].finding.id == "watch.nvlink_down");  // cleared
  CHECK(back[0].finding.status == Status::pass);
  CHECK(run.history.latest()->gpus[0].nvlink_replay == 30u);
  // One read fails (link 1's replay counter unread: the sum drops by 10), then it is read again.
  std::vector<NvLinkCounters> failed = links(10, 10, 10);
  failed[1].replay.reset();
  CHECK(run.step({with_links(gpu(0), failed)}).empty());
  CHECK(run.step({with_links(gpu(0), links(10, 10, 10))}).empty());
  CHECK(run.count("watch.nvlink_errors", Status::fail) == 0);
  // Errors on a link that was read at both ends count, even while another link is down or unread; errors that came
  // on the unread link meanwhile count when it is read again.
  CHECK(run.step({with_links(gpu(0), links(12, 10, std::nullopt), 1)}).size() == 2);  // down again + 2 replays
  CHECK(run.count("watch.nvlink_errors", Status::fail) == 1);
  CHECK(run.history.latest()->gpus[0].nvlink_replay == 32u);
  failed = links(12, 10, 13);
  failed[1].replay.reset();
  run.step({with_links(gpu(0), failed)});
  CHECK(run.history.latest()->gpus[0].nvlink_replay == 35u);  // link 2: 10 -> 13 since its last reading
  run.step({with_links(gpu(0), links(12, 11, 13))});
  CHECK(run.history.latest()->gpus[0].nvlink_replay == 36u);  // link 1: 10 -> 11 since its last reading
  // The baseline survives a restart with the state.
  run.state = RuleState::from_json(run.state.to_json());
  run.step({with_links(gpu(0), links(12, 11, 13))});
  CHECK(run.history.latest()->gpus[0].nvlink_replay == 36u);
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

TEST_CASE("PCIe replays in less than a minute of history are not scaled up to a rate", "[watch]") {
  // DCGM compares the raw growth over the last minute with 8 (MonitorPcie); it never extrapolates a shorter span.
  Run run;
  GpuSample link = gpu(0);
  link.pcie_replays = 100;
  run.step({link});
  link.pcie_replays = 102;  // 2 replays in the first interval: 12 a minute if scaled, 2 in fact
  CHECK(run.step({link}).empty());
  CHECK(run.count("watch.pcie_replays", Status::warn) == 0);
}

TEST_CASE("a warning that turns into a failure raises a second event", "[watch]") {
  Run run;
  run.step({gpu(0)});
  CHECK(run.step({with_crc(gpu(0), 5)}).size() == 1);
  const auto worse = run.step({with_crc(gpu(0), 5 + 5000)});
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
  CHECK(gpuenv::watch::idle_ms(run.state, idle, run.history.latest()->time_ms) == 359 * k_step);
  const auto raised = run.step({idle});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.id == "watch.idle");
  CHECK(raised[0].finding.status == Status::warn);
  CHECK_THAT(raised[0].finding.message, Catch::Contains("below 60 % for 60 min"));
  // Busy again: the idle time drops to 0 and the condition clears.
  const auto busy = run.step({gpu(2)});
  CHECK(gpuenv::watch::idle_ms(run.state, gpu(2), run.history.latest()->time_ms) == 0);
  REQUIRE(busy.size() == 1);
  CHECK(busy[0].finding.status == Status::pass);
}

TEST_CASE("idle time is not bounded by the samples in memory: jittered intervals over two hours", "[watch]") {
  // A real interval is never exactly 10 s: each stamp here is 10 s +- up to 2.5 s (a fixed pseudo-random sequence).
  // The idle event must fire once the GPU has been below the line for the whole window, not when a sample happens
  // to sit exactly one window back, and gpuenv_gpu_idle_seconds must keep counting past the window.
  Run run;
  GpuSample idle = gpu(0);
  idle.utilization_percent = 4;
  std::uint32_t seed = 12345;
  const auto jitter_ms = [&seed] {
    seed = seed * 1664525u + 1013904223u;  // Numerical Recipes' LCG: deterministic, no wall clock
    return static_cast<std::int64_t>(seed >> 16) % 5001 - 2500;
  };
  const std::int64_t first = run.now;
  std::int64_t raised_at = -1;
  while (run.now - first < 2 * 3600 * 1000) {
    const auto raised = run.step({idle});
    const std::int64_t stamp = run.history.latest()->time_ms;
    if (!raised.empty()) {
      REQUIRE(raised.size() == 1);
      CHECK(raised[0].finding.id == "watch.idle");
      CHECK(raised_at < 0);  // once, not once per interval
      raised_at = stamp;
    }
    run.now += jitter_ms();
  }
  REQUIRE(raised_at >= 0);
  CHECK(raised_at - first >= run.rules.idle_window_ms);
  CHECK(raised_at - first < run.rules.idle_window_ms + 13'000);  // at the first sample past the window
  const std::int64_t last = run.history.latest()->time_ms;
  CHECK(gpuenv::watch::idle_ms(run.state, idle, last) == last - first);  // ~2 h, not capped at the 1 h window
  CHECK(last - first > 7000 * 1000);
  // The run survives a restart through the stored state.
  const RuleState restored = RuleState::from_json(run.state.to_json());
  CHECK(gpuenv::watch::idle_ms(restored, idle, last) == last - first);
}

TEST_CASE("a GPU that is lost, or gone from the count, fails, its other conditions stay open", "[watch]") {
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

TEST_CASE("the GPU count is the boot's: a new boot with fewer GPUs (another instance type) is not a lost GPU",
          "[watch]") {
  Run run;
  const auto boot = [&](const std::string& id, std::vector<GpuSample> gpus) {
    NodeSample sample = node(run.now, std::move(gpus));
    sample.boot_id = id;
    run.history.add(sample, run.rules.longest_window_ms());
    run.now += k_step;
    return gpuenv::watch::derive_events(run.history, {}, run.rules, run.state);
  };
  CHECK(boot("boot-a", {gpu(0), gpu(1)}).empty());
  const auto fewer = boot("boot-a", {gpu(0)});
  REQUIRE(fewer.size() == 1);
  CHECK(fewer[0].finding.id == "watch.gpu_count");  // within a boot a GPU that leaves fails
  // The state is saved with the interval; the node reboots as a one-GPU instance (or an image baked with this
  // database boots elsewhere): the count starts anew and the open condition clears instead of failing forever.
  run.state = RuleState::from_json(run.state.to_json());
  CHECK(run.state.most_gpus_boot == "boot-a");
  const auto rebooted = boot("boot-b", {gpu(0)});
  REQUIRE(rebooted.size() == 1);
  CHECK(rebooted[0].finding.id == "watch.gpu_count");
  CHECK(rebooted[0].finding.status == Status::pass);
  for (int i = 0; i < 10; ++i) CHECK(boot("boot-b", {gpu(0)}).empty());
  CHECK(run.state.most_gpus == 1u);
}

TEST_CASE("NVML that stops answering fails once, the GPUs' conditions wait for it", "[watch]") {
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
  CHECK(raised[1].finding.message.find("Ch 00000008") == std::string::npos);  // the table's meaning, not the log's text
  CHECK(raised[1].gpu_index == 0u);
}

TEST_CASE("an Xid's event takes its verdict and action from the Xid table's node_action, as doctor does", "[watch]") {
  // data/xid.toml: 63 (row remap pending: work may continue, NVIDIA's A100 memory error guide) and 92 are "none",
  // 13 (a job's own fault) "restart_job", 154 (the driver asks for a recovery action) "drain_and_inspect".
  const struct {
    int code;
    Status status;
    const char* action;
  } rows[] = {{63, Status::pass, "none"},
              {92, Status::pass, "none"},
              {13, Status::warn, "restart_job"},
              {154, Status::fail, "drain_and_inspect"},
              {4242, Status::fail, "drain_and_inspect"}};  // not in the table: a fault until shown otherwise
  for (const auto& row : rows) {
    INFO("Xid " << row.code);
    Run run;
    run.step({gpu(0)});
    const auto raised = run.step({gpu(0)}, {KernelRecord{k_start, "xid", row.code, "PCI:0000:10:00", "text"}});
    REQUIRE(raised.size() == 1);
    CHECK(raised[0].finding.status == row.status);
    CHECK(raised[0].action == row.action);
    CHECK(raised[0].finding.message.find("text") == std::string::npos);
  }
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

TEST_CASE("a new NVSwitch SXid is judged as doctor's fabric.sxid: the driver's Fatal, else data/sxid.toml", "[watch]") {
  // The driver's own headline word ("20034, Fatal, Link 63 LTSSM Fault Up", tests/fixtures/probe/sxid-xid79-h100.log)
  // fails; otherwise data/sxid.toml's severity (NVIDIA's Fabric Manager guide through gpud's copy, every row
  // secondary): 11012 single-bit ECC is info, 12028 egress PRIV error is an error only by gpud's word, so it warns
  // ("12028, Non-fatal, Link 32 egress non-posted PRIV error (First)", the probe's documented example); a code the
  // table does not know warns, or fails when the driver printed Fatal.
  const struct {
    int code;
    const char* message;
    Status status;
    const char* action;
  } rows[] = {{20034, "Fatal, Link 63 text", Status::fail, "drain_and_inspect"},
              {11012, "Non-fatal, Link 2 text", Status::pass, "none"},
              {12028, "Non-fatal, Link 32 text (First)", Status::warn, "none"},
              {4242, "Non-fatal, Link 1 text", Status::warn, "none"},
              {4243, "Fatal, Link 1 text", Status::fail, "drain_and_inspect"}};
  for (const auto& row : rows) {
    INFO("SXid " << row.code);
    Run run;
    run.step({gpu(0)});
    const auto raised = run.step({gpu(0)}, {KernelRecord{k_start, "sxid", row.code, "0000:05:00.0", row.message}});
    REQUIRE(raised.size() == 1);
    CHECK(raised[0].finding.id == "watch.sxid");
    CHECK(raised[0].finding.status == row.status);
    CHECK(raised[0].action == row.action);
    CHECK_THAT(raised[0].finding.message, Catch::Contains("NVSwitch 0000:05:00.0: SXid " + std::to_string(row.code)));
    CHECK(raised[0].finding.message.find("text") == std::string::npos);  // the table's name, not the log's text
  }
}

// nvml.h nvmlGpuFabricInfo_v3_t: the status is meaningful only once the state is Completed; health summary Healthy,
// Unhealthy or Limited Capacity (NVIDIA/go-nvml gen/nvml/nvml.h, as doctor's fabric.state cites).
TEST_CASE("the NVLink fabric: a GPU that leaves Completed or turns Unhealthy fails, Limited Capacity warns",
          "[watch]") {
  using State = gpuenv::probe::GpuFabricInfo::State;
  const auto with_fabric = [](State state, bool ok, std::string health) {
    GpuSample g = gpu(0);
    gpuenv::probe::GpuFabricInfo fabric;
    fabric.state = state;
    fabric.status_ok = ok;
    fabric.status = ok ? "Success" : "Insufficient Resources";
    fabric.health_summary = std::move(health);
    g.fabric = fabric;
    return g;
  };
  Run run;
  // Not yet registered since watch started (the fabric manager is starting): doctor's to judge, no event.
  CHECK(run.step({with_fabric(State::in_progress, false, "")}).empty());
  CHECK(run.step({with_fabric(State::completed, true, "Healthy")}).empty());
  const auto limited = run.step({with_fabric(State::completed, true, "Limited Capacity")});
  REQUIRE(limited.size() == 1);
  CHECK(limited[0].finding.id == "watch.fabric");
  CHECK(limited[0].finding.status == Status::warn);
  const auto unhealthy = run.step({with_fabric(State::completed, true, "Unhealthy")});
  REQUIRE(unhealthy.size() == 1);
  CHECK(unhealthy[0].finding.status == Status::fail);                             // worse: a second event
  CHECK(run.step({with_fabric(State::completed, true, "Healthy")}).size() == 1);  // cleared
  // One reading out of Completed (a GPU reset, a fabric manager restart re-registering it) is not yet an event.
  CHECK(run.step({with_fabric(State::in_progress, false, "")}).empty());
  const auto left = run.step({with_fabric(State::in_progress, false, "")});
  REQUIRE(left.size() == 1);
  CHECK(left[0].finding.status == Status::fail);
  CHECK_THAT(left[0].finding.message, Catch::Contains("NVLink fabric state In Progress, Completed before"));
  const auto failed = Run().step({with_fabric(State::completed, false, "")});
  REQUIRE(failed.size() == 1);
  CHECK_THAT(failed[0].finding.message, Catch::Contains("completed with status Insufficient Resources"));
}

// ------------------------------------------------------------------------------------------------ NVLink5 (Blackwell)

namespace {

/// One NVLink5 link as a B200 reads (nvml.h: the replay/recovery/CRC counters "unsupported for Blackwell+"): every
/// counter of probe/nvlink5.hpp's table, the named ones set.
NvLinkCounters b200_link(unsigned link, std::map<unsigned, std::uint64_t> set = {}) {
  NvLinkCounters out{link, true, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  for (const gpuenv::probe::NvLink5Field& field : gpuenv::probe::nvlink5_error_fields())
    out.nvlink5.push_back({field.id, set.count(field.id) != 0 ? set[field.id] : 0});
  return out;
}

/// A B200 whose links read `links` (inactive ones too) and whose rates over all links read as given, sampled as the
/// monitor samples NVML (sample_from_inventory: the NVLink5 sums over the active links).
GpuSample b200(std::vector<NvLinkCounters> links, std::optional<std::uint64_t> effective_ber = 0xfff,
               std::optional<std::uint64_t> symbol_ber = 73710, std::optional<std::uint64_t> ecc_errors = 0) {
  gpuenv::probe::GpuInventory inventory;
  inventory.availability.available = true;
  gpuenv::probe::GpuFacts facts;
  facts.index = 0;
  facts.uuid = "GPU-B200-0";
  facts.name = "NVIDIA B200";
  facts.utilization_percent = 95;
  facts.temperature_c = 40;
  facts.nvlink = gpuenv::probe::NvLinkFacts{};
  gpuenv::probe::GpuLinkCounters read;
  read.index = 0;
  read.uuid = facts.uuid;
  for (const NvLinkCounters& link : links) {
    (link.active ? facts.nvlink->active : facts.nvlink->inactive).push_back(link.link);
    read.nvlinks.push_back(link);
  }
  read.nvlink5_effective_ber = effective_ber;
  read.nvlink5_symbol_ber = symbol_ber;
  read.nvlink5_ecc_errors = ecc_errors;
  inventory.gpus.push_back(facts);
  NodeSample sample = gpuenv::watch::sample_from_inventory(inventory, {read}, k_start);
  return sample.gpus.at(0);
}

/// Links 0-17 of a B200, each with its own counts (a reader that took link 0's everywhere would count 18 x link 0's).
std::vector<NvLinkCounters> b200_links(unsigned link, std::map<unsigned, std::uint64_t> set) {
  std::vector<NvLinkCounters> out;
  for (unsigned n = 0; n < 18; ++n) out.push_back(b200_link(n, {{221, 100 + n}, {213, n}}));
  out[link] = b200_link(link, std::move(set));
  return out;
}

}  // namespace

TEST_CASE("NVLink5: a B200's counters summed per judgement over its active links, as sampled", "[watch]") {
  std::vector<NvLinkCounters> links = {b200_link(0, {{221, 5}, {213, 2}}), b200_link(1, {{214, 1}, {219, 70}}),
                                       b200_link(2, {{221, 1000}})};
  links[2].active = false;  // a link that is down: not in the sums, as NVML's own sums are over active links
  const GpuSample sampled = b200(links);
  CHECK(sampled.nvlink5_errors == std::optional<std::uint64_t>(5 + 1));  // symbol + failed recoveries
  CHECK(sampled.nvlink5_warnings == std::optional<std::uint64_t>(2));    // successful recoveries; effective: neither
  CHECK_FALSE(sampled.nvlink_replay);                                    // refused on Blackwell: unknown, not zero
  CHECK(sampled.nvlink_links.size() == 2);
  CHECK(sampled.nvlink_inactive == 1u);
  CHECK(sampled.nvlink5_symbol_ber == std::optional<std::uint64_t>(73710));
  // An H100's sample has no NVLink5 sums.
  CHECK_FALSE(gpu(0).nvlink5_errors);
}

// probe/nvlink5.hpp's table, after DCGM 4.6.0 (modules/health/DcgmHealthWatch.cpp): MonitorNVLink5Fields fails any
// rise of its error counters (DCGM_LIMIT_MAX_NVLINK_ERROR 1), MonitorNVLinkErrorFields warns on successful link
// recoveries and fails failed ones. gpuenv's policy: successful recoveries warn under their own rule id
// (watch.nvlink_recoveries), so that their warning never keeps a failure open; a rise of effective errors is not
// judged (the effective BER, allowed up to 1e-12 by common/DcgmUtilities.cpp, is).
TEST_CASE("NVLink5: a rise is judged by probe's table and named by link and counter", "[watch]") {
  struct Row {
    const char* name;
    unsigned link;
    std::map<unsigned, std::uint64_t> later;  ///< the link's counters at the second reading (from 0)
    Status expected;
    const char* action;
    const char* says;
    const char* id = "watch.nvlink_errors";
  };
  const Row rows[] = {
      {"symbol errors",
       7,
       {{221, 2}},
       Status::fail,
       "drain_and_inspect",
       "GPU 0: 2 NVLink5 errors (link 7: 2 symbol errors) in the last 10 s"},
      {"a failed link recovery",
       3,
       {{214, 1}},
       Status::fail,
       "drain_and_inspect",
       "1 NVLink5 errors (link 3: 1 failed link recoveries)"},
      {"malformed packets", 12, {{206, 4}}, Status::fail, "drain_and_inspect", "link 12: 4 malformed packet errors"},
      {"buffer overruns", 1, {{207, 1}}, Status::fail, "drain_and_inspect", "link 1: 1 buffer overrun errors"},
      {"receive errors",
       0,
       {{208, 1}, {209, 1}, {210, 1}},
       Status::fail,
       "drain_and_inspect",
       "3 NVLink5 errors (link 0: 1 receive errors, link 0: 1 remote receive errors, link 0: 1 general receive "
       "errors)"},
      {"link integrity", 17, {{211, 1}}, Status::fail, "drain_and_inspect", "link 17: 1 local link integrity errors"},
      {"a successful link recovery",
       5,
       {{213, 1}},
       Status::warn,
       "none",
       "1 NVLink5 successful link recoveries (link 5: 1 successful link recoveries)",
       "watch.nvlink_recoveries"},
      {"effective errors: not judged", 9, {{219, 40}}, Status::pass, "", "", ""},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    Run run;
    CHECK(run.step({b200(b200_links(row.link, {}))}).empty());
    CHECK(run.step({b200(b200_links(row.link, {}))}).empty());  // nothing rose: no event
    const auto raised = run.step({b200(b200_links(row.link, row.later))});
    if (row.expected == Status::pass) {
      CHECK(raised.empty());
      continue;
    }
    REQUIRE(raised.size() == 1);
    CHECK(raised[0].finding.id == row.id);
    CHECK(raised[0].finding.status == row.expected);
    CHECK(raised[0].action == row.action);
    CHECK_THAT(raised[0].finding.message, Catch::Contains(row.says));
  }
}

// NVLink5's ECC data error total over all links (NVML field 160, DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL): DCGM 4.6.0
// MonitorNVLink5Fields fails any rise (DCGM_LIMIT_MAX_NVLINK_ERROR 1) and skips a value missing at either end. watch
// judges it between consecutive samples; it is not stored, so a sample read back from the database has none.
TEST_CASE("NVLink5: a rise of the ECC data error total fails watch.nvlink_errors", "[watch]") {
  using Reading = std::optional<std::uint64_t>;
  struct Row {
    const char* name;
    Reading before, after;
    const char* says;  // nullptr: no event
  } const rows[] = {
      {"equal", 4, 4, nullptr},
      {"a rise of one", 4, 5, "GPU 0: 1 NVLink ECC data errors (all links) in the last 10 s (5 in all)"},
      {"went down (driver reload): its later value", 9, 3, "GPU 0: 3 NVLink ECC data errors (all links)"},
      {"unread before (a sample read back from the database)", std::nullopt, 5, nullptr},
      {"unread now", 5, std::nullopt, nullptr},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    Run run;
    CHECK(run.step({b200(b200_links(0, {}), 0xfff, 73710, row.before)}).empty());
    const auto raised = run.step({b200(b200_links(0, {}), 0xfff, 73710, row.after)});
    if (row.says == nullptr) {
      CHECK(raised.empty());
      continue;
    }
    REQUIRE(raised.size() == 1);
    CHECK(raised[0].finding.id == "watch.nvlink_errors");
    CHECK(raised[0].finding.status == Status::fail);
    CHECK(raised[0].action == "drain_and_inspect");
    CHECK_THAT(raised[0].finding.message, Catch::Contains(row.says));
  }
}

TEST_CASE("NVLink counts: a reboot (a new boot id) resets the links' last readings, not the counts", "[watch]") {
  // Review L2: after a reboot the driver counts from zero; the older boot's link readings are no baseline.
  RuleState state;
  const auto count = [&](const char* boot, std::uint64_t symbol) {
    NodeSample sample = node(0, {b200({b200_link(0, {{221, symbol}})})});
    sample.boot_id = boot;
    gpuenv::watch::count_nvlink_errors(sample, state);
    return sample.gpus[0].nvlink5_errors;
  };
  CHECK(count("boot-a", 100) == 100u);            // the first reading: NVML's sum
  CHECK(count("boot-a", 103) == 103u);            // 3 new
  CHECK(count("boot-b", 2) == 103u);              // rebooted: 2 since the boot is no growth over the older boot's 103
  CHECK(count("boot-b", 5) == 106u);              // 3 new in this boot
  state = RuleState::from_json(state.to_json());  // the boot id survives a restart of watch
  CHECK(count("boot-b", 6) == 107u);
  CHECK(count("", 1) == 108u);  // an unknown boot id keeps the links: a lower reading counts from zero, as before
}

TEST_CASE("NVLink5: a trickle of successful recoveries or effective errors never keeps a failure open", "[watch]") {
  // Review H2: a healthy B200 link under load counts effective errors every hour; successful recoveries warn under
  // watch.nvlink_recoveries, so a failure of watch.nvlink_errors clears after its quiet hour while they go on.
  Run run;
  std::uint64_t recoveries = 0, effective = 0;
  const auto links = [&](std::uint64_t symbol) {
    std::vector<NvLinkCounters> out{b200_link(0, {{221, symbol}, {213, recoveries}, {219, effective}})};
    return out;
  };
  CHECK(run.step({b200(links(0))}).empty());
  const auto failed = run.step({b200(links(1))});
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].finding.id == "watch.nvlink_errors");
  for (int i = 0; i < 400; ++i) {
    ++recoveries;
    effective += 3;
    run.step({b200(links(1))});
  }
  CHECK(run.count("watch.nvlink_errors", Status::fail) == 1);
  CHECK(run.count("watch.nvlink_errors", Status::pass) == 1);  // cleared after a quiet hour of failing counters
  CHECK(run.count("watch.nvlink_recoveries", Status::warn) == 1);
  CHECK(run.count("watch.nvlink_recoveries", Status::pass) == 0);  // still rising: still open
}

TEST_CASE("NVLink5: counts compare like with like, survive a restart, and the rates over all links fail past DCGM's",
          "[watch]") {
  Run run;
  const auto links = [](std::uint64_t l0, std::optional<std::uint64_t> l1) {
    std::vector<NvLinkCounters> out{b200_link(0, {{221, l0}})};
    if (l1) out.push_back(b200_link(1, {{221, *l1}}));
    return out;
  };
  CHECK(run.step({b200(links(10, 10))}).empty());
  // Link 1 goes down (its 10 symbol errors leave NVML's sum) and comes back: no NVLink5 error either way.
  std::vector<NvLinkCounters> down = links(10, 10);
  down[1].active = false;
  CHECK(run.step({b200(down)}).size() == 1);           // watch.nvlink_down
  CHECK(run.step({b200(links(10, 10))}).size() == 1);  // cleared
  CHECK(run.count("watch.nvlink_errors", Status::fail) == 0);
  CHECK(run.history.latest()->gpus[0].nvlink5_errors == 20u);
  // The baseline survives a restart with the state; errors on link 1 since its last reading then count.
  run.state = RuleState::from_json(run.state.to_json());
  const auto raised = run.step({b200(links(10, 13))});
  REQUIRE(raised.size() == 1);
  CHECK(raised[0].finding.status == Status::fail);
  CHECK_THAT(raised[0].finding.message, Catch::Contains("3 NVLink5 errors (link 1: 3 symbol errors)"));
  CHECK(run.history.latest()->gpus[0].nvlink5_errors == 23u);

  // DCGM's rate limits (common/DcgmUtilities.cpp IsEffectiveBerThresholdExceeded, 1e-12; the Blackwell symbol floor
  // 15e-238): a rate past them fails while it lasts, with no counter rising.
  Run rates;
  CHECK(rates.step({b200(links(0, 0))}).empty());
  const auto effective = rates.step({b200(links(0, 0), (2u << 8) | 12)});
  REQUIRE(effective.size() == 1);
  CHECK(effective[0].finding.status == Status::fail);
  CHECK_THAT(effective[0].finding.message, Catch::Contains("GPU 0: NVLink5 effective bit error rate 2e-12"));
  Run symbol;
  const auto symbols = symbol.step({b200(links(0, 0), 0xfff, (15u << 8) | 237)});
  REQUIRE(symbols.size() == 1);
  CHECK_THAT(symbols[0].finding.message, Catch::Contains("symbol bit error rate 15e-237"));
}
