// The Slurm health-check contract as pure functions: the parser on captured `scontrol show node` output (Slurm
// 22.05.8, tests/fixtures/fleet), the drain/resume decision table, the scontrol argv, and the orchestration through
// FakeSystem.

#include "fleet/slurm.hpp"

#include <catch2/catch.hpp>

#include "support/fake_system.hpp"
#include "util/strings.hpp"

namespace {

using gpuenv::fleet::decide_interruption_drain;
using gpuenv::fleet::decide_slurm_action;
using gpuenv::fleet::NodeHealth;
using gpuenv::fleet::parse_scontrol_show_node;
using gpuenv::fleet::SlurmActionKind;
using gpuenv::fleet::SlurmNode;
using gpuenv::testing::read_fixture;

constexpr const char* k_bad_line = "NOT READY: gpu.ecc: GPU 0: 3 uncorrected ECC errors\n";

}  // namespace

TEST_CASE("scontrol show node: state and reason from captured Slurm 22.05 output", "[fleet][slurm]") {
  const auto idle = parse_scontrol_show_node(read_fixture("fleet/scontrol-show-node-idle.txt"));
  REQUIRE(idle);
  CHECK(idle->name == "vm");
  CHECK(idle->state == "IDLE");
  CHECK(idle->reason.empty());
  CHECK_FALSE(gpuenv::fleet::is_unavailable(*idle));

  const auto ours = parse_scontrol_show_node(read_fixture("fleet/scontrol-show-node-gpuenv-drain.txt"));
  REQUIRE(ours);
  CHECK(ours->state == "IDLE+DRAIN");
  CHECK(ours->reason == "gpuenv: NOT READY: gpu.ecc: GPU 0: 3 uncorrected ECC errors (+1)");
  CHECK(gpuenv::fleet::is_unavailable(*ours));

  // An operator's reason with brackets and "State=" text of its own: only the trailing [user@time] stamp goes.
  const auto operators = parse_scontrol_show_node(read_fixture("fleet/scontrol-show-node-operator-drain.txt"));
  REQUIRE(operators);
  CHECK(operators->state == "IDLE+DRAIN");
  CHECK(operators->reason == "disk swap [ticket OPS-1234] State=maint");
}

TEST_CASE("scontrol show node: output without a node is an input error", "[fleet][slurm]") {
  const auto missing = parse_scontrol_show_node("Node gpu07 not found\n");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("Node gpu07 not found") != std::string::npos);
}

TEST_CASE("slurm decision: drain on NOT READY, resume only gpuenv's drain, never touch an operator's",
          "[fleet][slurm]") {
  const SlurmNode idle{"n1", "IDLE", ""};
  const SlurmNode mixed_ours{"n1", "MIXED+DRAIN", "gpuenv: NOT READY: xid.events: Xid 79"};
  const SlurmNode operators{"n1", "IDLE+DRAIN", "bad DIMM, ticket 42"};
  const SlurmNode down_ours{"n1", "DOWN", "gpuenv: NOT READY: driver.kernel_module: no module"};
  const SlurmNode draining_ours{"n1", "ALLOCATED+DRAIN", "gpuenv: NOT READY: gpu.ecc: GPU 0: 3 uncorrected ECC errors"};

  const auto drain = decide_slurm_action(NodeHealth::not_ready, idle, k_bad_line);
  CHECK(drain.kind == SlurmActionKind::drain);
  CHECK(drain.reason == "gpuenv: NOT READY: gpu.ecc: GPU 0: 3 uncorrected ECC errors");

  CHECK(decide_slurm_action(NodeHealth::not_ready, operators, k_bad_line).kind == SlurmActionKind::none);
  CHECK(decide_slurm_action(NodeHealth::not_ready, draining_ours, k_bad_line).kind ==
        SlurmActionKind::none);  // same reason
  // A new problem replaces gpuenv's own older reason.
  const auto redrain = decide_slurm_action(NodeHealth::not_ready, mixed_ours, k_bad_line);
  CHECK(redrain.kind == SlurmActionKind::drain);
  CHECK(redrain.reason == drain.reason);

  CHECK(decide_slurm_action(NodeHealth::ready, idle, "READY: 8 GPUs").kind == SlurmActionKind::none);
  CHECK(decide_slurm_action(NodeHealth::ready, mixed_ours, "READY: 8 GPUs").kind == SlurmActionKind::resume);
  CHECK(decide_slurm_action(NodeHealth::ready, down_ours, "READY: 8 GPUs").kind == SlurmActionKind::resume);
  CHECK(decide_slurm_action(NodeHealth::ready, operators, "READY: 8 GPUs").kind == SlurmActionKind::none);
  // "gpuenv" without the colon is not the prefix gpuenv writes.
  CHECK(decide_slurm_action(NodeHealth::ready, {"n1", "IDLE+DRAIN", "gpuenv upgrade by ops"}, "READY").kind ==
        SlurmActionKind::none);
}

// gpuenv watch drains a node on a cloud's interruption notice; the node is healthy until it is taken away, so the
// health check (doctor --slurm, every HealthCheckInterval) must not resume that drain as it resumes its own.
TEST_CASE("slurm decision: an interruption drain is never resumed by the health check", "[fleet][slurm]") {
  const std::string what = "aws spot interruption at 2026-12-04T17:02:00Z";
  const auto drain = decide_interruption_drain({"n1", "MIXED", ""}, what);
  CHECK(drain.kind == SlurmActionKind::drain);
  CHECK(drain.reason == "gpuenv-interruption: aws spot interruption at 2026-12-04T17:02:00Z");
  const SlurmNode drained{"n1", "MIXED+DRAIN", drain.reason};
  CHECK(decide_slurm_action(NodeHealth::ready, drained, "READY: 8 GPUs").kind == SlurmActionKind::none);
  CHECK(decide_slurm_action(NodeHealth::not_ready, drained, k_bad_line).kind == SlurmActionKind::none);
  CHECK(decide_interruption_drain(drained, what).kind == SlurmActionKind::none);  // already drained for it
  // Over the health check's own drain; never over an operator's, nor a held state.
  CHECK(decide_interruption_drain({"n1", "IDLE+DRAIN", "gpuenv: NOT READY: xid.events: Xid 79"}, what).kind ==
        SlurmActionKind::drain);
  CHECK(decide_interruption_drain({"n1", "IDLE+DRAIN", "bad DIMM, ticket 42"}, what).kind == SlurmActionKind::none);
  CHECK(decide_interruption_drain({"n1", "MAINT+RESERVED", ""}, what).kind == SlurmActionKind::none);
}

TEST_CASE("slurm decision: Slurm's own availability reasons are taken over on NOT READY, never resumed",
          "[fleet][slurm]") {
  // What the first health check sees when slurmd starts before it registers (Slurm 22.05 node_mgr.c
  // validate_node_specs): with ReturnToService=1 a DOWN node whose reason is "Not responding" returns to service at
  // registration, so a NOT READY node must carry gpuenv's reason by then.
  for (const char* reason : {"Not responding", "reboot requested", "Reboot ASAP"}) {
    INFO(reason);
    const SlurmNode node{"n1", "DOWN+NOT_RESPONDING", reason};
    const auto drain = decide_slurm_action(NodeHealth::not_ready, node, k_bad_line);
    CHECK(drain.kind == SlurmActionKind::drain);
    CHECK(drain.reason == "gpuenv: NOT READY: gpu.ecc: GPU 0: 3 uncorrected ECC errors");
    CHECK(drain.why.find(reason) != std::string::npos);
    // Healthy: Slurm's own reason is Slurm's to clear (ReturnToService), not gpuenv's.
    CHECK(decide_slurm_action(NodeHealth::ready, node, "READY").kind == SlurmActionKind::none);
  }
  // Slurm keeps these DOWN for an administrator whatever ReturnToService says (slurm.conf(5) ReturnToService: "If the
  // node was set DOWN for any other reason (low memory, unexpected reboot, etc.), its state will not automatically be
  // changed"): gpuenv neither takes them over nor, later, resumes them.
  for (const char* reason : {"Node unexpectedly rebooted", "reboot timed out"}) {
    INFO(reason);
    const SlurmNode node{"n1", "DOWN", reason};
    CHECK(decide_slurm_action(NodeHealth::not_ready, node, k_bad_line).kind == SlurmActionKind::none);
    CHECK(decide_slurm_action(NodeHealth::ready, node, "READY").kind == SlurmActionKind::none);
  }
  // Look-alikes are an operator's words.
  CHECK(decide_slurm_action(NodeHealth::not_ready, {"n1", "DOWN", "Not responding to pings, ticket 7"}, k_bad_line)
            .kind == SlurmActionKind::none);
  CHECK(decide_slurm_action(NodeHealth::not_ready, {"n1", "DOWN", "reboot complete"}, k_bad_line).kind ==
        SlurmActionKind::none);
}

TEST_CASE("slurm decision: a NOT READY node in a reboot Slurm issued is drained before it registers",
          "[fleet][slurm]") {
  // Slurm 22.05.8 src/slurmctld/controller.c _queue_reboot_msg: an issued reboot makes the node
  // DOWN+REBOOT_ISSUED (+DRAIN after `reboot ASAP`) and appends " : reboot issued" to its reason
  // (node_mgr.c set_node_reboot_reason); proc_req.c _slurm_rpc_reboot_nodes wrote "Reboot ASAP" or "reboot requested"
  // when `scontrol reboot` had no Reason=. slurmd runs the health check before it registers, and the registration
  // (node_mgr.c validate_node_specs, the `IS_NODE_REBOOT_ISSUED` branch) returns the node to service; only a DRAIN
  // flag set before then keeps it out. LBNL NHC does the same in helpers/node-mark-offline's `boot*` branch ("Offline
  // node after reboot if vanilla `scontrol reboot` was called, so jobs can't run until NHC onlines the node").
  const SlurmNode booting[] = {
      {"n1", "DOWN+REBOOT_ISSUED", "reboot requested : reboot issued"},
      {"n1", "DOWN+DRAIN+REBOOT_ISSUED", "Reboot ASAP : reboot issued"},
      {"n1", "DOWN+REBOOT_ISSUED", "reboot issued"},
      {"n1", "DOWN+REBOOT_ISSUED", "Reboot ASAP"},
      {"n1", "DOWN+REBOOT_ISSUED", ""},
      // gpuenv drained it before the operator rebooted it: Slurm appended its suffix to gpuenv's reason.
      {"n1", "DOWN+DRAIN+REBOOT_ISSUED", "gpuenv: NOT READY: gpu.ecc: GPU 0 : reboot issued"},
  };
  for (const SlurmNode& node : booting) {
    INFO(node.state << " / " << node.reason);
    CHECK(gpuenv::fleet::is_rebooting_without_owner(node));
    const auto drain = decide_slurm_action(NodeHealth::not_ready, node, k_bad_line);
    CHECK(drain.kind == SlurmActionKind::drain);
    CHECK(drain.reason == "gpuenv: NOT READY: gpu.ecc: GPU 0: 3 uncorrected ECC errors");
    CHECK(gpuenv::util::contains(drain.why, "scontrol reboot"));
    // Healthy: the reboot's registration is Slurm's (its nextstate); gpuenv resumes nothing in the middle of it.
    CHECK(decide_slurm_action(NodeHealth::ready, node, "READY").kind == SlurmActionKind::none);
  }
  // As scontrol prints them (tests/fixtures/fleet, real Slurm 22.05.8 output): `reboot ASAP` is drained over;
  // `nextstate=DOWN` is left alone, the registration keeps that node DOWN for the operator.
  const auto asap = parse_scontrol_show_node(read_fixture("fleet/scontrol-show-node-reboot-asap-issued.txt"));
  REQUIRE(asap);
  CHECK(asap->state == "DOWN+DRAIN+REBOOT_ISSUED");
  CHECK(asap->next_state == "RESUME");
  CHECK(asap->reason == "Reboot ASAP : reboot issued");
  CHECK(decide_slurm_action(NodeHealth::not_ready, *asap, k_bad_line).kind == SlurmActionKind::drain);
  const auto down = parse_scontrol_show_node(read_fixture("fleet/scontrol-show-node-reboot-nextstate-down-issued.txt"));
  REQUIRE(down);
  CHECK(down->next_state == "DOWN");
  CHECK(down->reason == "reboot requested : reboot issued");
  CHECK_FALSE(gpuenv::fleet::is_rebooting_without_owner(*down));
  CHECK(decide_slurm_action(NodeHealth::not_ready, *down, k_bad_line).kind == SlurmActionKind::none);

  // Already drained with the same line: nothing to do.
  const SlurmNode drained{"n1", "DOWN+DRAIN+REBOOT_ISSUED",
                          "gpuenv: NOT READY: gpu.ecc: GPU 0: 3 uncorrected ECC errors"};
  CHECK(decide_slurm_action(NodeHealth::not_ready, drained, k_bad_line).kind == SlurmActionKind::none);
  // A reboot Slurm has not issued yet (the node still runs jobs) and a reboot with the operator's reason: held.
  for (const SlurmNode& node : {SlurmNode{"n1", "MIXED+REBOOT_REQUESTED", "reboot requested"},
                                SlurmNode{"n1", "DOWN+REBOOT_ISSUED", "firmware update : reboot issued"},
                                SlurmNode{"n1", "DOWN+REBOOT_ISSUED+FAIL", "reboot requested : reboot issued"}}) {
    INFO(node.state << " / " << node.reason);
    CHECK_FALSE(gpuenv::fleet::is_rebooting_without_owner(node));
    CHECK(decide_slurm_action(NodeHealth::not_ready, node, k_bad_line).kind == SlurmActionKind::none);
  }
}

TEST_CASE("slurm decision: FAIL, FAILING, MAINT, a pending reboot and power saving are never touched",
          "[fleet][slurm]") {
  const SlurmNode held[] = {
      {"n1", "IDLE+FAIL", "RMA ticket 42"},
      {"n1", "ALLOCATED+FAIL", "RMA ticket 42"},  // sinfo's FAILING
      {"n1", "IDLE+MAINTENANCE", ""},
      {"n1", "IDLE+DRAIN+REBOOT_REQUESTED", "Reboot ASAP"},
      // A reboot the operator gave a reason of their own: their words stay (the reboot's registration decides).
      {"n1", "DOWN+REBOOT_ISSUED", "firmware update : reboot issued"},
      {"n1", "DOWN+DRAIN+REBOOT_ISSUED+MAINTENANCE", "Reboot ASAP : reboot issued"},
      {"n1", "IDLE+POWERED_DOWN", ""},
      // Even a gpuenv reason under FAIL: the operator's state wins (no resume that would clear it).
      {"n1", "IDLE+DRAIN+FAIL", "gpuenv: NOT READY: gpu.ecc: GPU 0"},
  };
  for (const SlurmNode& node : held) {
    INFO(node.state << " " << node.reason);
    CHECK(decide_slurm_action(NodeHealth::not_ready, node, k_bad_line).kind == SlurmActionKind::none);
    CHECK(decide_slurm_action(NodeHealth::ready, node, "READY").kind == SlurmActionKind::none);
    CHECK_FALSE(gpuenv::fleet::held_state(node).empty());
  }
  CHECK(gpuenv::fleet::held_state({"n1", "MIXED+DRAIN", ""}).empty());
}

TEST_CASE("slurm decision: under --strict, warnings a running job causes do not drain a busy node", "[fleet][slurm]") {
  const SlurmNode busy{"n1", "MIXED", ""};
  const SlurmNode idle{"n1", "IDLE", ""};
  CHECK(decide_slurm_action(NodeHealth::degraded_by_jobs, busy, "DEGRADED: gpu.processes: 2").kind ==
        SlurmActionKind::none);
  CHECK(decide_slurm_action(NodeHealth::degraded_by_jobs, {"n1", "ALLOCATED", ""}, "DEGRADED").kind ==
        SlurmActionKind::none);
  CHECK(decide_slurm_action(NodeHealth::degraded_by_jobs, idle, "DEGRADED: gpu.processes: 2").kind ==
        SlurmActionKind::drain);
  CHECK(decide_slurm_action(NodeHealth::degraded_by_jobs, {"n1", "MIXED+DRAIN", "gpuenv: DEGRADED: x"}, "DEGRADED")
            .kind == SlurmActionKind::resume);
}

TEST_CASE("slurm argv: scontrol update with the reason as one argument, no shell, nothing a shell would expand",
          "[fleet][slurm]") {
  // The reason reaches sinfo -R, NHC's and sites' scripts: no ' " ` $ \ in it, whatever the line carried.
  const auto drain = decide_slurm_action(NodeHealth::not_ready, {"n1", "IDLE", ""},
                                         "NOT READY: host.os: \"quoted\" '$(x)' `y` a\\b\n");
  CHECK(gpuenv::fleet::scontrol_update_argv("gpu07", drain) ==
        std::vector<std::string>{"scontrol", "update", "NodeName=gpu07", "State=DRAIN",
                                 "Reason=gpuenv: NOT READY: host.os: quoted (x) y ab"});
  CHECK(gpuenv::fleet::scontrol_update_argv("gpu07", {SlurmActionKind::resume, "", ""}) ==
        std::vector<std::string>{"scontrol", "update", "NodeName=gpu07", "State=RESUME"});
  CHECK(gpuenv::fleet::scontrol_update_argv("gpu07", {}).empty());
}

TEST_CASE("slurm node name: flag, then SLURMD_NODENAME, then the short host name", "[fleet][slurm]") {
  gpuenv::testing::FakeSystem system;
  system.files["/proc/sys/kernel/hostname"] = "gpu07.cluster.example\n";
  CHECK(*gpuenv::fleet::slurm_node_name(system, "") == "gpu07");
  system.env["SLURMD_NODENAME"] = "gpu-alias-7";
  CHECK(*gpuenv::fleet::slurm_node_name(system, "") == "gpu-alias-7");
  CHECK(*gpuenv::fleet::slurm_node_name(system, "n9") == "n9");
}

TEST_CASE("slurm health check: reads the node, then drains it through scontrol", "[fleet][slurm]") {
  gpuenv::testing::FakeSystem system;
  system.commands["scontrol show node vm"] = {0, false, false, read_fixture("fleet/scontrol-show-node-idle.txt"), ""};
  const std::string update =
      "scontrol update NodeName=vm State=DRAIN Reason=gpuenv: NOT READY: gpu.ecc: GPU 0: 3 "
      "uncorrected ECC errors";
  system.commands[update] = {0, false, false, "", ""};
  const auto outcome =
      gpuenv::fleet::run_slurm_health_check(system, "vm", NodeHealth::not_ready, k_bad_line, std::chrono::seconds(5));
  REQUIRE(outcome);
  CHECK(outcome->action.kind == SlurmActionKind::drain);
  CHECK(system.commands_run == std::vector<std::string>{"scontrol show node vm", update});

  gpuenv::testing::FakeSystem down;
  down.commands["scontrol show node vm"] = {1, false, false, "",
                                            "slurm_load_node error: Unable to contact slurm "
                                            "controller (connect failure)"};
  const auto failed =
      gpuenv::fleet::run_slurm_health_check(down, "vm", NodeHealth::not_ready, k_bad_line, std::chrono::seconds(5));
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message.find("Unable to contact slurm controller") != std::string::npos);
}

TEST_CASE("slurm health check: finds scontrol without PATH (slurmd runs the program with an empty environment)",
          "[fleet][slurm]") {
  gpuenv::testing::FakeSystem system;
  system.commands["/usr/bin/scontrol show node vm"] = {0, false, false,
                                                       read_fixture("fleet/scontrol-show-node-gpuenv-drain.txt"), ""};
  system.commands["/usr/bin/scontrol update NodeName=vm State=RESUME"] = {0, false, false, "", ""};
  const auto outcome =
      gpuenv::fleet::run_slurm_health_check(system, "vm", NodeHealth::ready, "READY", std::chrono::seconds(5));
  REQUIRE(outcome);
  CHECK(outcome->action.kind == SlurmActionKind::resume);
  CHECK(system.commands_run.back() == "/usr/bin/scontrol update NodeName=vm State=RESUME");

  gpuenv::testing::FakeSystem none;
  const auto missing =
      gpuenv::fleet::run_slurm_health_check(none, "vm", NodeHealth::ready, "READY", std::chrono::seconds(5));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("scontrol not found") != std::string::npos);
}
