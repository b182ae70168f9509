#pragma once
// RDMA devices (AWS EFA, ConnectX InfiniBand/RoCE) and their ports from /sys/class/infiniband, through System.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/facts.hpp"
#include "system/system.hpp"

namespace gpuenv::probe {

/// Lists /sys/class/infiniband, sorts each device by its driver (`device/uevent` DRIVER=, else the name) and reads
/// each port (state, phys_state, rate, link_layer; the device's numa_node and PCI address). Live, an absent
/// directory means no RDMA driver is loaded (zero devices); under --root (`live` false) it means the tree did not
/// capture it, and the facts are unavailable with that reason.
RdmaDevices read_rdma_devices(system::System& system, bool live);

/// Every (device, port) under /sys/class/infiniband, in name order (shared with the counter reader). NVLink5
/// switch-management bridges (VPD SW_MNG) are left out here and in read_rdma_devices: they carry the NVSwitches'
/// management traffic, not a job's, so they are no compute NIC for ib.ports, ib.errors or the affinity report.
std::vector<std::pair<std::string, unsigned>> list_rdma_ports(system::System& system);

/// The driver in a sysfs `uevent` file ("DRIVER=efa" -> "efa"); empty when absent. Pure.
std::string uevent_driver(std::string_view uevent);
/// A `KEY=value` line of a sysfs `uevent` file ("PCI_SLOT_NAME" -> "0000:1b:00.0"); empty when absent. Pure.
std::string uevent_value(std::string_view uevent, std::string_view key);
/// The name in a port attribute that sysfs prints as "<number>: <NAME>" ("4: ACTIVE" -> "ACTIVE",
/// "5: LinkUp" -> "LinkUp"); the trimmed text when there is no number. Pure.
std::string port_state_name(std::string_view text);
/// The speed in Gb/s of a port's `rate` ("400 Gb/sec (4X NDR)" -> 400, "100 Gb/sec (4X EDR)" -> 100); nullopt when
/// it does not start with a number followed by "Gb/sec". Pure.
std::optional<double> port_rate_gbps(std::string_view text);

}  // namespace gpuenv::probe
