#pragma once
// Internal to smoke: what NVML says about a GPU while smoke works it (libnvidia-ml dlopen'ed through System; optional:
// without it these readings are simply unknown). The SM clock and throttle reasons are sampled on a thread during the
// matmuls, and only samples taken while GEMMs are in flight count, so a GPU that ran its GEMMs throttled is named; ECC
// and row-remap counters are read before and after the memory test, so errors the test provoked are reported even when
// every word read back right. The compute processes and utilisation (a GPU someone else uses is not judged), the MIG
// instances of the GPU, and the PCIe replay and NVLink state/error counters DCGM watches are read before the GPU's
// first step and after its last (judged in nvml_rules.cpp).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "probe/nvlink5.hpp"
#include "report/finding.hpp"
#include "system/abandon.hpp"
#include "system/system.hpp"

namespace gpuenv::probe::nvml {
struct Api;  // probe/nvml_api.hpp
}  // namespace gpuenv::probe::nvml

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

/// Who else uses a GPU (issue 23 item 4): NVML's compute processes and utilisation.
struct GpuUsage {
  std::optional<std::vector<unsigned>> pids;  ///< compute processes (nullopt: NVML cannot say)
  std::optional<unsigned> utilization;        ///< percent of the last sample period a kernel ran (nullopt: unknown)
};

/// An NVLink5 (Blackwell) error counter NVML reads per link through nvmlDeviceGetFieldValues (nvml.h
/// NVML_FI_DEV_NVLINK_COUNT_*: the link in scopeId), where the older counters below answer "not supported": probe's,
/// read by probe's reader and judged by its table (probe/nvlink5.hpp), as doctor and watch read and judge them.
using NvLink5Counter = probe::NvLink5Counter;

/// One NVLink's state and error counters (nvml.h nvmlNvLinkErrorCounter_t); nullopt where NVML cannot read one.
struct NvLinkCounters {
  unsigned link = 0;
  bool active = false;
  std::optional<unsigned long long> replay, recovery, crc_flit, crc_data;
  std::vector<NvLink5Counter> nvlink5 = {};  ///< the NVLink5 error counters NVML could read (none before Blackwell)
};

/// The level-2 counters read around a run (issue 23 item 9): PCIe replays and every NVLink's state and errors.
struct FabricCounters {
  std::optional<unsigned> pcie_replays;  ///< nvmlDeviceGetPcieReplayCounter
  std::vector<NvLinkCounters> nvlinks;   ///< the links NVML reports (none: no NVLink, or not readable)
  /// NVLink5: the bit error rates over all links (scopeId UINT_MAX, as DCGM reads them on Blackwell), encoded as
  /// nvml.h says: bits 0-7 the exponent, 8-11 the mantissa (mantissa x 10^-exponent).
  std::optional<unsigned long long> nvlink5_effective_ber, nvlink5_symbol_ber;
  /// NVLink5: the NVLink ECC data error total over all links (NVML field 160), cumulative; read with the rates and kept
  /// only when one of them was (probe::nvml::NvLink5Rates::ecc_errors).
  std::optional<unsigned long long> nvlink5_ecc_errors;
  bool any() const { return pcie_replays.has_value() || !nvlinks.empty(); }
};

/// The MIG instances of a GPU as NVML lists them (nvmlDeviceGetMigDeviceHandleByIndex), by UUID ("MIG-...").
struct MigInstances {
  bool enabled = false;
  std::vector<std::string> uuids;
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
  /// The GPU's compute processes and utilisation.
  GpuUsage usage(const std::string& pci_bus_id) const;
  /// The GPU's PCIe replay counter and NVLink states and error counters.
  FabricCounters fabric_counters(const std::string& pci_bus_id) const;
  /// The MIG instances of the GPU at `pci_bus_id` (its parent's bus id: a MIG instance's is its GPU's).
  MigInstances mig_instances(const std::string& pci_bus_id) const;

 private:
  NvmlMonitor() = default;
  probe::nvml::Device handle(const std::string& pci_bus_id) const;
  std::unique_ptr<system::DynamicLibrary> m_library;
  std::unique_ptr<probe::nvml::Api> m_api;
};

/// Runs `read(*nvml)` on its own thread and waits at most `limit`: an NVML call on a wedged driver may never return,
/// and the caller must not hang with it. The thread co-owns the monitor; one left behind is recorded
/// (system::note_abandoned_work) and nullopt returned.
template <typename T, typename Read>
std::optional<T> read_bounded(const std::shared_ptr<const NvmlMonitor>& nvml, Read read,
                              std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  if (nvml == nullptr) return std::nullopt;
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> result = promise->get_future();
  std::thread([nvml, promise, read] { promise->set_value(read(*nvml)); }).detach();
  if (result.wait_for(limit) != std::future_status::ready) {
    system::note_abandoned_work();
    return std::nullopt;
  }
  return result.get();
}

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

/// The processes of `after` that are not this one: new PIDs beside `before`'s, less `own_pid`. One new PID that is not
/// `own_pid` is taken for this process seen from another PID namespace (a container, where NVML gives host PIDs).
std::vector<unsigned> other_processes(const GpuUsage& before, const GpuUsage& after, unsigned own_pid);

/// "GPU in use by PID 4321, 8765 (87% utilisation before the run)" when another process used the GPU before or during
/// the run, else nullopt; `own_pid` as other_processes.
std::optional<std::string> busy_reason(const GpuUsage& before, const GpuUsage& after, unsigned own_pid);

/// The smoke.link_errors finding for the counters `before` and `after` a run of `seconds`: PCIe replays above 80 fail
/// (DCGM pcie plugin max_pcie_replays); NVLink replay or recovery errors fail (DCGM health NVLINK: an increase of 1),
/// CRC flit or data errors fail at 100 a second of one kind and warn below (DCGM health watch,
/// DCGM_LIMIT_MAX_NVLINK_CRC_ERROR, per field); a link that went inactive
/// during the run fails; `inactive_fails` (an 8-GPU NVSwitch board whose floor applies, as aznhc check_nvlink_status
/// on ND shapes) fails links inactive from the start too, which elsewhere are only counted. Skip when NVML read none.
report::Finding judge_link_errors(const FabricCounters& before, const FabricCounters& after, double seconds,
                                  bool inactive_fails);

/// The smoke.memory_errors finding: fail when uncorrectable ECC errors, uncorrectable row remaps, double-bit page
/// retirements or a remap failure appeared during the memory test, warn for corrected errors, correctable remaps or
/// a pending remap, pass when nothing rose, skip when NVML could read no counter.
report::Finding judge_memory_errors(const MemoryErrorCounters& before, const MemoryErrorCounters& after);

}  // namespace gpuenv::smoke
