#include "fleet/slurm.hpp"

#include "util/host_text.hpp"
#include "util/strings.hpp"

namespace gpuenv::fleet {
namespace {

/// "text [root@2026-12-01T02:51:25]" -> "text": scontrol appends who set the reason and when.
std::string strip_reason_stamp(std::string_view reason) {
  if (util::ends_with(reason, "]")) {
    const std::size_t open = reason.rfind(" [");
    if (open != std::string_view::npos && reason.find('@', open) != std::string_view::npos)
      reason = reason.substr(0, open);
  }
  return std::string(util::trim(reason));
}

/// True when the state carries DRAIN (DRAIN, DRAINING, DRAINED): DOWN alone is cleared at registration.
bool is_drained(const SlurmNode& node) {
  for (std::string_view flag : util::split(node.state, '+'))
    if (util::starts_with(flag, "DRAIN")) return true;
  return false;
}

/// Slurm's reboot reasons (Slurm 22.05.8 src/slurmctld/proc_req.c _slurm_rpc_reboot_nodes: "Reboot ASAP" and
/// "reboot requested" when `scontrol reboot` is given no Reason=; controller.c _queue_reboot_msg then
/// set_node_reboot_reason(node, "reboot issued"), which appends " : reboot issued" to a reason already there,
/// node_mgr.c set_node_reboot_reason) -> the reason as `scontrol reboot` wrote it, without the suffix.
std::string_view without_reboot_issued(std::string_view reason) {
  static constexpr std::string_view k_issued = " : reboot issued";
  if (reason == "reboot issued") return "";
  if (util::ends_with(reason, k_issued)) return reason.substr(0, reason.size() - k_issued.size());
  return reason;
}

}  // namespace

util::Expected<SlurmNode> parse_scontrol_show_node(std::string_view text) {
  SlurmNode node;
  bool has_name = false;
  bool has_state = false;
  for (std::string_view line : util::split_lines(text)) {
    line = util::trim(line);
    // The reason runs to the end of its line and may contain spaces or "key=value" text of its own.
    if (util::starts_with(line, "Reason=")) {
      node.reason = strip_reason_stamp(line.substr(7));
      continue;
    }
    for (std::string_view token : util::split(line, ' ')) {
      if (!has_name && util::starts_with(token, "NodeName=")) {
        node.name = std::string(token.substr(9));
        has_name = true;
      } else if (!has_state && util::starts_with(token, "State=")) {
        node.state = std::string(token.substr(6));
        has_state = true;
      } else if (util::starts_with(token, "NextState=")) {
        node.next_state = std::string(token.substr(10));
      }
    }
  }
  if (!has_name || !has_state)
    return util::Error::input(
        "`scontrol show node` printed no NodeName= and State=: " + std::string(util::trim(text.substr(0, 200))),
        "check that the node name matches a NodeName in slurm.conf (--slurm-node NAME)");
  return node;
}

bool is_unavailable(const SlurmNode& node) {
  for (std::string_view flag : util::split(node.state, '+'))
    if (util::starts_with(flag, "DRAIN") || flag == "DOWN") return true;
  return false;
}

bool is_gpuenv_reason(std::string_view reason) { return util::starts_with(reason, k_slurm_reason_prefix); }

bool is_slurm_availability_reason(std::string_view reason) {
  // Slurm 22.05.8: "Not responding" (ping_nodes.c, set_node_down), "reboot requested" and "Reboot ASAP"
  // (proc_req.c _slurm_rpc_reboot_nodes, the defaults when `scontrol reboot` is given no reason), with
  // " : reboot issued" once slurmctld sends the reboot (controller.c _queue_reboot_msg): reasons Slurm clears or
  // replaces by itself when the node registers (ReturnToService=1; a reboot's registration), so a NOT READY node
  // must carry gpuenv's. Not "Node unexpectedly rebooted" (node_mgr.c validate_node_specs) nor "reboot timed out"
  // (check_reboot_nodes): Slurm keeps those nodes DOWN for an administrator ("If the node was set DOWN for any other
  // reason (low memory, unexpected reboot, etc.), its state will not automatically be changed", slurm.conf(5)
  // ReturnToService), and taking them over would let gpuenv's next healthy check resume them. Not "reboot
  // complete": that is the operator's `scontrol reboot nextstate=DOWN`.
  static constexpr std::string_view k_reasons[] = {"Not responding", "reboot requested", "Reboot ASAP"};
  const std::string_view requested = without_reboot_issued(reason);
  if (requested.empty()) return reason == "reboot issued";
  for (std::string_view known : k_reasons)
    if (requested == known) return true;
  return false;
}

std::vector<std::string> held_states(const SlurmNode& node) {
  // Flags as node_state_string_complete prints them (Slurm 22.05 src/common/slurm_protocol_defs.c node_state_flags;
  // "MAINT" in older releases). FAIL with ALLOCATED is what sinfo calls FAILING.
  static constexpr std::string_view k_held[] = {
      "FAIL",       "FAILING",      "MAINT",         "MAINTENANCE", "REBOOT_REQUESTED", "REBOOT_ISSUED",
      "POWER_DOWN", "POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "POWER_UP",         "FUTURE"};
  std::vector<std::string> held;
  for (std::string_view flag : util::split(node.state, '+'))
    for (std::string_view known : k_held)
      if (flag == known) held.emplace_back(flag);
  return held;
}

std::string held_state(const SlurmNode& node) {
  const auto held = held_states(node);
  return held.empty() ? "" : held.front();
}

bool is_rebooting_without_owner(const SlurmNode& node) {
  // The node is in Slurm's reboot (REBOOT_ISSUED and nothing else that holds it) with no reason but Slurm's own or
  // gpuenv's: what the health check slurmd runs before it registers after `scontrol reboot` sees (slurmd.c
  // run_script_health_check, then the registration thread). LBNL NHC drains here too, so that "jobs can't run until
  // NHC onlines the node" (mej/nhc helpers/node-mark-offline, the `boot*` branch; SchedMD bug 6391).
  // Not `scontrol reboot nextstate=DOWN`: the registration leaves that node DOWN with "reboot complete" for the
  // operator (node_mgr.c validate_node_specs), and a gpuenv reason there would let a later healthy check resume it.
  const auto held = held_states(node);
  if (held.size() != 1 || held.front() != "REBOOT_ISSUED" || node.next_state == "DOWN") return false;
  return node.reason.empty() || is_slurm_availability_reason(node.reason) || is_gpuenv_reason(node.reason);
}

bool is_busy(const SlurmNode& node) {
  for (std::string_view flag : util::split(node.state, '+'))
    if (flag == "ALLOCATED" || flag == "MIXED" || flag == "COMPLETING") return true;
  return false;
}

SlurmAction decide_slurm_action(NodeHealth health, const SlurmNode& node, std::string_view oneline) {
  if (health == NodeHealth::degraded_by_jobs) health = is_busy(node) ? NodeHealth::ready : NodeHealth::not_ready;
  const bool reboot_to_hold = health == NodeHealth::not_ready && is_rebooting_without_owner(node);
  if (const std::string held = held_state(node); !held.empty() && !reboot_to_hold)
    return {SlurmActionKind::none, "", "the node is " + held + ": held by the operator or Slurm, left alone"};
  const bool ours = is_gpuenv_reason(node.reason);
  if (health == NodeHealth::ready) {
    if (is_unavailable(node) && ours) return {SlurmActionKind::resume, "", "healthy: resuming gpuenv's drain"};
    if (is_unavailable(node)) return {SlurmActionKind::none, "", "healthy, but drained by someone else: left alone"};
    return {SlurmActionKind::none, "", "healthy: nothing to do"};
  }
  const std::string reason = std::string(k_slurm_reason_prefix) + " " + util::shell_inert(util::trim(oneline));
  if (is_unavailable(node) && !ours && !node.reason.empty() && !is_slurm_availability_reason(node.reason))
    return {SlurmActionKind::none, "", "not ready, already drained by someone else: their reason kept"};
  if (is_drained(node) && node.reason == reason)
    return {SlurmActionKind::none, "", "not ready, already drained with this reason"};
  if (reboot_to_hold)
    return {SlurmActionKind::drain, reason,
            "not ready after `scontrol reboot`: draining before slurmd registers (was \"" + node.reason + "\")"};
  if (is_unavailable(node) && !ours && !node.reason.empty())
    return {SlurmActionKind::drain, reason, "not ready: draining (taking over Slurm's \"" + node.reason + "\")"};
  return {SlurmActionKind::drain, reason, "not ready: draining"};
}

std::vector<std::string> scontrol_update_argv(const std::string& node, const SlurmAction& action) {
  switch (action.kind) {
    case SlurmActionKind::none:
      return {};
    case SlurmActionKind::drain:
      return {"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + action.reason};
    case SlurmActionKind::resume:
      return {"scontrol", "update", "NodeName=" + node, "State=RESUME"};
  }
  return {};
}

util::Expected<std::string> slurm_node_name(system::System& system, const std::string& flag) {
  if (!flag.empty()) return flag;
  if (auto name = system.environment("SLURMD_NODENAME"); name && !name->empty()) return *name;
  auto hostname = system.read_file("/proc/sys/kernel/hostname");
  if (!hostname || util::trim(*hostname).empty())
    return util::Error::input("cannot read the host name from /proc/sys/kernel/hostname",
                              "name the node with --slurm-node NAME");
  const std::string_view full = util::trim(*hostname);
  return std::string(full.substr(0, full.find('.')));
}

namespace {

/// Where scontrol is looked for after PATH: slurmd runs HealthCheckProgram with an empty environment (only
/// SLURMD_NODENAME), so there is no PATH to search. Debian/Ubuntu and RPM packages, a source install, OpenHPC-style.
const std::vector<std::string>& scontrol_locations() {
  static const std::vector<std::string> locations{"scontrol", "/usr/bin/scontrol", "/usr/local/bin/scontrol",
                                                  "/opt/slurm/bin/scontrol"};
  return locations;
}

/// Runs one scontrol command (argv[0] "scontrol"); a failure becomes an input Error naming the command and its message.
util::Expected<system::CommandResult> run_scontrol(system::System& system, std::vector<std::string> argv,
                                                   std::chrono::milliseconds timeout) {
  system::CommandResult result;
  for (const std::string& program : scontrol_locations()) {
    argv.front() = program;
    result = system.run(argv, timeout);
    if (!result.not_found) break;
  }
  const std::string command = util::join(argv, " ");
  if (result.not_found)
    return util::Error::input("scontrol not found in PATH, /usr/bin, /usr/local/bin or /opt/slurm/bin",
                              "run doctor --slurm on a Slurm node, with scontrol's directory in PATH");
  if (result.timed_out)
    return util::Error::input(command + ": no answer within " + std::to_string(timeout.count() / 1000) + " s",
                              "check that slurmctld is reachable (scontrol ping)");
  if (result.exit_code != 0)
    return util::Error::input(command + " failed: " + std::string(util::trim(result.err + result.out)),
                              "check the node name (--slurm-node) and that slurmctld is up (scontrol ping)");
  return result;
}

}  // namespace

SlurmAction decide_interruption_drain(const SlurmNode& node, std::string_view what) {
  if (const std::string held = held_state(node); !held.empty())
    return {SlurmActionKind::none, "", "the node is " + held + ": held by the operator or Slurm, left alone"};
  const std::string reason = std::string(k_interruption_reason_prefix) + " " + util::shell_inert(util::trim(what));
  if (is_drained(node) && node.reason == reason)
    return {SlurmActionKind::none, "", "already drained for this interruption"};
  const bool someone_elses = is_unavailable(node) && !node.reason.empty() && !is_gpuenv_reason(node.reason) &&
                             !is_slurm_availability_reason(node.reason) &&
                             !util::starts_with(node.reason, k_interruption_reason_prefix);
  if (someone_elses) return {SlurmActionKind::none, "", "already drained by someone else: their reason kept"};
  return {SlurmActionKind::drain, reason, "draining before the interruption"};
}

namespace {

/// Reads `node`, decides with `decide`, and runs the update; each scontrol call gets `timeout`.
template <typename Decide>
util::Expected<SlurmOutcome> read_decide_update(system::System& system, const std::string& node,
                                                std::chrono::milliseconds timeout, Decide decide) {
  GPUENV_TRY_ASSIGN(auto shown, run_scontrol(system, {"scontrol", "show", "node", node}, timeout));
  GPUENV_TRY_ASSIGN(auto parsed, parse_scontrol_show_node(shown.out));
  SlurmOutcome outcome{parsed, decide(parsed)};
  if (const auto argv = scontrol_update_argv(node, outcome.action); !argv.empty()) {
    GPUENV_TRY(run_scontrol(system, argv, timeout));
  }
  return outcome;
}

}  // namespace

util::Expected<SlurmOutcome> drain_for_interruption(system::System& system, const std::string& node,
                                                    std::string_view what, std::chrono::milliseconds timeout) {
  return read_decide_update(system, node, timeout,
                            [what](const SlurmNode& parsed) { return decide_interruption_drain(parsed, what); });
}

util::Expected<SlurmOutcome> run_slurm_health_check(system::System& system, const std::string& node, NodeHealth health,
                                                    std::string_view oneline, std::chrono::milliseconds timeout) {
  return read_decide_update(system, node, timeout, [health, oneline](const SlurmNode& parsed) {
    return decide_slurm_action(health, parsed, oneline);
  });
}

}  // namespace gpuenv::fleet
