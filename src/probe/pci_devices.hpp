#pragma once
// The PCI devices of a node (or of a captured node under --root) from /sys/bus/pci/devices, through System: which
// NVIDIA GPUs and NVSwitches it has. Used by install (fabric manager on NVSwitch systems) and doctor (the fabric).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "system/system.hpp"

namespace gpuenv::probe {

/// One PCI function as sysfs describes it.
struct PciDevice {
  std::string bus_id;            ///< the sysfs name, e.g. "0000:1b:00.0"
  std::uint16_t vendor = 0;      ///< `vendor`, e.g. 0x10de
  std::uint16_t device = 0;      ///< `device`, e.g. 0x2330 (H100 SXM5)
  std::uint32_t class_code = 0;  ///< `class`, 24 bits: base class, subclass, programming interface (0x030200)

  /// The base class and subclass, e.g. 0x0302 (3D controller), 0x0680 (other bridge).
  std::uint16_t class_prefix() const { return static_cast<std::uint16_t>(class_code >> 8); }
};

constexpr std::uint16_t k_nvidia_pci_vendor = 0x10de;

/// NVIDIA's GPUs: vendor 0x10de, class VGA controller (0x0300) or 3D controller (0x0302).
bool is_nvidia_gpu(const PciDevice& device);
/// An NVSwitch: vendor 0x10de, class "Bridge: other" (0x0680), as lspci shows them on HGX baseboards
/// ("Bridge [0680]: NVIDIA Corporation Device [10de:22a3]").
bool is_nvswitch(const PciDevice& device);

/// A sysfs hex attribute ("0x10de\n", "0x030200\n") as a number; nullopt unless it is 0x followed by 1-8 hex digits.
std::optional<std::uint32_t> parse_sysfs_hex(std::string_view text);

/// Every device under /sys/bus/pci/devices whose vendor and class read and parse, sorted by bus id; devices whose
/// files cannot be read are left out (a captured tree may hold only some of them).
std::vector<PciDevice> read_pci_devices(system::System& system);

/// The InfiniBand devices (their /sys/class/infiniband names, sorted) whose PCI VPD carries "SW_MNG": the ConnectX
/// bridges through which NVLink5 baseboards (HGX B200/B300) manage their NVSwitches, which are not PCI functions of
/// the host there (NVIDIA/gpu-driver-container ubuntu24.04/nvidia-driver, _assert_nvlink5_system; NVIDIA Fabric
/// Manager user guide, "Systems Using Fourth Generation NVSwitches").
std::vector<std::string> nvlink5_management_bridges(system::System& system);

/// The bridges, and the InfiniBand devices whose VPD exists but could not be read (it is root's only: a non-root
/// run cannot tell a bridge from a compute NIC).
struct ManagementBridges {
  std::vector<std::string> bridges;
  std::vector<std::string> unreadable;
};
ManagementBridges read_management_bridges(system::System& system);

/// The NVIDIA GPUs and NVSwitches among `devices`, in bus-id order.
struct NvidiaPciInventory {
  std::vector<PciDevice> gpus;
  std::vector<PciDevice> nvswitches;
};
NvidiaPciInventory nvidia_pci_inventory(const std::vector<PciDevice>& devices);

}  // namespace gpuenv::probe
