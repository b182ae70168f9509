#pragma once
// One GPU's steps in order: device query, kernels, copies, matmuls (ours and cuBLAS), the optional memory test.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "smoke/expectations.hpp"
#include "smoke/nvml_monitor.hpp"
#include "smoke/runner.hpp"
#include "smoke/step.hpp"
#include "system/system.hpp"

namespace gpuenv::smoke {

/// The steps of one GPU, in order; each records its findings and metrics into `result`. A failed device query, a
/// sticky error or a hang stops the GPU (gpu->stopped); later steps then do nothing.
class DeviceRun {
 public:
  DeviceRun(system::System& system, std::shared_ptr<Gpu> gpu, std::shared_ptr<const Expectations> expectations,
            std::string driver_version, int driver_version_number, DeviceResult& result);

  /// Device query, kernels, copies, matmuls (ours and cuBLAS), then the optional memory test.
  void run();

  /// Unloads the module and releases the context (after the peer copies, which need every GPU's context).
  /// A GPU stopped by an error is released too (else its context leaks); only a hung one is left alone.
  void release();

 private:
  /// Runs one step unless the GPU is stopped; true when it finished without a failing finding.
  template <typename Body>
  bool step(const std::string& id, Body body);

  /// Every later step thread runs on the CPUs of the GPU's NUMA node (as nvbandwidth does), so pinned buffers are
  /// allocated, and pageable copies staged, in the GPU's local memory: the far socket of a dual-socket HGX costs
  /// several GB/s of host<->device bandwidth.
  void place_on_local_cpus();

  /// A MIG instance has a slice of the GPU's SMs, memory bandwidth and copy engines: the whole GPU's floors would
  /// fail a healthy slice, so it is measured and verified but not judged (the operator's --expect still applies).
  void judge_mig_instance(const std::string& profile);

  void absorb(StepOutcome outcome);

  void copies();

  /// Frees the copy buffers, also after an error (else they leak); a hung GPU's thread may still use them.
  void free_copy_buffers_unless_hung();

  /// Judges the pinned H2D copy on the main thread once the PCIe link is known; returns the link's expectation for
  /// the D2H copy.
  Expectation judge_pinned_h2d(double bytes);

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

  system::System& m_system;
  std::shared_ptr<Gpu> m_gpu;
  std::shared_ptr<const Expectations> m_expectations;  ///< shared with step threads that may outlive the run
  std::string m_driver_version;
  int m_driver_version_number = 0;  ///< cuDriverGetVersion, 12080
  DeviceResult& m_result;
  const GpuExpectation* m_model = nullptr;
};

}  // namespace gpuenv::smoke
