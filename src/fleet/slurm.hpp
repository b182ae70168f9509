#pragma once
// Slurm HealthCheckProgram contract (slurm.conf(5), slurmd `run_script_health_check`): Slurm only logs the program's
// exit code, so the program drains its own node (`scontrol update NodeName=N State=DRAIN Reason=...`) and resumes it
// when healthy again. gpuenv owns only the drains whose reason starts with "gpuenv:" (as NHC owns "NHC:"): it never
// resumes or rewrites an operator's drain. Reasons Slurm writes itself and clears at registration
// ("Not responding", "reboot requested", "Reboot ASAP") say nothing about its health: a NOT READY node with one of
// them is drained with gpuenv's reason, or slurmd's registration would put it back in service (ReturnToService=1).
// Nodes an operator or Slurm holds in a state of their own (FAIL, MAINTENANCE, a pending reboot, power saving) are
// never touched. The decision table is in docs/fleet.md.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::fleet {

/// The prefix that marks a drain reason as gpuenv's own.
inline constexpr std::string_view k_slurm_reason_prefix = "gpuenv:";
/// The prefix of the drain `gpuenv watch` makes on a cloud's interruption notice. Not "gpuenv:": the health check
/// resumes gpuenv's drains once the node is healthy again, and a node about to be reclaimed is healthy until then.
/// An operator resumes it if the instance comes back (an Azure Reboot or Redeploy).
inline constexpr std::string_view k_interruption_reason_prefix = "gpuenv-interruption:";

/// A node as `scontrol show node NAME` prints it (the fields the decision needs).
struct SlurmNode {
  std::string name;
  std::string state;         ///< "IDLE", "IDLE+DRAIN", "MIXED+DRAIN", "DOWN+NOT_RESPONDING", ...
  std::string reason;        ///< without the trailing " [user@time]"; empty when the node has none
  std::string next_state{};  ///< "RESUME", "DOWN", ... after `scontrol reboot` (NextState=); empty when none
};

/// Parses the multi-line `scontrol show node NAME` output; an input Error when it has no NodeName= or State=.
util::Expected<SlurmNode> parse_scontrol_show_node(std::string_view text);

/// True when the state carries DRAIN (DRAIN, DRAINING, DRAINED) or DOWN: the node takes no new work.
bool is_unavailable(const SlurmNode& node);

/// True when the node's reason was written by gpuenv.
bool is_gpuenv_reason(std::string_view reason);

/// True when the reason is one slurmctld writes itself when a node stops answering or reboots (Slurm 22.05
/// src/slurmctld/ping_nodes.c, node_mgr.c validate_node_specs, proc_req.c _slurm_rpc_reboot_nodes): gpuenv may
/// replace it with its own on a NOT READY node.
bool is_slurm_availability_reason(std::string_view reason);

/// The state flags that put the node outside gpuenv's reach ("FAIL", "MAINTENANCE", "REBOOT_REQUESTED",
/// "REBOOT_ISSUED", "POWER_DOWN", ...), in the order the state names them; empty when there is none.
std::vector<std::string> held_states(const SlurmNode& node);

/// The first of held_states, or "" when there is none.
std::string held_state(const SlurmNode& node);

/// True when the node is in a reboot Slurm issued (REBOOT_ISSUED, no other held flag) that does not end DOWN
/// (`nextstate=DOWN`) and its reason is Slurm's own ("Reboot ASAP", "reboot requested", "... : reboot issued"),
/// gpuenv's, or none: the one held state a NOT READY check drains, as NHC's node-mark-offline does, so the node does
/// not register back into service.
bool is_rebooting_without_owner(const SlurmNode& node);

/// True when jobs run on the node (ALLOCATED or MIXED, or COMPLETING).
bool is_busy(const SlurmNode& node);

/// Doctor's judgement as the health check sees it.
enum class NodeHealth {
  ready,             ///< READY, or DEGRADED without --strict
  not_ready,         ///< NOT READY, or DEGRADED with --strict
  degraded_by_jobs,  ///< DEGRADED under --strict only by what a running job causes (its GPU processes, MIG, its Xids)
};

enum class SlurmActionKind { none, drain, resume };

struct SlurmAction {
  SlurmActionKind kind = SlurmActionKind::none;
  std::string reason;  ///< the drain reason ("gpuenv: <oneline>"); empty unless drain
  std::string why;     ///< one line for the log: what was decided and why
};

/// The health check's decision, a pure function of doctor's judgement and the node's current state and reason:
/// a held state -> nothing; not ready -> drain (unless an operator's drain or the same gpuenv reason is already
/// there); ready -> resume only a gpuenv drain; degraded by jobs -> ready on a busy node, not ready on an idle one.
/// The drain reason is "gpuenv: " and `oneline` made shell-inert (util::shell_inert).
SlurmAction decide_slurm_action(NodeHealth health, const SlurmNode& node, std::string_view oneline);

/// The scontrol argv that carries out `action` on `node` (empty for none); never a shell string.
std::vector<std::string> scontrol_update_argv(const std::string& node, const SlurmAction& action);

/// Slurm's name for this node: `flag` when given, else $SLURMD_NODENAME (set for HealthCheckProgram since 20.11),
/// else the short host name (what slurmd uses when NodeName has no alias).
util::Expected<std::string> slurm_node_name(system::System& system, const std::string& flag);

/// What the health check found and did.
struct SlurmOutcome {
  SlurmNode before;
  SlurmAction action;
};

/// The drain for an interruption notice (`what`: "aws spot interruption at ..."), a pure function of the node: a held
/// state or an operator's drain -> nothing; the same interruption drain already there -> nothing; else drain with
/// k_interruption_reason_prefix and `what` made shell-inert (over a drain of gpuenv's health check too).
SlurmAction decide_interruption_drain(const SlurmNode& node, std::string_view what);

/// Reads the node with scontrol and drains it for an interruption (decide_interruption_drain).
util::Expected<SlurmOutcome> drain_for_interruption(system::System& system, const std::string& node,
                                                    std::string_view what, std::chrono::milliseconds timeout);

/// Reads the node with scontrol, decides, and runs the update; each scontrol call gets `timeout`.
util::Expected<SlurmOutcome> run_slurm_health_check(system::System& system, const std::string& node, NodeHealth health,
                                                    std::string_view oneline, std::chrono::milliseconds timeout);

}  // namespace gpuenv::fleet
