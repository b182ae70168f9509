#include "probe/rdma.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

constexpr const char* k_class_dir = "/sys/class/infiniband";

/// Whether `device` is an EFA device: its driver when sysfs says, else the names EFA devices get (efa_N, or
/// rdma-core's rdmapXsY on AWS).
bool is_efa(system::System& system, const std::string& device) {
  if (auto uevent = system.read_file(std::string(k_class_dir) + "/" + device + "/device/uevent")) {
    const std::string driver = uevent_driver(*uevent);
    if (!driver.empty()) return driver == "efa";
  }
  return util::starts_with(device, "efa") || util::starts_with(device, "rdmap");
}

}  // namespace

std::string uevent_driver(std::string_view uevent) {
  for (auto line : util::split(uevent, '\n')) {
    const std::string_view trimmed = util::trim(line);
    if (util::starts_with(trimmed, "DRIVER=")) return std::string(trimmed.substr(7));
  }
  return {};
}

RdmaDevices read_rdma_devices(system::System& system, bool live) {
  RdmaDevices devices;
  devices.availability.source = k_class_dir;
  if (!system.exists(k_class_dir)) {
    if (live) {
      devices.availability.available = true;  // no RDMA driver loaded: zero devices
    } else {
      devices.availability.reason = std::string(k_class_dir) + " is not in the inspected tree";
    }
    return devices;
  }
  devices.availability.available = true;
  std::vector<std::string> names = system.list_directory(k_class_dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) (is_efa(system, name) ? devices.efa : devices.infiniband).push_back(name);
  return devices;
}

}  // namespace gpuenv::probe
