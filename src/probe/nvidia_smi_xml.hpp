#pragma once
// `nvidia-smi -q -x`: the GPUs, the driver and the health counters, from every DTD version seen in the wild.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.hpp"

namespace gpuenv::probe {

/// Which ECC counter layout a report uses.
enum class EccSchema {
  absent,             ///< no <ecc_errors> element
  single_double_bit,  ///< older drivers: <single_bit>/<double_bit> with a <total>
  sram_dram,          ///< newer drivers: <sram_correctable>, <sram_uncorrectable[_parity|_secded]>, <dram_*>
};

/// One set of ECC counters (volatile or aggregate). Absent means "N/A", "Not Supported" or missing.
struct EccCounts {
  /// single_bit total, or the sum of the SRAM and DRAM correctable counters that are reported.
  std::optional<long long> correctable;
  /// double_bit total, or the sum of the SRAM and DRAM uncorrectable counters that are reported.
  std::optional<long long> uncorrectable;
  std::optional<long long> sram_correctable;
  std::optional<long long> sram_uncorrectable;  ///< sram_uncorrectable, or parity + secded on the newest schema
  std::optional<long long> dram_correctable;
  std::optional<long long> dram_uncorrectable;
};

/// <ecc_errors>.
struct EccErrors {
  EccSchema schema = EccSchema::absent;
  EccCounts volatile_counts;   ///< since the driver loaded
  EccCounts aggregate_counts;  ///< over the board's life
};

/// <retired_pages> (dynamic page retirement, Kepler to Volta; "N/A" on Ampere and later).
struct RetiredPages {
  std::optional<long long> single_bit;  ///< multiple_single_bit_retirement/retired_count
  std::optional<long long> double_bit;  ///< double_bit_retirement/retired_count
  std::optional<bool> pending;          ///< pending_retirement or pending_blacklist says "Yes" (either one)
};

/// <remapped_rows> (row remapping, Ampere and later).
struct RemappedRows {
  bool reported = false;  ///< false when the element is missing or just "N/A"
  std::optional<long long> correctable;
  std::optional<long long> uncorrectable;
  std::optional<bool> pending;  ///< a remap waits for a GPU reset
  std::optional<bool> failure;  ///< a remap failed (RMA criterion together with field diagnostics)
};

/// <pci_gpu_link_info>.
struct PcieLink {
  std::optional<int> gen_current;
  std::optional<int> gen_max;
  std::optional<int> width_current;  ///< lanes; "16x" gives 16
  std::optional<int> width_max;
};

/// One <gpu> element.
/// <fabric>: the GPU's NVLink fabric registration (drivers of R535 and later print it; "N/A" before Hopper).
struct NvidiaSmiFabric {
  bool reported = false;                      ///< the <fabric> element is present
  std::optional<std::string> state;           ///< "Completed", "In Progress", "Not Started"; absent for N/A
  std::optional<std::string> status;          ///< "Success", "Insufficient Resources", ...
  std::optional<long long> clique_id;         ///< <cliqueId>
  std::optional<std::string> cluster_uuid;    ///< <clusterUuid>
  std::optional<std::string> health_summary;  ///< <health><summary>: "Healthy", "Unhealthy", "Limited Capacity"
};

struct NvidiaSmiGpu {
  int index = 0;     ///< position in the report (nvidia-smi lists GPUs in its enumeration order)
  std::string name;  ///< product_name; empty when missing
  std::string uuid;
  std::string pci_bus_id;  ///< "00000000:21:01.0": pci/pci_bus_id, else the gpu element's id attribute
  std::optional<std::string> serial;
  std::optional<long long> memory_total_mib;
  std::optional<long long> memory_used_mib;
  std::optional<std::string> compute_capability;  ///< <compute_cap> ("9.0") where the driver prints it
  std::optional<bool> persistence_mode;           ///< Enabled / Disabled
  std::optional<bool> mig_mode_current;           ///< mig_mode/current_mig Enabled / Disabled
  int mig_device_count = 0;                       ///< <mig_device> elements
  std::optional<bool> ecc_mode_current;           ///< ecc_mode/current_ecc Enabled / Disabled
  EccErrors ecc_errors;
  RetiredPages retired_pages;
  RemappedRows remapped_rows;
  std::optional<int> temperature_c;
  /// gpu_temp_slow_threshold / gpu_temp_max_threshold in degrees C. Newer drivers print only the
  /// *_tlimit_threshold variants, which are relative values; those are deliberately not mapped here.
  std::optional<int> temperature_slowdown_c;
  std::optional<int> temperature_shutdown_c;
  std::optional<double> power_draw_w;   ///< power_draw, else instant_power_draw, else average_power_draw
  std::optional<double> power_limit_w;  ///< power_limit, else enforced_power_limit, else current_power_limit
  /// Active clocks event (throttle) reasons, e.g. {"gpu_idle", "sw_power_cap"}, from <clocks_event_reasons>
  /// or the older <clocks_throttle_reasons>; absent when the report has neither element.
  std::optional<std::vector<std::string>> clocks_event_reasons;
  PcieLink pcie;
  std::optional<int> process_count;  ///< <process_info> elements; absent when there is no <processes> element
  /// <process_info> elements whose <type> includes compute ("C", "C+G", "M+C"); graphics-only Xorg is not work.
  std::optional<int> compute_process_count;
  std::optional<int> utilization_gpu_percent;  ///< utilization/gpu_util
  NvidiaSmiFabric fabric;
};

/// The whole report.
struct NvidiaSmiReport {
  std::optional<std::string> driver_version;
  std::optional<std::string> cuda_version;
  std::optional<int> attached_gpus;  ///< the header's count; can disagree with gpus.size()
  std::vector<NvidiaSmiGpu> gpus;

  /// True when the header's attached_gpus is present and differs from the number of <gpu> elements.
  bool gpu_count_mismatch() const {
    return attached_gpus.has_value() && *attached_gpus != static_cast<int>(gpus.size());
  }
};

/// Parses `nvidia-smi -q -x` output; an Error for malformed or truncated XML or a missing <nvidia_smi_log>.
util::Expected<NvidiaSmiReport> parse_nvidia_smi_xml(std::string_view xml);

}  // namespace gpuenv::probe
