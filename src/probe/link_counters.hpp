#pragma once
// The node's link error counters at one moment, and the difference between two such moments: NVLink
// replay/recovery/CRC counters (NVLink5's field counters on Blackwell) and the PCIe replay counter of each GPU (NVML,
// dlopen'ed on an abandonable thread) and the error counters of each RDMA port
// (/sys/class/infiniband/*/ports/*/counters). A count since boot says little; a count that grew while doctor ran (or
// between two `gpuenv watch` samples) is a rate.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/fabric_facts.hpp"
#include "system/system.hpp"

namespace gpuenv::probe {

struct LinkCounterOptions {
  std::string nvml_library = "libnvidia-ml.so.1";  ///< "" leaves NVML out (RDMA port counters only)
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

/// Reads every counter now. Never throws: NVML that is missing, fails or hangs leaves `nvml` false with the reason.
LinkCounterSnapshot read_link_counters(system::System& system, const LinkCounterOptions& options);

/// How much one counter grew; nullopt when either reading lacks it.
using CounterGrowth = std::optional<std::uint64_t>;

struct NvLinkGrowth {
  unsigned link = 0;
  bool active_before = false;
  bool active_after = false;
  CounterGrowth replay;
  CounterGrowth recovery;
  CounterGrowth crc;  ///< flit + data
  /// NVLink5 (a link that refuses the three above): each counter read at both ends, by how much it grew.
  std::vector<NvLink5Counter> nvlink5 = {};
};

struct GpuLinkGrowth {
  unsigned index = 0;
  std::string pci_bus_id;
  CounterGrowth pcie_replays;
  std::optional<unsigned> pcie_gen;  ///< at the later reading
  std::optional<unsigned> pcie_width;
  std::vector<NvLinkGrowth> nvlinks;
  /// NVLink5's bit error rates over all links at the later reading (raw: probe::BitErrorRate): a rate, not a count.
  std::optional<std::uint64_t> nvlink5_effective_ber;
  std::optional<std::uint64_t> nvlink5_symbol_ber;
  /// NVLink5's ECC data error total over all links: its growth (probe::nvlink_ecc_growth), unknown when either
  /// reading lacks it.
  CounterGrowth nvlink5_ecc_errors;
};

struct PortGrowth {
  std::string device;
  unsigned port = 1;
  CounterGrowth link_downed;
  CounterGrowth link_error_recovery;
  CounterGrowth symbol_error;
  CounterGrowth port_rcv_errors;
};

/// The growth of every counter from `before` to `after`, GPUs matched by UUID (else index) and ports by name. A
/// counter that went down was reset (driver reload): its growth is its later value. `seconds` is the time between
/// the two readings (0 when the clock did not move).
struct LinkCounterGrowth {
  double seconds = 0;
  std::vector<GpuLinkGrowth> gpus;
  std::vector<PortGrowth> ports;
};
LinkCounterGrowth link_counter_growth(const LinkCounterSnapshot& before, const LinkCounterSnapshot& after);

}  // namespace gpuenv::probe
