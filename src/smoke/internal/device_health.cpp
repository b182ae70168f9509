// What NVML says around one GPU's run (issue 23 items 4, 5 and 9): who else used the GPU (then its performance figures
// are not judged: a busy GPU is not a faulty one), how many MIG instances it has (one process tests one), and the
// level-2 counters before and after (PCIe replays, NVLink errors and link states).

#include <unistd.h>

#include "smoke/internal/device_run.hpp"
#include "util/strings.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

void DeviceRun::read_nvml_before() {
  m_started = m_system.now();
  const std::string bus_id = m_gpu->info.pci_bus_id;
  if (m_gpu->nvml == nullptr || bus_id.empty()) return;
  m_usage_before = read_bounded<GpuUsage>(m_gpu->nvml, [bus_id](const NvmlMonitor& nvml) {
                     return nvml.usage(bus_id);
                   }).value_or(GpuUsage{});
  m_fabric_before = read_bounded<FabricCounters>(m_gpu->nvml, [bus_id](const NvmlMonitor& nvml) {
                      return nvml.fabric_counters(bus_id);
                    }).value_or(FabricCounters{});
}

void DeviceRun::read_usage_after() {
  const std::string bus_id = m_gpu->info.pci_bus_id;
  if (m_gpu->nvml == nullptr || bus_id.empty() || m_gpu->hung) return;
  const GpuUsage after = read_bounded<GpuUsage>(m_gpu->nvml, [bus_id](const NvmlMonitor& nvml) {
                           return nvml.usage(bus_id);
                         }).value_or(GpuUsage{});
  m_busy = busy_reason(m_usage_before, after, static_cast<unsigned>(::getpid()));
  if (m_busy) mark_busy(*m_busy);
}

void DeviceRun::mark_busy(const std::string& reason) {
  mark_not_judged(m_result.findings, m_result.metrics, reason);
  m_result.findings.push_back(Finding{"smoke.busy",
                                      Status::skip,
                                      reason + ": the performance figures are shown, not judged (results are still "
                                               "verified)",
                                      "run smoke when no other process uses the GPU (`nvidia-smi` lists them)",
                                      {}});
}

void mark_not_judged(std::vector<Finding>& findings, const std::vector<Metric>& metrics, const std::string& reason) {
  for (Finding& finding : findings) {
    bool performance = finding.id == "smoke.clocks" || finding.id == "smoke.pcie_link";
    for (const Metric& metric : metrics) {
      if (finding.id == "smoke." + metric.id && metric.verified) performance = true;
    }
    if (!performance || finding.status == Status::skip) continue;
    finding.status = Status::skip;
    finding.message += "; not judged: " + reason;
    finding.remedy.clear();
  }
}

void DeviceRun::judge_mig_instance(const std::string& profile) {
  m_result.info.mig_profile = m_gpu->info.mig_profile = profile;
  const std::string of = m_model != nullptr ? " of " + m_model->model : std::string();
  m_model = nullptr;
  Finding finding{"smoke.mig",
                  Status::skip,
                  "MIG instance " + profile + of +
                      ": the whole GPU's memory, PCIe and matmul floors do not apply to a slice; numbers only (results "
                      "are still verified)",
                  "to judge a slice, give its numbers: --expect ID=V / --minimum ID=V",
                  {}};
  const std::string bus_id = m_gpu->info.pci_bus_id;  // a MIG instance's is its GPU's
  const std::optional<MigInstances> instances =
      read_bounded<MigInstances>(m_gpu->nvml, [bus_id](const NvmlMonitor& nvml) { return nvml.mig_instances(bus_id); });
  if (instances) m_result.info.mig_instances = static_cast<unsigned>(instances->uuids.size());
  const std::string visible = m_system.environment("CUDA_VISIBLE_DEVICES").value_or("");
  const bool chosen = visible.find("MIG-") != std::string::npos;
  if ((!instances || instances->uuids.empty()) && !chosen) {
    // No count from NVML (none in the container, or it could not list them): never an OK for the whole GPU.
    finding.status = Status::warn;
    finding.message =
        "1 MIG instance tested; NVML could not list this GPU's instances, so the others (if any) are "
        "not known to be tested; " +
        finding.message;
    finding.remedy =
        "list them with `nvidia-smi -L` and run smoke once per instance: CUDA_VISIBLE_DEVICES=<uuid> "
        "gpuenv smoke (or select this one with CUDA_VISIBLE_DEVICES to test only it)";
  }
  if (instances && instances->uuids.size() > 1) {
    const std::string count = std::to_string(instances->uuids.size());
    if (chosen) {
      // The operator chose this instance (a container's slice, a per-instance run): what was asked for was tested.
      finding.message += "; CUDA_VISIBLE_DEVICES selects it, the GPU's other " +
                         std::to_string(instances->uuids.size() - 1) + " instances are not tested by this run";
    } else {
      // Before R570 a CUDA process sees one MIG instance in all: an OK here would vouch for the whole GPU from one
      // slice. From R570 it sees one per GPU instance, and the runner counts this GPU's (note_mig_coverage).
      finding.status = Status::warn;
      finding.message = "1 of " + count + " MIG instances tested: this process sees no other instance of this GPU, " +
                        "so its other " + std::to_string(instances->uuids.size() - 1) + " were not tested; " +
                        finding.message;
      finding.remedy = "run smoke once per instance: CUDA_VISIBLE_DEVICES=<uuid> gpuenv smoke (instances: " +
                       util::join(instances->uuids, ", ") + ")";
    }
  }
  m_result.findings.push_back(std::move(finding));
}

void DeviceRun::finish(int board_gpus) {
  const std::string bus_id = m_gpu->info.pci_bus_id;
  if (m_gpu->nvml == nullptr || bus_id.empty() || m_gpu->hung || !m_fabric_before.any()) return;
  const std::optional<FabricCounters> after = read_bounded<FabricCounters>(
      m_gpu->nvml, [bus_id](const NvmlMonitor& nvml) { return nvml.fabric_counters(bus_id); });
  if (!after) return;
  const double seconds = seconds_between(m_started, m_system.now());
  // An inactive link fails where Azure's aznhc runs check_nvlink_status with a verified NVLink floor: an 8-GPU
  // NVSwitch board of an SXM model (elsewhere, e.g. NVL bridges with 12 of 18 links, it is only counted).
  const GpuExpectation* model =
      m_result.info.mig_profile.empty() ? find_gpu(*m_expectations, m_gpu->info.name) : nullptr;
  const bool board = model != nullptr && model->p2p_read_minimum && model->is_verified("p2p_read_minimum") &&
                     model->p2p_board_gpus && *model->p2p_board_gpus == board_gpus;
  m_result.findings.push_back(judge_link_errors(m_fabric_before, *after, seconds, board));
}

}  // namespace gpuenv::smoke
