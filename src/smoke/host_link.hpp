#pragma once
// Internal to smoke: what the host's sysfs says about a GPU's place, its PCIe link (the GPU's and its upstream
// port's) and the CPUs of its NUMA node. The pure parsers are declared in runner.hpp.

#include <optional>
#include <string>

#include "smoke/runner.hpp"
#include "system/system.hpp"

namespace gpuenv::smoke {

/// Reads the GPU's current and maximum link and the upstream port's maximum into `info` (under `sysfs_root`).
void read_pcie_link(system::System& system, const std::string& sysfs_root, DeviceInfo& info);

/// "Gen5 x16" ("Gen?"/"x?" for an unknown part).
std::string link_text(std::optional<int> generation, std::optional<int> width);

}  // namespace gpuenv::smoke
