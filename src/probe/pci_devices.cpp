#include "probe/pci_devices.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

constexpr const char* k_devices_dir = "/sys/bus/pci/devices/";
constexpr std::uint16_t k_class_vga = 0x0300;
constexpr std::uint16_t k_class_3d = 0x0302;
constexpr std::uint16_t k_class_other_bridge = 0x0680;

std::optional<std::uint32_t> read_hex_attribute(system::System& system, const std::string& path) {
  auto text = system.read_file(path, system::FileKind::host_text);
  if (!text) return std::nullopt;
  return parse_sysfs_hex(*text);
}

}  // namespace

bool is_nvidia_gpu(const PciDevice& device) {
  return device.vendor == k_nvidia_pci_vendor &&
         (device.class_prefix() == k_class_vga || device.class_prefix() == k_class_3d);
}

bool is_nvswitch(const PciDevice& device) {
  return device.vendor == k_nvidia_pci_vendor && device.class_prefix() == k_class_other_bridge;
}

std::optional<std::uint32_t> parse_sysfs_hex(std::string_view text) {
  text = util::trim(text);
  if (text.size() < 3 || text.size() > 10 || (text.substr(0, 2) != "0x" && text.substr(0, 2) != "0X")) {
    return std::nullopt;
  }
  std::uint32_t value = 0;
  for (char c : text.substr(2)) {
    std::uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return value;
}

std::vector<PciDevice> read_pci_devices(system::System& system) {
  std::vector<PciDevice> devices;
  for (const std::string& name : system.list_directory(k_devices_dir)) {
    const std::string base = k_devices_dir + name + "/";
    const auto vendor = read_hex_attribute(system, base + "vendor");
    const auto class_code = read_hex_attribute(system, base + "class");
    if (!vendor || !class_code || *vendor > 0xffff || *class_code > 0xffffff) continue;
    PciDevice device;
    device.bus_id = name;
    device.vendor = static_cast<std::uint16_t>(*vendor);
    device.class_code = *class_code;
    const auto id = read_hex_attribute(system, base + "device");
    if (id && *id <= 0xffff) device.device = static_cast<std::uint16_t>(*id);
    devices.push_back(std::move(device));
  }
  std::sort(devices.begin(), devices.end(), [](const PciDevice& a, const PciDevice& b) { return a.bus_id < b.bus_id; });
  return devices;
}

ManagementBridges read_management_bridges(system::System& system) {
  constexpr const char* infiniband = "/sys/class/infiniband/";
  ManagementBridges out;
  for (const std::string& device : system.list_directory(infiniband)) {
    const std::string path = infiniband + device + "/device/vpd";
    auto vpd = system.read_file(path);
    if (vpd && vpd->find("SW_MNG") != std::string::npos) out.bridges.push_back(device);
    if (!vpd && system.exists(path)) out.unreadable.push_back(device);
  }
  std::sort(out.bridges.begin(), out.bridges.end());
  std::sort(out.unreadable.begin(), out.unreadable.end());
  return out;
}

std::vector<std::string> nvlink5_management_bridges(system::System& system) {
  return read_management_bridges(system).bridges;
}

NvidiaPciInventory nvidia_pci_inventory(const std::vector<PciDevice>& devices) {
  NvidiaPciInventory inventory;
  for (const PciDevice& device : devices) {
    if (is_nvidia_gpu(device)) inventory.gpus.push_back(device);
    if (is_nvswitch(device)) inventory.nvswitches.push_back(device);
  }
  return inventory;
}

}  // namespace gpuenv::probe
