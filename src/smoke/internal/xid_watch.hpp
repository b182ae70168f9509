#pragma once
// Xid events during a smoke run: the kernel log is read before the first GPU is touched and again after the last
// step, and every NVIDIA event that appeared in between, on a tested GPU, becomes a finding (smoke.xid).

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "probe/xid.hpp"
#include "report/finding.hpp"
#include "system/system.hpp"

namespace gpuenv::smoke {

/// The kernel log's GPU events before the run.
struct KernelLogSnapshot {
  bool readable = false;
  std::string source;          ///< "dmesg", a log file, or why it could not be read
  std::set<std::string> seen;  ///< the raw lines (kmsg: whole records, sequence number included) of events there
};

/// Reads the kernel log (dmesg, else kern.log/syslog/messages) and remembers its GPU events.
KernelLogSnapshot snapshot_kernel_log(system::System& system);

/// A tested GPU: its CUDA ordinal and the PCI bus id the driver reported.
struct TestedGpu {
  int ordinal = 0;
  std::string pci_bus_id;
};

/// Findings for the Xid and fallen-off-the-bus events of `after` that `before` did not hold, on a tested GPU (or with
/// no bus id; on any GPU when `gpus` is empty, as after a failed cuInit): critical and error Xids fail, the rest
/// warn; one pass finding when there are none. Findings name the GPU and the Xid number, never the log's text.
std::vector<report::Finding> judge_new_kernel_events(const KernelLogSnapshot& before,
                                                     const std::vector<probe::KernelEvent>& after,
                                                     const std::vector<TestedGpu>& gpus);

/// Reads the log again and judges what the run added (judge_new_kernel_events).
std::vector<report::Finding> kernel_events_since(system::System& system, const KernelLogSnapshot& before,
                                                 const std::vector<TestedGpu>& gpus);

}  // namespace gpuenv::smoke
