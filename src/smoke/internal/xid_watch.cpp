#include "smoke/internal/xid_watch.hpp"

#include "probe/collect.hpp"
#include "probe/pci_bus_id.hpp"
#include "probe/xid.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

namespace {

bool is_gpu_event(const probe::KernelEvent& event) {
  return event.kind == probe::KernelEventKind::xid || event.kind == probe::KernelEventKind::fallen_off_bus;
}

/// The tested GPU an event names, or nullptr (another GPU); `unattributed` when the event names no bus.
const TestedGpu* gpu_of(const probe::KernelEvent& event, const std::vector<TestedGpu>& gpus, bool& unattributed) {
  const std::optional<std::string> bus = probe::canonical_pci_bus_id(event.pci_bus_id);
  unattributed = !bus;
  if (!bus) return nullptr;
  for (const TestedGpu& gpu : gpus) {
    if (probe::canonical_pci_bus_id(gpu.pci_bus_id) == bus) return &gpu;
  }
  return nullptr;
}

/// The finding for one event. It names the GPU by CUDA's bus id, or by the event's canonical one, and the Xid by
/// its number: no other log text (a process name, a message tail) reaches a finding (docs/security.md).
Finding event_finding(const probe::KernelEvent& event, const TestedGpu* gpu) {
  const std::string where = gpu != nullptr ? "GPU " + std::to_string(gpu->ordinal) + " (" + gpu->pci_bus_id + ")"
                            : event.pci_bus_id.empty() ? std::string("a GPU")
                                                       : "the GPU at " + event.pci_bus_id;
  if (event.kind == probe::KernelEventKind::fallen_off_bus) {
    return Finding{"smoke.xid",
                   Status::fail,
                   where + " fell off the bus during the smoke run",
                   "drain the node: the GPU needs a reset or reboot, then `gpuenv doctor`; if it repeats, check power "
                   "and seating or replace the GPU",
                   {},
                   report::Action::reboot};  // as NVIDIA's catalog says for Xid 79 (RESTART_BM)
  }
  const int code = event.xid.value_or(0);
  const std::optional<probe::XidInfo> info = probe::xid_info(code);
  const bool severe =
      info && (info->severity == probe::XidSeverity::critical || info->severity == probe::XidSeverity::error);
  Finding finding{"smoke.xid", severe || !info ? Status::fail : Status::warn,
                  where + ": Xid " + std::to_string(code) + " during the smoke run" +
                      (info ? " (" + info->meaning + ")" : std::string(" (not in gpuenv's Xid table)")),
                  info && info->action != "-" && info->action != "none" ? info->action + "; then `gpuenv doctor`"
                                                                        : "run `gpuenv doctor`",
                  info ? info->source : std::string()};
  if (info) finding.action = report::parse_action(info->node_action);  // data/xid.toml's node_action
  return finding;
}

}  // namespace

KernelLogSnapshot snapshot_kernel_log(system::System& system) {
  KernelLogSnapshot snapshot;
  const probe::KernelLog log = probe::read_kernel_log(system, true);
  snapshot.source = log.described();
  snapshot.readable = log.readable();
  for (const probe::KernelEvent& event : probe::kernel_log_events(log).events) {
    if (is_gpu_event(event)) snapshot.seen.insert(event.raw);
  }
  return snapshot;
}

std::vector<Finding> judge_new_kernel_events(const KernelLogSnapshot& before,
                                             const std::vector<probe::KernelEvent>& after,
                                             const std::vector<TestedGpu>& gpus) {
  std::vector<Finding> out;
  for (const probe::KernelEvent& event : after) {
    if (!is_gpu_event(event) || before.seen.count(event.raw) != 0) continue;
    bool unattributed = false;
    const TestedGpu* gpu = gpu_of(event, gpus, unattributed);
    // No GPU list: cuInit failed or hung, and cuInit touches every GPU, so every event counts.
    if (gpu != nullptr || unattributed || gpus.empty()) out.push_back(event_finding(event, gpu));
  }
  if (out.empty()) {
    out.push_back(Finding{
        "smoke.xid", Status::pass, "no Xid event on a tested GPU during the run (" + before.source + ")", {}, {}});
  }
  return out;
}

std::vector<Finding> kernel_events_since(system::System& system, const KernelLogSnapshot& before,
                                         const std::vector<TestedGpu>& gpus) {
  if (!before.readable) {
    return {Finding{"smoke.xid",
                    Status::skip,
                    "Xid events during the run not checked: kernel log " + before.source,
                    "run smoke as root (or in the adm group) so that it can read the kernel log",
                    {}}};
  }
  const probe::KernelLog after = probe::read_kernel_log(system, true);
  if (!after.readable()) {
    return {Finding{
        "smoke.xid", Status::skip, "Xid events during the run not checked: kernel log " + after.described(), {}, {}}};
  }
  return judge_new_kernel_events(before, probe::kernel_log_events(after).events, gpus);
}

}  // namespace gpuenv::smoke
