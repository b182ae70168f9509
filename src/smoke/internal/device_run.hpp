#pragma once
// One GPU's steps in order: device query, kernels, copies, matmuls (ours and cuBLAS), the memory test; NVML read around
// them (who else uses the GPU, level-2 counters, MIG instances). Every GPU of a run has its own DeviceRun on its own
// thread (runner.cpp); their timed host<->device copies take turns on the node's host link.

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "smoke/internal/expectations.hpp"
#include "smoke/internal/host_link.hpp"
#include "smoke/internal/nvml_monitor.hpp"
#include "smoke/internal/step.hpp"
#include "smoke/smoke.hpp"
#include "system/system.hpp"

namespace gpuenv::smoke {

/// The steps of one GPU, in order; each records its findings and metrics into `result`. A failed device query, a
/// sticky error or a hang stops the GPU (gpu->stopped); later steps then do nothing.
class DeviceRun {
 public:
  DeviceRun(system::System& system, std::shared_ptr<Gpu> gpu, std::shared_ptr<const Expectations> expectations,
            std::string driver_version, int driver_version_number, DeviceResult& result);

  /// Device query, kernels, copies, matmuls (ours and cuBLAS), the memory test; NVML's usage before and after.
  void run();

  /// After the node-wide steps (concurrent copies, peers): the level-2 counters against their values before the run
  /// (`board_gpus`: the GPUs the node should have, for the NVLink rules of an 8-GPU board).
  void finish(int board_gpus);

  /// Why this GPU's performance figures are not judged ("GPU in use by PID ..."), if another process used it.
  const std::optional<std::string>& busy() const { return m_busy; }

  /// Unloads the module and releases the context (after the peer copies, which need every GPU's context).
  /// A GPU stopped by an error is released too (else its context leaks); only a hung one is left alone.
  void release();

 private:
  /// Runs one step unless the GPU is stopped; true when it finished without a failing finding.
  template <typename Body>
  bool step(const std::string& id, Body body);

  /// Every later step thread runs on the CPUs of the GPU's NUMA node (as nvbandwidth does), so pinned buffers are
  /// allocated, and pageable copies staged, in the GPU's local memory: the far socket of a dual-socket HGX costs
  /// several GB/s of host<->device bandwidth. Says where the step threads really run (smoke.cpu_placement).
  void place_on_local_cpus();

  /// A MIG instance has a slice of the GPU's SMs, memory bandwidth and copy engines: the whole GPU's floors would
  /// fail a healthy slice, so it is measured and verified but not judged (the operator's --expect still applies). A
  /// process sees one instance: when NVML lists more, "1 of N instances tested" warns (never OK for the whole GPU).
  void judge_mig_instance(const std::string& profile);

  void absorb(StepOutcome outcome);

  /// The copy tests (copies.cpp): buffers and the pattern written by the GPU, then device<->device.
  void copies();
  /// Pinned then pageable D2H and H2D through one host buffer each, the PCIe link sampled while they run: in this
  /// GPU's turn on the host link (`wait`: until its turn comes; else only when the link is free now). True when done.
  bool host_link_copies(bool wait);
  /// The copy engine's D2D (a figure) and the SM stream copy (smoke.memory_bandwidth, judged).
  void device_copies();
  /// HBM bandwidth: DCGM's memory_bandwidth minimum where the row verifies it, the datasheet x the stream kernel's
  /// efficiency as an (uncalibrated) estimate beside it.
  Expectation memory_bandwidth_expectation() const;
  /// The pinned copies' expectation for the link the slot should give (sysfs maxima), and a smoke.pcie_link warning
  /// when the link `under_load` ran slower or narrower than that.
  Expectation pcie_link_expectation(const LinkUnderLoad& under_load);

  /// Frees the copy buffers, also after an error (else they leak); a hung GPU's thread may still use them.
  void free_copy_buffers_unless_hung();

  int sgemm_size() const;
  int tensor_size() const;
  /// BF16 where the GPU has it (CC 8.0 and newer), else FP16.
  Precision tensor_precision() const { return m_gpu->info.cc_major >= 8 ? Precision::bf16 : Precision::fp16; }

  /// The node's cuBLAS, then our kernel, each precision back to back so that both use the same operands and ours is
  /// judged against cuBLAS's number.
  void matmuls();

  /// The SM clock the matmuls ran at (the device query shows only the maximum) and whether the GPU throttled.
  void judge_matmul_clocks(const std::vector<ClockSample>& samples);

  /// The median of metric `id` measured on this GPU so far, if any.
  std::optional<double> measured(const std::string& id) const;

  void memtest();

  /// NVML's compute processes, utilisation and level-2 counters before this process touches the GPU.
  void read_nvml_before();
  /// Who used the GPU during the run: performance findings are then not judged (mark_busy).
  void read_usage_after();
  /// Turns every performance judgement of this GPU into a skip naming `reason`; wrong results still fail.
  void mark_busy(const std::string& reason);

  system::System& m_system;
  std::shared_ptr<Gpu> m_gpu;
  std::shared_ptr<const Expectations> m_expectations;  ///< shared with step threads that may outlive the run
  std::string m_driver_version;
  int m_driver_version_number = 0;  ///< cuDriverGetVersion, 12080
  DeviceResult& m_result;
  const GpuExpectation* m_model = nullptr;
  bool m_host_copies_done = false;
  GpuUsage m_usage_before;
  FabricCounters m_fabric_before;
  std::chrono::steady_clock::time_point m_started{};  ///< read_nvml_before (System::now)
  std::optional<std::string> m_busy;
};

// In the header: copies.cpp and device_run.cpp instantiate it.
template <typename Body>
bool DeviceRun::step(const std::string& id, Body body) {
  if (m_gpu->stopped) return false;
  if (m_gpu->budget->spent()) {  // not started: no thread left behind
    m_gpu->stopped = true;
    // A warning, as for a step the budget cut (missed_deadline): untested GPUs keep the run from reading OK.
    m_result.findings.push_back(
        report::Finding{id,
                        report::Status::warn,
                        "not tested: the run's time budget (--budget) was spent before this step; "
                        "this GPU's remaining steps were not run",
                        "raise --budget, or test fewer GPUs at once (--device)",
                        {}});
    return false;
  }
  std::optional<StepOutcome> outcome = run_step(m_gpu, id, body);
  if (!outcome) {
    m_gpu->stopped = m_gpu->hung = true;  // its thread still runs: nothing more is asked of the GPU
    report::Finding missed = missed_deadline(*m_gpu->budget, m_gpu->ordinal, id);
    m_gpu->hang_reported = missed.status == report::Status::fail;  // not when blocked by another GPU or out of budget
    m_result.hung = m_result.hung || m_gpu->hang_reported;
    m_result.findings.push_back(std::move(missed));
    return false;
  }
  const bool ok = !outcome->stop &&
                  std::none_of(outcome->findings.begin(), outcome->findings.end(),
                               [](const report::Finding& finding) { return finding.status == report::Status::fail; });
  absorb(std::move(*outcome));
  return ok;
}

/// Turns the performance judgements among `findings` into skips naming `reason` ("GPU in use by PID 4321"): a finding
/// "smoke.<id>" of a verified metric in `metrics`, and the clock and PCIe link findings. Wrong results stay failures.
void mark_not_judged(std::vector<report::Finding>& findings, const std::vector<Metric>& metrics,
                     const std::string& reason);

}  // namespace gpuenv::smoke
