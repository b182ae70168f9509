// The monitor end to end below the CLI: the fake libnvidia-ml (8 H100s, counters that move, a fixture rewritten
// between reads) through probe's NVML session, a kernel log that grows (a real capture of Xid 119 events, leptonai/gpud
// testdata), the real SQLite, and the events they give; then a GPU that hangs in NVML while the kernel log is still
// followed and stored.

#include "watch/monitor.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fleet/fleet_support.hpp"
#include "support/fake_nvml_library.hpp"
#include "support/fake_system.hpp"

namespace fs = std::filesystem;
using gpuenv::report::Status;
using gpuenv::testing::FakeNvmlCopy;
using gpuenv::testing::FakeSystem;
using gpuenv::testing::ScopedEnv;
using gpuenv::testing::fleet::TempDir;
using gpuenv::watch::Event;
using gpuenv::watch::Monitor;
using gpuenv::watch::Snapshot;

namespace {

/// The healthy 8x H100 fixture with extra top-level keys and per-GPU keys appended to GPU `gpu`.
std::string fixture(const std::string& top, unsigned gpu = 0, const std::string& gpu_keys = "") {
  std::string text = top + "\n" + gpuenv::testing::read_text(gpuenv::testing::fixture_path("nvml/healthy-8xh100.conf"));
  std::size_t at = 0;
  for (unsigned i = 0; i <= gpu; ++i) at = text.find("[gpu]", at) + 5;
  return text.insert(at, "\n" + gpu_keys);
}

/// The first lines of the Xid 119 capture, then all of it: a kernel log that grows between two reads.
std::string log_lines(std::size_t count) {
  std::istringstream in(gpuenv::testing::read_fixture("probe/errors/dmesg_xid-119_gsp-rpc-timeout.log"));
  std::string out, line;
  for (std::size_t i = 0; i < count && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

struct Harness {
  TempDir dir;
  FakeNvmlCopy library;
  std::string conf = (dir.path() / "nvml.conf").string();
  ScopedEnv env{"GPUENV_FAKE_NVML", conf};
  FakeSystem system;
  FakeSystem hooks;
  std::int64_t now = 1'767'225'600'000;
  std::vector<std::string> log;
  gpuenv::watch::WatchSettings settings;
  Monitor monitor{system, hooks, [this] { return now; }, [this](int, const std::string& line) { log.push_back(line); }};

  explicit Harness(const std::string& fixture_text) {
    std::ofstream(conf) << fixture_text;
    system.real_libraries["libnvidia-ml.so.1"] = library.path();
    system.real_libraries["libsqlite3.so.0"] = "libsqlite3.so.0";
    settings.db = (dir.path() / "watch.db").string();
    settings.ready_marker.clear();
  }
  void start() {
    auto rules = gpuenv::watch::builtin_rule_settings();
    REQUIRE(rules);
    REQUIRE(monitor.start(settings, *rules));
  }
  Snapshot interval() {
    Snapshot snapshot = monitor.run_interval();
    now += 10'000;
    return snapshot;
  }
};

bool has(const std::vector<Event>& events, const std::string& id, Status status) {
  return std::any_of(events.begin(), events.end(),
                     [&](const Event& e) { return e.finding.id == id && e.finding.status == status; });
}

}  // namespace

TEST_CASE("monitor: eight fake GPUs sampled and stored, a rising counter and new Xids become events", "[watch]") {
  // GPU 3 gains one uncorrectable ECC error at every read (the fake's _step key).
  Harness h(fixture("reload_on_change = 1", 3, "ecc_uncorrected_volatile_step = 1"));
  // start() learns what the log holds, then one read per interval; the third finds two more Xid lines (38, 40).
  h.system.command_queue["dmesg"] = {{0, false, false, log_lines(37), ""},
                                     {0, false, false, log_lines(37), ""},
                                     {0, false, false, log_lines(37), ""},
                                     {0, false, false, log_lines(41), ""}};
  h.start();
  const Snapshot first = h.interval();
  CHECK(first.sample.nvml);
  REQUIRE(first.sample.gpus.size() == 8);
  CHECK(first.history);
  CHECK(first.events.empty());  // the Xid already in the log is doctor's; no counter has moved yet
  const Snapshot second = h.interval();
  REQUIRE(has(second.events, "watch.ecc_uncorrected", Status::fail));
  CHECK(second.events.front().gpu_index == 3u);
  const Snapshot third = h.interval();
  // The log grew by two Xid 119 lines (GSP RPC timeout): two events.
  CHECK(std::count_if(third.events.begin(), third.events.end(),
                      [](const Event& e) { return e.finding.id == "watch.xid"; }) == 2);
  CHECK(third.open.count("watch.ecc_uncorrected|GPU-00000000-0000-0000-0000-000000000003") == 1);

  // A GPU that gets hot and a GPU that gets lost, by rewriting the fixture between reads.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a new modification time
  std::ofstream(h.conf) << fixture("reload_on_change = 1", 5, "lost = 1");
  const Snapshot fourth = h.interval();
  CHECK(has(fourth.events, "watch.gpu_lost", Status::fail));
  CHECK(fourth.sample.gpus[5].lost());
  h.monitor.stop(std::chrono::seconds(1));
}

TEST_CASE("monitor: a restart reloads the window and the open conditions from the store", "[watch]") {
  TempDir shared;
  const std::string db = (shared.path() / "watch.db").string();
  std::int64_t ended = 0;
  {
    Harness h(fixture(""));
    h.settings.db = db;
    h.start();
    for (int i = 0; i < 10; ++i) h.interval();
    ended = h.now;
    h.monitor.stop(std::chrono::seconds(1));
  }
  Harness h(fixture(""));
  h.settings.db = db;
  h.now = ended;
  h.start();
  const Snapshot snapshot = h.interval();
  // The healthy fixture's GPUs are at 0 %: GPU 2 has been idle since the first run's first interval.
  CHECK(snapshot.idle_ms.at(2) == 10 * 10'000);
  h.monitor.stop(std::chrono::seconds(1));
}

TEST_CASE("monitor: NVLink counts per link through NVML, a link that goes down and returns is no new error",
          "[watch]") {
  // GPU 0 has 4 NVLinks; link 2 has seen 10 replay errors since the driver loaded. It goes down (NVML's sum over the
  // active links drops to 0) and comes back (the sum is 10 again): the link's counter never moved.
  const std::string links = "nvlinks = 4\nnvlink_replay_link2 = 10\npcie_replays = 5";
  Harness h(fixture("reload_on_change = 1", 0, links));
  h.start();
  const Snapshot first = h.interval();
  REQUIRE(first.sample.gpus.size() == 8);
  CHECK(first.sample.gpus[0].nvlink_replay == 10u);
  CHECK(first.sample.gpus[0].nvlink_links.size() == 4);
  CHECK(first.sample.gpus[0].pcie_replays == 5u);  // nvmlDeviceGetPcieReplayCounter, read in the same call
  for (const char* inactive : {"\nnvlink_inactive = 2", ""}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a new modification time
    std::ofstream(h.conf) << fixture("reload_on_change = 1", 0, links + inactive);
    const Snapshot snapshot = h.interval();
    CHECK(snapshot.sample.gpus[0].nvlink_replay == 10u);
    CHECK_FALSE(has(snapshot.events, "watch.nvlink_errors", Status::fail));
  }
  h.monitor.stop(std::chrono::seconds(1));
}

// A B200 through the fake NVML's NVLink5 mode (smoke_nvlink5 = 1: nvmlDeviceGetNvLinkErrorCounter answers "not
// supported", as nvml.h says of Blackwell; nvmlDeviceGetFieldValues answers per link): before this, watch read no
// NVLink error at all on it. Each link's own counters (nvlink5_<name>_link<N>), so a reader of link 0 everywhere fails.
TEST_CASE("monitor: a B200's NVLink5 counters are read per link through NVML and judged", "[watch]") {
  const std::string b200_keys =
      "nvlinks = 18\nsmoke_nvlink5 = 1\nnvlink5_symbol_errors_link7 = 3\n"
      "nvlink5_recoveries_link2 = 1\nnvlink5_effective_errors_link11 = 50\nnvlink_ecc_errors = 4";
  Harness h(fixture("reload_on_change = 1", 0, b200_keys));
  h.start();
  const Snapshot first = h.interval();
  REQUIRE(first.sample.gpus.size() == 8);
  const auto& blackwell = first.sample.gpus[0];
  CHECK_FALSE(blackwell.nvlink_replay);  // refused, as on a real B200
  CHECK(blackwell.nvlink5_errors == 3u);
  CHECK(blackwell.nvlink5_warnings ==
        1u);  // successful recoveries; the 50 effective errors in neither sum (not judged)
  REQUIRE(blackwell.nvlink_links.size() == 18);
  CHECK(blackwell.nvlink_links[7].nvlink5.at(0).field == 221);  // symbol errors first, as in probe's table
  CHECK(blackwell.nvlink_links[7].nvlink5.at(0).value == 3);
  CHECK(blackwell.nvlink_links[0].nvlink5.at(0).value == 0);
  CHECK(blackwell.nvlink5_symbol_ber == 73710u);               // read over all links (scopeId UINT_MAX)
  CHECK(blackwell.nvlink5_ecc_errors == 4u);                   // field 160 with the rates (scopeId 0)
  CHECK_FALSE(first.sample.gpus[1].nvlink5_errors);            // an H100: no NVLink5
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a new modification time
  std::ofstream(h.conf) << fixture(
      "reload_on_change = 1", 0,
      b200_keys + "\nnvlink5_symbol_errors_link12 = 2\nnvlink5_failed_recoveries_link12 = 1");
  const Snapshot second = h.interval();
  CHECK(second.sample.gpus[0].nvlink5_errors == 6u);
  CHECK(has(second.events, "watch.nvlink_errors", Status::fail));
  const auto event = std::find_if(second.events.begin(), second.events.end(),
                                  [](const Event& e) { return e.finding.id == "watch.nvlink_errors"; });
  REQUIRE(event != second.events.end());
  CHECK_THAT(event->finding.message, Catch::Contains("3 NVLink5 errors (link 12: 2 symbol errors, link 12: 1 failed "
                                                     "link recoveries)"));
  h.monitor.stop(std::chrono::seconds(1));
}

TEST_CASE("monitor: an NVML call that hangs is abandoned and the kernel log is still read and stored",
          "[watch][system-test]") {
  // The second nvmlDeviceGetCount (the second interval's read) blocks 2 s; reads are given 200 ms.
  Harness h(fixture("hang_count_after = 1\nhang_count_seconds = 2"));
  h.settings.nvml_timeout = std::chrono::milliseconds(200);
  // start() learns what the log holds, then one read per interval: the hung interval finds two more Xid lines.
  h.system.command_queue["dmesg"] = {{0, false, false, log_lines(37), ""},
                                     {0, false, false, log_lines(37), ""},
                                     {0, false, false, log_lines(41), ""},
                                     {0, false, false, log_lines(41), ""}};
  h.start();
  CHECK(h.interval().sample.nvml);
  const Snapshot hung = h.interval();
  CHECK_FALSE(hung.sample.nvml);
  CHECK_THAT(hung.sample.nvml_reason, Catch::Contains("did not answer within 200 ms"));
  CHECK(has(hung.events, "watch.nvml", Status::fail));
  CHECK(std::count_if(hung.events.begin(), hung.events.end(),
                      [](const Event& e) { return e.finding.id == "watch.xid"; }) == 2);  // read all the same
  CHECK(hung.history);
  // While the call is still inside NVML no other read starts: the interval says so instead of waiting again.
  const Snapshot still = h.interval();
  CHECK_THAT(still.sample.nvml_reason, Catch::Contains("has not returned"));
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  const Snapshot recovered = h.interval();
  CHECK(recovered.sample.nvml);
  CHECK(has(recovered.events, "watch.nvml", Status::pass));
  h.monitor.stop(std::chrono::seconds(1));
}
