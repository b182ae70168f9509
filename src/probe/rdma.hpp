#pragma once
// RDMA devices (AWS EFA, ConnectX InfiniBand/RoCE) from /sys/class/infiniband, through System.

#include "probe/facts.hpp"
#include "system/system.hpp"

namespace gpuenv::probe {

/// Lists /sys/class/infiniband and sorts each device by its driver (`device/uevent` DRIVER=, else the name).
/// Live, an absent directory means no RDMA driver is loaded (zero devices); under --root (`live` false) it means the
/// tree did not capture it, and the facts are unavailable with that reason.
RdmaDevices read_rdma_devices(system::System& system, bool live);

/// The driver in a sysfs `uevent` file ("DRIVER=efa" -> "efa"); empty when absent. Pure.
std::string uevent_driver(std::string_view uevent);

}  // namespace gpuenv::probe
