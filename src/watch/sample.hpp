#pragma once
// What `gpuenv watch` records at each interval, as plain data: one reading per GPU (gauges and the cumulative error
// counters NVML keeps since the driver loaded) and the node's kernel-log events that appeared since the interval
// before. Nothing here touches the machine.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/facts.hpp"

namespace gpuenv::watch {

/// Samples are stamped in milliseconds since the epoch; the store rolls them up by the hour.
inline constexpr std::int64_t k_hour_ms = 3600 * 1000;

/// Throttle (clocks-event) reasons as bits of one integer, the order of probe::throttle_reason_names: a compact
/// column in the store. Reasons NVML reports that are no problem (idle, application clocks) are not kept.
enum ThrottleBit : unsigned {
  k_sw_power_cap = 1u << 0,
  k_hw_slowdown = 1u << 1,
  k_sync_boost = 1u << 2,
  k_sw_thermal_slowdown = 1u << 3,
  k_hw_thermal_slowdown = 1u << 4,
  k_hw_power_brake_slowdown = 1u << 5,
};

/// The bits of probe's reason names ("hw_slowdown", ...); unknown names are ignored.
unsigned throttle_bits(const std::vector<std::string>& names);
/// The names of `bits`, in bit order.
std::vector<std::string> throttle_names(unsigned bits);

/// One GPU at one interval. Absent optionals: NVML did not report the value (not supported, or the GPU is lost).
struct GpuSample {
  unsigned index = 0;
  std::string uuid;  ///< the GPU's identity across restarts and re-enumeration
  std::string pci_bus_id;
  std::string name;
  std::string access_error;  ///< non-empty when the driver lists the GPU but NVML cannot query it ("GPU is lost")
  std::optional<double> utilization_percent;
  std::optional<double> memory_used_mib;
  std::optional<double> memory_total_mib;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
  std::optional<double> sm_clock_mhz;
  unsigned throttle = 0;  ///< ThrottleBit set
  std::optional<unsigned> processes;
  // Cumulative counters (since the driver loaded, or for remaps since the GPU's life): rules judge their growth.
  std::optional<std::uint64_t> ecc_corrected;    ///< volatile
  std::optional<std::uint64_t> ecc_uncorrected;  ///< volatile
  std::optional<std::uint64_t> remapped_correctable;
  std::optional<std::uint64_t> remapped_uncorrectable;
  bool remap_pending = false;
  bool remap_failure = false;
  /// NVLink errors as watch counts them (count_nvlink_errors): NVML's sum over the active links at the first reading,
  /// then grown only by what the links read in both of two consecutive readings grew, so the count never goes down
  /// when a link goes down or one read fails (and never rises when it comes back).
  std::optional<std::uint64_t> nvlink_replay;
  std::optional<std::uint64_t> nvlink_recovery;
  std::optional<std::uint64_t> nvlink_crc;  ///< flit + data
  /// NVLink5 (Blackwell, read on every link beside the three counters above, which it may answer or not): the
  /// counters of probe/nvlink5.hpp's table summed over the active links in the table's two judgements, counted as
  /// the three above. Two sums, not one column per counter and not the three above: a symbol error is no replay and a
  /// successful link recovery no failed one, and the table (shared with smoke and doctor) decides what a rise means.
  std::optional<std::uint64_t> nvlink5_errors;    ///< counters whose rise fails (symbol, malformed packet, buffer
                                                  ///< overrun, receive and link integrity errors, failed recoveries)
  std::optional<std::uint64_t> nvlink5_warnings;  ///< counters whose rise warns (successful link recoveries;
                                                  ///< effective errors are in neither sum: not judged)
  /// NVLink5's bit error rates over all links, raw (probe::BitErrorRate), as read now (not stored).
  std::optional<std::uint64_t> nvlink5_effective_ber;
  std::optional<std::uint64_t> nvlink5_symbol_ber;
  /// NVLink5's ECC data error total over all links (NVML field 160, read with the rates on NVLink5 GPUs only), as
  /// read now (not stored: a sample read back from the database has none, and nothing is judged from it).
  std::optional<std::uint64_t> nvlink5_ecc_errors;
  std::optional<unsigned> nvlink_inactive;          ///< links that exist but are down
  std::vector<probe::NvLinkCounters> nvlink_links;  ///< each active link's counters as NVML read them (not stored)
  std::optional<std::uint64_t> pcie_replays;        ///< nvmlDeviceGetPcieReplayCounter
  std::optional<probe::GpuFabricInfo> fabric;       ///< NVLink fabric registration and health (not stored)

  bool lost() const { return !access_error.empty(); }
};

/// The key a GPU is known by in the store and the rules' state: its UUID, or "index-N" when NVML gives none.
std::string gpu_key(const GpuSample& gpu);

/// The node at one interval.
struct NodeSample {
  std::int64_t time_ms = 0;               ///< Unix time in milliseconds when the interval's reading began
  bool nvml = false;                      ///< NVML answered (gpus holds its reading)
  std::string nvml_reason;                ///< why not
  std::optional<unsigned> attached_gpus;  ///< nvmlDeviceGetCount, lost GPUs included
  std::vector<GpuSample> gpus;
  std::string boot_id;  ///< /proc/sys/kernel/random/boot_id when read ("" unknown); not stored per sample
};

/// A kernel-log record about GPU health that appeared since the last interval (Xid, SXid, fallen off the bus).
struct KernelRecord {
  std::int64_t time_ms = 0;  ///< when watch saw it (kernel timestamps are seconds since boot)
  std::string kind;          ///< "xid", "sxid", "fallen_off_bus"
  std::optional<int> code;   ///< the Xid or SXid number
  std::string pci_bus_id;
  std::string message;  ///< the record's text after its code, cleaned for storage
};

/// The GPU readings of an NVML inventory at `time_ms`, with each GPU's link counters of the same read (`links`,
/// matched by index: the PCIe replay counter and the active NVLinks' counters).
NodeSample sample_from_inventory(const probe::GpuInventory& inventory, const std::vector<probe::GpuLinkCounters>& links,
                                 std::int64_t time_ms);

}  // namespace gpuenv::watch
