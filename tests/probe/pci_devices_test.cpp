// The node's PCI devices from /sys/bus/pci/devices: NVIDIA GPUs and NVSwitches told apart by vendor and class.
// The sysfs attribute format ("0x10de\n", 24-bit "0x030200\n") is the kernel's: Documentation/ABI/testing/sysfs-bus-pci
// (https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci, "vendor", "device", "class"). An HGX H100
// baseboard's NVSwitches show in lspci as "Bridge [0680]: NVIDIA Corporation Device [10de:22a3]" (class 0x068000),
// its GPUs as "3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]".

#include "probe/pci_devices.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/fake_system.hpp"

namespace {

void add_device(gpuenv::testing::FakeSystem& system, const std::string& bus_id, const std::string& vendor,
                const std::string& device, const std::string& device_class) {
  const std::string base = "/sys/bus/pci/devices/" + bus_id + "/";
  system.files[base + "vendor"] = vendor + "\n";
  system.files[base + "device"] = device + "\n";
  system.files[base + "class"] = device_class + "\n";
}

}  // namespace

TEST_CASE("parse_sysfs_hex: 0x and 1-8 hex digits, anything else refused", "[probe]") {
  using gpuenv::probe::parse_sysfs_hex;
  CHECK(parse_sysfs_hex("0x10de\n") == 0x10de);
  CHECK(parse_sysfs_hex("0x030200") == 0x030200);
  CHECK(parse_sysfs_hex("0X22A3") == 0x22a3);
  CHECK_FALSE(parse_sysfs_hex("10de"));
  CHECK_FALSE(parse_sysfs_hex("0x"));
  CHECK_FALSE(parse_sysfs_hex("0x10dg"));
  CHECK_FALSE(parse_sysfs_hex("0x123456789"));
  CHECK_FALSE(parse_sysfs_hex(""));
}

TEST_CASE("read_pci_devices: an HGX H100 board's GPUs and NVSwitches, other devices and unreadable ones left aside",
          "[probe]") {
  gpuenv::testing::FakeSystem system;
  add_device(system, "0000:1b:00.0", "0x10de", "0x2330", "0x030200");  // H100 SXM5: 3D controller
  add_device(system, "0000:07:00.0", "0x10de", "0x22a3", "0x068000");  // NVSwitch: other bridge
  add_device(system, "0000:08:00.0", "0x10de", "0x22a3", "0x068000");
  add_device(system, "0000:03:00.0", "0x1a03", "0x2000", "0x030000");     // ASPEED BMC VGA: not NVIDIA
  add_device(system, "0000:05:00.0", "0x10de", "0x1aef", "0x040300");     // an NVIDIA audio function: neither
  add_device(system, "0000:9a:00.0", "0x15b3", "0x101b", "0x020700");     // ConnectX-6 InfiniBand
  system.files["/sys/bus/pci/devices/0000:ff:00.0/vendor"] = "0x10de\n";  // class unreadable: left out

  const auto devices = gpuenv::probe::read_pci_devices(system);
  REQUIRE(devices.size() == 6);
  CHECK(devices.front().bus_id == "0000:03:00.0");  // sorted by bus id
  const auto inventory = gpuenv::probe::nvidia_pci_inventory(devices);
  REQUIRE(inventory.gpus.size() == 1);
  CHECK(inventory.gpus[0].bus_id == "0000:1b:00.0");
  CHECK(inventory.gpus[0].device == 0x2330);
  REQUIRE(inventory.nvswitches.size() == 2);
  CHECK(inventory.nvswitches[0].bus_id == "0000:07:00.0");
  CHECK(inventory.nvswitches[1].bus_id == "0000:08:00.0");
}

TEST_CASE("nvidia_pci_inventory: a VGA-class NVIDIA GPU counts, a node without sysfs PCI has nothing", "[probe]") {
  gpuenv::testing::FakeSystem system;
  add_device(system, "0000:01:00.0", "0x10de", "0x2684", "0x030000");  // RTX 4090: VGA controller
  const auto inventory = gpuenv::probe::nvidia_pci_inventory(gpuenv::probe::read_pci_devices(system));
  CHECK(inventory.gpus.size() == 1);
  CHECK(inventory.nvswitches.empty());

  gpuenv::testing::FakeSystem bare;
  CHECK(gpuenv::probe::read_pci_devices(bare).empty());
}
