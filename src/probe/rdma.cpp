#include "probe/rdma.hpp"

#include <algorithm>

#include "probe/pci_devices.hpp"
#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

constexpr const char* k_class_dir = "/sys/class/infiniband";

std::string read_trimmed(system::System& system, const std::string& path) {
  auto text = system.read_file(path, system::FileKind::host_text);
  return text ? std::string(util::trim(*text)) : std::string();
}

/// Whether `device` is an EFA device: its driver when sysfs says, else the names EFA devices get (efa_N, or
/// rdma-core's rdmapXsY on AWS).
bool is_efa(const std::string& device, const std::string& driver) {
  if (!driver.empty()) return driver == "efa";
  return util::starts_with(device, "efa") || util::starts_with(device, "rdmap");
}

RdmaPort read_port(system::System& system, const std::string& device, unsigned port, const std::string& uevent) {
  RdmaPort out;
  out.device = device;
  out.port = port;
  out.driver = uevent_driver(uevent);
  out.efa = is_efa(device, out.driver);
  out.pci_bus_id = uevent_value(uevent, "PCI_SLOT_NAME");
  const std::string base = std::string(k_class_dir) + "/" + device + "/ports/" + std::to_string(port) + "/";
  out.link_layer = read_trimmed(system, base + "link_layer");
  out.state = port_state_name(read_trimmed(system, base + "state"));
  out.phys_state = port_state_name(read_trimmed(system, base + "phys_state"));
  out.rate_text = read_trimmed(system, base + "rate");
  out.rate_gbps = port_rate_gbps(out.rate_text);
  if (const auto numa =
          util::parse_int(read_trimmed(system, std::string(k_class_dir) + "/" + device + "/device/numa_node"));
      numa && *numa >= 0 && *numa < 4096) {
    out.numa_node = static_cast<int>(*numa);
  }
  return out;
}

}  // namespace

std::string uevent_value(std::string_view uevent, std::string_view key) {
  for (auto line : util::split(uevent, '\n')) {
    const std::string_view trimmed = util::trim(line);
    if (trimmed.size() > key.size() && util::starts_with(trimmed, key) && trimmed[key.size()] == '=')
      return std::string(trimmed.substr(key.size() + 1));
  }
  return {};
}

std::string uevent_driver(std::string_view uevent) { return uevent_value(uevent, "DRIVER"); }

std::string port_state_name(std::string_view text) {
  text = util::trim(text);
  const std::size_t colon = text.find(':');
  if (colon != std::string_view::npos && colon > 0 &&
      text.substr(0, colon).find_first_not_of("0123456789") == std::string_view::npos) {
    return std::string(util::trim(text.substr(colon + 1)));
  }
  return std::string(text);
}

std::optional<double> port_rate_gbps(std::string_view text) {
  text = util::trim(text);
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos || !util::starts_with(util::trim(text.substr(space)), "Gb/sec"))
    return std::nullopt;
  const auto number = util::parse_double(text.substr(0, space));
  if (!number || *number <= 0) return std::nullopt;
  return number;
}

namespace {

/// The compute RDMA devices under /sys/class/infiniband, sorted: every device but the NVLink5 switch-management
/// bridges (whose VPD each costs a read: done once per call).
std::vector<std::string> compute_rdma_devices(system::System& system) {
  std::vector<std::string> devices = system.list_directory(k_class_dir);
  std::sort(devices.begin(), devices.end());
  const std::vector<std::string> bridges = nvlink5_management_bridges(system);
  devices.erase(std::remove_if(devices.begin(), devices.end(),
                               [&bridges](const std::string& device) {
                                 return std::find(bridges.begin(), bridges.end(), device) != bridges.end();
                               }),
                devices.end());
  return devices;
}

std::vector<std::pair<std::string, unsigned>> ports_of(system::System& system,
                                                       const std::vector<std::string>& devices) {
  std::vector<std::pair<std::string, unsigned>> ports;
  for (const std::string& device : devices) {
    std::vector<unsigned> numbers;
    for (const std::string& name : system.list_directory(std::string(k_class_dir) + "/" + device + "/ports")) {
      const auto number = util::parse_int(name);
      if (number && *number > 0 && *number < 256) numbers.push_back(static_cast<unsigned>(*number));
    }
    std::sort(numbers.begin(), numbers.end());
    for (unsigned number : numbers) ports.emplace_back(device, number);
  }
  return ports;
}

}  // namespace

std::vector<std::pair<std::string, unsigned>> list_rdma_ports(system::System& system) {
  return ports_of(system, compute_rdma_devices(system));
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
  const std::vector<std::string> names = compute_rdma_devices(system);
  for (const std::string& name : names) {
    const std::string uevent = read_trimmed(system, std::string(k_class_dir) + "/" + name + "/device/uevent");
    (is_efa(name, uevent_driver(uevent)) ? devices.efa : devices.infiniband).push_back(name);
  }
  for (const auto& [device, port] : ports_of(system, names)) {
    const std::string uevent = read_trimmed(system, std::string(k_class_dir) + "/" + device + "/device/uevent");
    devices.ports.push_back(read_port(system, device, port, uevent));
  }
  return devices;
}

}  // namespace gpuenv::probe
