#pragma once
// Internal to smoke: what NVML says about a GPU while smoke works it (libnvidia-ml dlopen'ed through System; optional:
// without it these readings are simply unknown). The SM clock and throttle reasons are sampled on a thread during the
// matmuls, and only samples taken while GEMMs are in flight count, so a GPU that ran its GEMMs throttled is named; ECC
// and row-remap counters are read before and after the memory test, so errors the test provoked are reported even when
// every word read back right.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "report/finding.hpp"
#include "system/system.hpp"

namespace gpuenv::smoke {

/// One reading of a GPU's clocks (MHz) and its clocks-event (throttle) reason mask.
struct ClockSample {
  unsigned sm_mhz = 0;
  std::optional<unsigned> sm_max_mhz;
  unsigned long long reasons = 0;  ///< nvmlClocksEventReason bits; 0 when NVML cannot say
  /// GPU work was in flight both before and after the NVML read (the only samples judge_clocks counts).
  bool under_load = true;
};

/// The memory error counters NVML keeps for a GPU (each unknown when the GPU or driver does not support it).
struct MemoryErrorCounters {
  std::optional<unsigned long long> ecc_corrected;    ///< volatile (since the driver loaded)
  std::optional<unsigned long long> ecc_uncorrected;  ///< volatile
  std::optional<unsigned> remapped_correctable;       ///< rows remapped (A100 and newer)
  std::optional<unsigned> remapped_uncorrectable;
  std::optional<bool> remap_pending;                 ///< a remap waits for the next GPU reset
  std::optional<bool> remap_failure;                 ///< a remap failed: the GPU should be replaced
  std::optional<unsigned> retired_pages_double_bit;  ///< page retirement (before A100)
  bool any() const {
    return ecc_corrected || ecc_uncorrected || remapped_correctable || remapped_uncorrectable || remap_pending ||
           remap_failure || retired_pages_double_bit;
  }
};

/// NVML opened once per smoke run; shared by the step threads (a hung one keeps it alive). Thread-safe: NVML is.
class NvmlMonitor {
 public:
  /// Loads `library` and runs nvmlInit_v2; nullptr when either fails (or `library` is "": NVML not used).
  static std::shared_ptr<NvmlMonitor> open(system::System& system, const std::string& library);
  ~NvmlMonitor();
  NvmlMonitor(const NvmlMonitor&) = delete;
  NvmlMonitor& operator=(const NvmlMonitor&) = delete;

  /// The GPU's current SM clock, its maximum and the throttle reasons; nullopt when NVML does not know the GPU
  /// (`pci_bus_id` as cuDeviceGetPCIBusId gives it) or cannot read the clock.
  std::optional<ClockSample> clocks(const std::string& pci_bus_id) const;
  /// The GPU's ECC and row-remap counters (fields NVML cannot read stay unknown).
  MemoryErrorCounters memory_errors(const std::string& pci_bus_id) const;

  struct Api;

 private:
  NvmlMonitor() = default;
  void* handle(const std::string& pci_bus_id) const;
  std::unique_ptr<system::DynamicLibrary> m_library;
  std::unique_ptr<Api> m_api;
};

/// Samples one GPU's clocks on its own thread every `interval` until stop(); the thread co-owns the monitor, the
/// samples and `in_flight`, so stopping never waits on a call stuck in the driver.
class ClockSampler {
 public:
  /// `in_flight` counts the GPU's launches in flight (Gpu::launches_in_flight): a sample is under load only when it
  /// is above 0 both before and after the NVML read (null: every sample counts as under load).
  ClockSampler(std::shared_ptr<const NvmlMonitor> nvml, std::string pci_bus_id, std::chrono::milliseconds interval,
               std::shared_ptr<const std::atomic<int>> in_flight = nullptr);
  ~ClockSampler();
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;
  /// Ends the sampling (waits up to a second for the last sample) and returns every sample taken.
  std::vector<ClockSample> stop();

 private:
  struct Shared {
    std::mutex mutex;
    std::condition_variable wake;
    bool stop = false;
    bool done = false;
    std::vector<ClockSample> samples;
  };
  std::shared_ptr<Shared> m_shared;
};

/// The smoke.clocks finding for the samples taken under load during the matmuls (the others are counted, not judged):
/// the SM clock (median, lowest) against the maximum, and a warning naming the throttle reasons when the GPU slowed
/// for heat or a hardware signal. `max_mhz` is the driver's maximum (cuDeviceGetAttribute) when NVML gives none; no
/// sample under load: the clock is unknown (skip).
report::Finding judge_clocks(const std::vector<ClockSample>& samples, int max_mhz);

/// The smoke.memory_errors finding: fail when uncorrectable ECC errors, uncorrectable row remaps, double-bit page
/// retirements or a remap failure appeared during the memory test, warn for corrected errors, correctable remaps or
/// a pending remap, pass when nothing rose, skip when NVML could read no counter.
report::Finding judge_memory_errors(const MemoryErrorCounters& before, const MemoryErrorCounters& after);

}  // namespace gpuenv::smoke
