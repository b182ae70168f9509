// What watch does on a cloud's interruption notice, end to end below the CLI (src/watch/interruption_flow.cpp): the
// notice from GCP's metadata service as its documentation gives it (maintenance-event TERMINATE_ON_HOST_MAINTENANCE:
// a GPU VM is stopped one hour later, cloud.google.com/compute/docs/gpus/gpu-host-maintenance and
// .../metadata/getting-live-migration-notice), the readiness marker removed, the node drained in Slurm through
// fleet's health-check code (scontrol show node, then scontrol update ... State=DRAIN Reason=gpuenv-interruption: ...,
// the contract tests/fleet/slurm_integration_test.cpp checks against a real slurmctld), the hook run as an argv with
// the notice in its environment and the notice's deadline as its timeout; once per notice, also across a restart.

#include <catch2/catch.hpp>

#include "fleet/fleet_support.hpp"
#include "support/fake_system.hpp"
#include "watch/monitor.hpp"

using gpuenv::report::Status;
using gpuenv::testing::FakeSystem;
using gpuenv::testing::fleet::TempDir;
using gpuenv::watch::Event;
using gpuenv::watch::Monitor;
using gpuenv::watch::Snapshot;

namespace {

constexpr std::int64_t k_flow_start = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
const std::string k_marker = "/var/lib/gpuenv/ready";
const std::string k_hook = "/usr/local/bin/checkpoint";
/// The drain reason fleet gives Slurm: "gpuenv-interruption: " and the notice (src/fleet/slurm.cpp
/// decide_interruption_drain), which the health check does not resume.
const std::string k_drain =
    "scontrol update NodeName=gpu-node-1 State=DRAIN Reason=gpuenv-interruption: gcp TERMINATE_ON_HOST_MAINTENANCE "
    "interruption at "
    "2026-01-01T01:00:00Z";
/// The hook's argv: /usr/bin/env sets the notice's variables, then the configured argv, no shell.
const std::string k_hook_run =
    "/usr/bin/env GPUENV_INTERRUPTION_CLOUD=gcp GPUENV_INTERRUPTION_KIND=TERMINATE_ON_HOST_MAINTENANCE "
    "GPUENV_INTERRUPTION_ID=maintenance-TERMINATE_ON_HOST_MAINTENANCE "
    "GPUENV_INTERRUPTION_DESCRIPTION=Compute Engine will stop this VM for host maintenance (one hour's notice) "
    "GPUENV_INTERRUPTION_DEADLINE=2026-01-01T01:00:00Z GPUENV_INTERRUPTION_DEADLINE_UNIX=1767229200 "
    "GPUENV_INTERRUPTION_SECONDS_LEFT=3600 " +
    k_hook + " --now";

/// One watch process on a GCP VM whose metadata service announces host maintenance. No NVML here: the flow does
/// not depend on it.
struct Node {
  const std::string& db;
  FakeSystem system;
  FakeSystem hooks;  ///< the hook thread's System (Slurm and the hook)
  std::int64_t now;
  std::vector<std::string> log;
  gpuenv::watch::WatchSettings settings;
  Monitor monitor{system, hooks, [this] { return now; }, [this](int, const std::string& line) { log.push_back(line); }};

  Node(const std::string& database, std::int64_t start) : db(database), now(start) {
    system.real_libraries["libsqlite3.so.0"] = "libsqlite3.so.0";
    system.files[k_marker] = "";
    system.http_answers["GET /computeMetadata/v1/instance/preempted"] = {200, "FALSE"};
    system.http_answers["GET /computeMetadata/v1/instance/maintenance-event"] = {200, "TERMINATE_ON_HOST_MAINTENANCE"};
    hooks.commands["scontrol show node gpu-node-1"] = {
        0, false, false, gpuenv::testing::read_fixture("fleet/scontrol-show-node-idle.txt"), ""};
    hooks.commands[k_drain] = {0, false, false, "", ""};
    hooks.commands[k_hook_run] = {0, false, false, "checkpoint written\n", ""};
    settings.db = db;
    settings.nvml_library = "libnvidia-ml-absent.so.1";
    settings.cloud_metadata = true;
    settings.cloud = "gcp";
    settings.metadata_endpoint = gpuenv::probe::MetadataEndpoint{"169.254.169.254", 80};
    settings.ready_marker = k_marker;
    settings.slurm_node = "gpu-node-1";
    settings.on_interruption = {k_hook, "--now"};
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
  /// Waits for the hook thread, as SIGTERM does.
  void stop() { monitor.stop(std::chrono::seconds(10)); }
  std::size_t notices(const std::vector<Event>& events) const {
    return static_cast<std::size_t>(std::count_if(events.begin(), events.end(),
                                                  [](const Event& e) { return e.finding.id == "watch.interruption"; }));
  }
  bool logged(const std::string& text) const {
    return std::any_of(log.begin(), log.end(), [&](const std::string& line) { return line.find(text) != npos; });
  }
  /// The watch.interruption event among `events` (REQUIREs one).
  static const Event& interruption(const std::vector<Event>& events) {
    const auto found =
        std::find_if(events.begin(), events.end(), [](const Event& e) { return e.finding.id == "watch.interruption"; });
    REQUIRE(found != events.end());
    return *found;
  }
  static constexpr std::size_t npos = std::string::npos;
};

}  // namespace

TEST_CASE("an interruption notice: event, marker removed, Slurm drained, hook run with the deadline, once", "[watch]") {
  TempDir dir;
  const std::string db = (dir.path() / "watch.db").string();
  std::int64_t stopped_at = 0;
  {
    Node node(db, k_flow_start);
    node.start();
    const Snapshot first = node.interval();
    REQUIRE(node.notices(first.events) == 1);
    const Event& event = Node::interruption(first.events);
    CHECK(event.finding.status == Status::warn);
    CHECK(event.action == "restart_job");
    CHECK_THAT(event.finding.message, Catch::Contains("deadline 2026-01-01T01:00:00Z"));
    REQUIRE(first.notices.size() == 1);
    CHECK(first.notices[0].deadline_ms == k_flow_start + 3600 * 1000);
    // The marker goes at once, on the sampling thread: nothing new is scheduled here from now on.
    CHECK(node.system.removed == std::vector<std::string>{k_marker});
    // Later intervals see the same notice: nothing runs again.
    for (int i = 0; i < 3; ++i) CHECK(node.notices(node.interval().events) == 0);
    node.stop();
    CHECK(node.hooks.commands_run == std::vector<std::string>{"scontrol show node gpu-node-1", k_drain, k_hook_run});
    // The hook may run until the deadline (one hour here); scontrol gets its own short limit.
    REQUIRE(node.hooks.command_timeouts.size() == 3);
    CHECK(node.hooks.command_timeouts[2] == std::chrono::hours(1));
    CHECK(node.logged("interruption hook " + k_hook + " finished"));
    CHECK(node.logged("Slurm: "));
    stopped_at = node.now;
  }
  // watch restarts (an upgrade, a crash) while the notice is still up: it was handled, so nothing happens again.
  Node restarted(db, stopped_at + 120'000);
  restarted.start();
  CHECK(restarted.notices(restarted.interval().events) == 0);
  restarted.stop();
  CHECK(restarted.hooks.commands_run.empty());
  CHECK(restarted.system.removed.empty());
}

TEST_CASE("a hook that runs past the deadline is stopped and logged, and a new notice runs the flow again", "[watch]") {
  TempDir dir;
  Node node((dir.path() / "watch.db").string(), k_flow_start);
  node.hooks.commands[k_hook_run] = {-1, true, false, "", ""};  // stopped at its timeout
  node.start();
  CHECK(node.notices(node.interval().events) == 1);
  // The maintenance is over (NONE), then announced again: a new notice, a new run.
  node.system.http_answers["GET /computeMetadata/v1/instance/maintenance-event"] = {200, "NONE"};
  node.interval();
  node.system.http_answers["GET /computeMetadata/v1/instance/maintenance-event"] = {200,
                                                                                    "TERMINATE_ON_HOST_MAINTENANCE"};
  CHECK(node.notices(node.interval().events) == 1);
  node.stop();
  CHECK(node.logged("did not finish before the deadline and was stopped"));
  CHECK(std::count(node.hooks.commands_run.begin(), node.hooks.commands_run.end(), "scontrol show node gpu-node-1") ==
        2);
}

TEST_CASE("without a database, a notice that ended and comes back is handled again", "[watch]") {
  // GCP's maintenance-event returns to NONE between events (cloud.google.com/compute/docs/metadata/
  // getting-live-migration-notice); the ids of ended notices were pruned only when a store was open.
  const std::string none = "none";
  Node node(none, k_flow_start);
  node.start();
  CHECK(node.notices(node.interval().events) == 1);
  node.system.http_answers["GET /computeMetadata/v1/instance/maintenance-event"] = {200, "NONE"};
  node.interval();
  node.system.http_answers["GET /computeMetadata/v1/instance/maintenance-event"] = {200,
                                                                                    "TERMINATE_ON_HOST_MAINTENANCE"};
  CHECK(node.notices(node.interval().events) == 1);
  node.stop();
  CHECK(std::count(node.hooks.commands_run.begin(), node.hooks.commands_run.end(), "scontrol show node gpu-node-1") ==
        2);  // the flow ran twice (the second hook's argv carries a later deadline)
}

TEST_CASE("a hook someone other than root could change by the time the notice comes is not run", "[watch]") {
  TempDir dir;
  Node node((dir.path() / "watch.db").string(), k_flow_start);
  node.start();
  // Trusted when the settings were read; replaced by a user's file since (the check runs again before the hook).
  node.hooks.untrusted[k_hook] = "/usr/local/bin/checkpoint belongs to uid 1000";
  CHECK(node.notices(node.interval().events) == 1);
  node.stop();
  CHECK(node.hooks.commands_run == std::vector<std::string>{"scontrol show node gpu-node-1", k_drain});
  CHECK(node.logged("interruption hook not run: on_interruption = [\"" + k_hook +
                    "\", ...]: not trusted: /usr/local/bin/checkpoint belongs to uid 1000"));
}

// GCP's maintenance-event MIGRATE_ON_HOST_MAINTENANCE: "the VM is live migrated" and keeps running
// (cloud.google.com/compute/docs/metadata/getting-live-migration-notice): an event, but no drain, no marker removed,
// no hook.
TEST_CASE("a live-migration notice is an event only: nothing is drained or stopped", "[watch]") {
  TempDir dir;
  Node node((dir.path() / "watch.db").string(), k_flow_start);
  node.system.http_answers["GET /computeMetadata/v1/instance/maintenance-event"] = {200, "MIGRATE_ON_HOST_MAINTENANCE"};
  node.start();
  const Snapshot first = node.interval();
  REQUIRE(node.notices(first.events) == 1);
  const Event& event = Node::interruption(first.events);
  CHECK(event.finding.status == Status::pass);
  CHECK(event.action == "none");
  CHECK_THAT(event.finding.message, Catch::Contains("live-migrate"));
  node.stop();
  CHECK(node.hooks.commands_run.empty());
  CHECK(node.system.removed.empty());
}

// Azure announces a Redeploy with NotBefore days ahead (learn.microsoft.com/azure/virtual-machines/linux/
// scheduled-events: "NotBefore"); AWS's scheduled events likewise. The event is raised at once, the drain and the
// hook wait until an hour before; a notice withdrawn before then never drains the node.
TEST_CASE("a notice days ahead is said at once and acted on an hour before its time", "[watch]") {
  TempDir dir;
  Node node((dir.path() / "watch.db").string(), k_flow_start);
  node.settings.cloud = "azure";
  node.settings.on_interruption.clear();
  node.system.http_answers["GET /metadata/instance/compute/name?api-version=2021-02-01&format=text"] = {200, "vm1"};
  const std::string in_two_days = "Sat, 03 Jan 2026 00:00:00 GMT";  // k_flow_start is 2026-01-01T00:00:00Z
  node.system.http_answers["GET /metadata/scheduledevents?api-version=2019-01-01"] = {
      200,
      "{\"DocumentIncarnation\": 1, \"Events\": [{\"EventId\": \"E1\", \"EventType\": \"Redeploy\", "
      "\"ResourceType\": \"VirtualMachine\", \"Resources\": [\"vm1\"], \"EventStatus\": \"Scheduled\", "
      "\"NotBefore\": \"" +
          in_two_days + "\", \"Description\": \"host maintenance\"}]}"};
  node.hooks.commands
      ["scontrol update NodeName=gpu-node-1 State=DRAIN Reason=gpuenv-interruption: azure Redeploy "
       "interruption at 2026-01-03T00:00:00Z"] = {0, false, false, "", ""};
  node.start();
  const Snapshot first = node.interval();
  REQUIRE(node.notices(first.events) == 1);
  const Event& event = Node::interruption(first.events);
  CHECK(event.finding.status == Status::warn);
  CHECK_THAT(event.finding.remedy, Catch::Contains("an hour before"));
  CHECK(node.notices(node.interval().events) == 0);  // said once
  CHECK(node.system.removed.empty());                // the marker stays, nothing drained yet
  node.now = k_flow_start + 47 * 3600 * 1000LL;      // an hour before NotBefore
  CHECK(node.notices(node.interval().events) == 0);
  node.stop();
  CHECK(node.system.removed == std::vector<std::string>{k_marker});
  REQUIRE_FALSE(node.hooks.commands_run.empty());
  CHECK(node.hooks.commands_run.front() == "scontrol show node gpu-node-1");
}
