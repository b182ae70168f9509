#pragma once
// The fabric as plain data: each GPU's NVLink fabric registration (NVML), the NVSwitches and their fabric manager,
// the RDMA ports (InfiniBand, RoCE, EFA) and what GPUDirect RDMA needs. Collectors fill it (probe/fabric.cpp,
// probe/rdma.cpp, probe/nvml.cpp); doctor's fabric rules judge it. Nothing here touches the machine.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuenv::probe {

/// A GPU's registration with the NVLink fabric (nvml.h nvmlGpuFabricInfo*: Hopper and later; "N/A" before).
struct GpuFabricInfo {
  /// nvml.h NVML_GPU_FABRIC_STATE_*: 0 not supported, 1 not started, 2 in progress, 3 completed.
  enum class State { not_supported, not_started, in_progress, completed };
  State state = State::not_supported;
  /// The probe's status, meaningful once the state is Completed: "Success", or NVML's error text
  /// ("Insufficient Resources", ...); empty when not reported.
  std::string status;
  bool status_ok = false;             ///< the status is NVML_SUCCESS
  std::optional<unsigned> clique_id;  ///< the fabric clique (0 on a single-node NVSwitch board)
  std::string cluster_uuid;           ///< "dc6e40c4-..."; all zeros on a single-node board
  /// NVML_GPU_FABRIC_HEALTH_SUMMARY_*: "Healthy", "Unhealthy", "Limited Capacity"; empty when not supported.
  std::string health_summary;
  std::string source;  ///< "nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetGpuFabricInfo", "nvidia-smi -q -x"
};

/// "Not Supported", "Not Started", "In Progress", "Completed" (nvidia-smi's words).
std::string to_string(GpuFabricInfo::State state);

/// The NVIDIA fabric manager (nvidia-fabricmanager) and, on fourth-generation NVSwitch boards, the NVLink subnet
/// manager (nvlsm) it starts.
struct FabricManagerFacts {
  bool installed = false;       ///< a package or the nv-fabricmanager binary was found
  std::string package;          ///< "nvidia-fabricmanager-550", "nvidia-fabricmanager"
  std::string version;          ///< "550.54.15" (the package's upstream version, Debian revision dropped)
  std::string where;            ///< how it was found: "/var/lib/dpkg/status", the binary's path
  std::optional<bool> running;  ///< systemctl is-active nvidia-fabricmanager; unknown under --root
  std::string service_state;    ///< what systemctl printed ("active", "failed", "inactive"), or why it is unknown
  bool nvlsm_installed = false;
  std::string nvlsm_version;
  /// A process named nv-fabricmanager is visible in /proc (live only): the GPU Operator runs the fabric manager
  /// inside its driver container, with no host package or unit (NVIDIA/gpu-driver-container nvidia-driver).
  bool process_seen = false;
  std::string process_evidence;  ///< "/proc/4242/comm"
};

/// One RDMA port under /sys/class/infiniband/<device>/ports/<port>.
struct RdmaPort {
  std::string device;  ///< "mlx5_0", "rdmap16s27"
  unsigned port = 1;
  std::string driver;               ///< from device/uevent DRIVER= ("mlx5_core", "efa"); empty when unknown
  bool efa = false;                 ///< an AWS EFA device
  std::string link_layer;           ///< "InfiniBand", "Ethernet" (RoCE); empty when unknown
  std::string state;                ///< "ACTIVE", "DOWN", "INIT", "ARMED" (the text after "4: ")
  std::string phys_state;           ///< "LinkUp", "Polling", "Disabled" (the text after "5: ")
  std::optional<double> rate_gbps;  ///< "400 Gb/sec (4X NDR)" -> 400
  std::string rate_text;            ///< as sysfs prints it
  std::optional<int> numa_node;     ///< device/numa_node; nullopt when absent or -1
  std::string pci_bus_id;           ///< device/uevent PCI_SLOT_NAME ("0000:1b:00.0")
};

/// One GPU's place on the PCIe tree, for NIC affinity: its NUMA node from sysfs.
struct GpuNumaNode {
  unsigned gpu_index = 0;
  std::string pci_bus_id;
  std::optional<int> numa_node;
};

/// What the fabric rules need beyond the GPUs and RDMA devices.
struct FabricFacts {
  bool pci_scanned = false;             ///< /sys/bus/pci/devices could be listed
  std::vector<std::string> nvswitches;  ///< bus ids of NVIDIA "Bridge: other" (0x0680) functions
  /// InfiniBand devices whose VPD says SW_MNG: NVLink5 boards' switch management (their NVSwitches are not on PCI)
  std::vector<std::string> nvlink5_bridges;
  /// InfiniBand devices whose VPD could not be read (root only): whether they are such bridges is not known.
  std::vector<std::string> vpd_unreadable;
  /// The kernel modules through which an NVLink5 board's fabric manager (its NVLSM) reaches the switches: without
  /// mlx5_core no ConnectX bridge appears under /sys/class/infiniband, and NVIDIA's driver container waits for both
  /// before it starts the fabric manager. Whether /sys/module/<name> exists; nullopt when /sys/module could not be
  /// read (under --root without it).
  std::optional<bool> mlx5_core_loaded;
  std::optional<bool> ib_umad_loaded;
  FabricManagerFacts manager;
  /// A peer-memory module NCCL's GPUDirect RDMA check accepts is loaded (nvidia_peermem, or the legacy nv_peer_mem);
  /// nullopt when /sys/module could not be read (under --root without it).
  std::optional<bool> peermem_loaded;
  std::string peermem_evidence;  ///< the file that showed it
  bool efa_libfabric = false;    ///< the EFA installer's libfabric (with its efa provider) is present
  bool efa_nccl_plugin = false;  ///< aws-ofi-nccl (libnccl-net.so) is present
  std::string efa_where;         ///< the paths found, for messages
  std::vector<GpuNumaNode> gpu_numa;
};

/// One NVLink5 (Blackwell) error counter as NVML gives it per link (nvmlDeviceGetFieldValues, nvml.h
/// NVML_FI_DEV_NVLINK_COUNT_*, the link in scopeId), cumulative since the driver loaded; which counters, and how a rise
/// of each is judged, is probe/nvlink5.hpp's table.
struct NvLink5Counter {
  unsigned field = 0;  ///< the NVML field id (221 symbol errors, 214 failed link recoveries, ...)
  std::uint64_t value = 0;
};

/// One NVLink's error counters (nvml.h nvmlNvLinkErrorCounter_t), cumulative since the driver loaded. Blackwell's
/// NVLink5 refuses those four ("unsupported for Blackwell+", nvml.h) and counts its errors in `nvlink5` instead.
struct NvLinkCounters {
  unsigned link = 0;
  bool active = false;
  std::optional<std::uint64_t> replay;    ///< NVML_NVLINK_ERROR_DL_REPLAY
  std::optional<std::uint64_t> recovery;  ///< NVML_NVLINK_ERROR_DL_RECOVERY
  std::optional<std::uint64_t> crc_flit;  ///< NVML_NVLINK_ERROR_DL_CRC_FLIT
  std::optional<std::uint64_t> crc_data;  ///< NVML_NVLINK_ERROR_DL_CRC_DATA
  /// The NVLink5 counters NVML could read, read only on a link that refuses all four above (none before Blackwell).
  std::vector<NvLink5Counter> nvlink5 = {};
};

/// One GPU's link counters at one moment.
struct GpuLinkCounters {
  unsigned index = 0;
  std::string uuid;
  std::string pci_bus_id;
  std::optional<std::uint64_t> pcie_replays;  ///< nvmlDeviceGetPcieReplayCounter
  std::optional<unsigned> pcie_gen;           ///< the current link, for the replay allowance per lane
  std::optional<unsigned> pcie_width;
  std::vector<NvLinkCounters> nvlinks;
  /// NVLink5: the bit error rates over all links (nvml.h NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER and _SYMBOL_BER at
  /// scopeId UINT_MAX), raw as NVML encodes them (probe::BitErrorRate); read when a link gave NVLink5 counters.
  std::optional<std::uint64_t> nvlink5_effective_ber;
  std::optional<std::uint64_t> nvlink5_symbol_ber;
  /// NVLink5: the NVLink ECC data error total (NVML field 160), read with the rates and kept only when one of them was
  /// (probe::nvml::NvLink5Rates::ecc_errors).
  std::optional<std::uint64_t> nvlink5_ecc_errors;
};

/// One RDMA port's error counters (ports/<n>/counters/*), cumulative since the driver loaded.
struct PortCounters {
  std::string device;
  unsigned port = 1;
  std::optional<std::uint64_t> link_downed;          ///< times the link went down after errors (flaps)
  std::optional<std::uint64_t> link_error_recovery;  ///< link recoveries that succeeded
  std::optional<std::uint64_t> symbol_error;         ///< symbol errors on the physical link
  std::optional<std::uint64_t> port_rcv_errors;      ///< packets received with errors
};

/// Every link counter of the node at one moment: two of them make a rate (probe/link_counters.hpp).
struct LinkCounterSnapshot {
  std::int64_t taken_ms = 0;  ///< System::now() in milliseconds (a steady clock: only differences mean anything)
  bool nvml = false;          ///< NVML answered (GPU counters are present)
  std::string nvml_reason;    ///< why not
  std::vector<GpuLinkCounters> gpus;
  std::vector<PortCounters> ports;
};

}  // namespace gpuenv::probe
