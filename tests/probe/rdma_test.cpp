// RDMA devices from /sys/class/infiniband on the System seam: EFA by driver (or name), the rest as InfiniBand/RoCE.

#include "probe/rdma.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/fake_system.hpp"

TEST_CASE("uevent_driver: the DRIVER= line of a sysfs uevent", "[probe]") {
  CHECK(gpuenv::probe::uevent_driver("DRIVER=efa\nPCI_ID=1D0F:EFA1\n") == "efa");
  CHECK(gpuenv::probe::uevent_driver("PCI_CLASS=20000\n  DRIVER=mlx5_core\n") == "mlx5_core");
  CHECK(gpuenv::probe::uevent_driver("PCI_CLASS=20000\n").empty());
}

TEST_CASE("read_rdma_devices: EFA and ConnectX devices sorted by driver, an absent class live or under --root",
          "[probe]") {
  gpuenv::testing::FakeSystem system;
  system.files["/sys/class/infiniband/rdmap16s27/device/uevent"] = "DRIVER=efa\n";
  system.files["/sys/class/infiniband/rdmap32s27/device/uevent"] = "DRIVER=efa\n";
  system.files["/sys/class/infiniband/mlx5_0/device/uevent"] = "DRIVER=mlx5_core\n";
  system.files["/sys/class/infiniband/mlx5_1/ports/1/state"] = "4: ACTIVE\n";  // no uevent: by name, not EFA
  system.files["/sys/class/infiniband/efa_0/ports/1/state"] = "4: ACTIVE\n";   // no uevent: EFA by name
  const auto devices = gpuenv::probe::read_rdma_devices(system, true);
  CHECK(devices.availability.available);
  CHECK(devices.efa == std::vector<std::string>{"efa_0", "rdmap16s27", "rdmap32s27"});
  CHECK(devices.infiniband == std::vector<std::string>{"mlx5_0", "mlx5_1"});

  gpuenv::testing::FakeSystem bare;
  const auto live = gpuenv::probe::read_rdma_devices(bare, true);  // no RDMA driver loaded: zero, known
  CHECK(live.availability.available);
  CHECK(live.efa.empty());
  CHECK(live.infiniband.empty());
  const auto rooted = gpuenv::probe::read_rdma_devices(bare, false);  // a tree that did not capture it: unknown
  CHECK_FALSE(rooted.availability.available);
  CHECK(rooted.availability.reason == "/sys/class/infiniband is not in the inspected tree");
}

TEST_CASE("read_rdma_devices: an HGX B200's NVSwitch management bridges are no compute NICs", "[probe]") {
  // The switch tray's ConnectX bridges (VPD keyword SMDL=SW_MNG; NVIDIA/gpu-driver-container _assert_nvlink5_system)
  // carry fabric-manager/NVLSM traffic to the NVSwitches: counting them as rails would add ports ib.ports never
  // expects and put their counters into ib.errors.
  gpuenv::testing::FakeSystem system;
  system.files["/sys/class/infiniband/mlx5_0/device/uevent"] = "DRIVER=mlx5_core\n";
  system.files["/sys/class/infiniband/mlx5_0/ports/1/state"] = "4: ACTIVE\n";
  system.files["/sys/class/infiniband/mlx5_10/device/uevent"] = "DRIVER=mlx5_core\n";
  system.files["/sys/class/infiniband/mlx5_10/device/vpd"] = std::string("\x90\x0cSMDL=SW_MNG\x78", 14);
  system.files["/sys/class/infiniband/mlx5_10/ports/1/state"] = "4: ACTIVE\n";
  const auto devices = gpuenv::probe::read_rdma_devices(system, true);
  CHECK(devices.infiniband == std::vector<std::string>{"mlx5_0"});
  REQUIRE(devices.ports.size() == 1);
  CHECK(devices.ports[0].device == "mlx5_0");
  const auto ports = gpuenv::probe::list_rdma_ports(system);
  REQUIRE(ports.size() == 1);
  CHECK(ports[0].first == "mlx5_0");
}
