// The fabric facts on the System seam: RDMA ports from a real node's /sys/class/infiniband, their counters and the
// growth between two readings, the fabric manager (package, binary, service), the peer-memory module and EFA's
// libraries, and the <fabric> element of nvidia-smi reports.

#include "probe/fabric.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "probe/collect.hpp"
#include "probe/link_counters.hpp"
#include "probe/rdma.hpp"
#include "support/fake_system.hpp"

using gpuenv::probe::GpuFabricInfo;
using gpuenv::testing::FakeSystem;
using gpuenv::testing::fixture_path;
using gpuenv::testing::read_fixture;

TEST_CASE("port attributes: sysfs state names and rates", "[probe][fabric]") {
  using gpuenv::probe::port_rate_gbps;
  using gpuenv::probe::port_state_name;
  // The values a real ConnectX-7 NDR port prints (tests/fixtures/probe/ib-h100-8x400).
  CHECK(port_state_name("4: ACTIVE\n") == "ACTIVE");
  CHECK(port_state_name("5: LinkUp") == "LinkUp");
  CHECK(port_state_name("2: Polling") == "Polling");
  CHECK(port_state_name("ACTIVE") == "ACTIVE");
  CHECK(port_rate_gbps("400 Gb/sec (4X NDR)") == std::optional<double>(400));
  CHECK(port_rate_gbps("200 Gb/sec (2X NDR)\n") == std::optional<double>(200));
  CHECK(port_rate_gbps("25 Gb/sec (1X EDR)") == std::optional<double>(25));
  CHECK_FALSE(port_rate_gbps("fast"));
  CHECK_FALSE(port_rate_gbps("400 Mb/sec"));
  CHECK(gpuenv::probe::uevent_value("DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:1b:00.0\n", "PCI_SLOT_NAME") ==
        "0000:1b:00.0");
  CHECK(gpuenv::probe::uevent_value("PCI_SLOT_NAME_X=1\n", "PCI_SLOT_NAME").empty());
}

TEST_CASE("read_rdma_devices: a real 8x NDR H100 node's ports", "[probe][fabric]") {
  FakeSystem system;
  system.add_tree(fixture_path("probe/ib-h100-8x400"));
  const auto devices = gpuenv::probe::read_rdma_devices(system, true);
  REQUIRE(devices.availability.available);
  CHECK(devices.efa.empty());
  CHECK(devices.infiniband.size() == 9);
  REQUIRE(devices.ports.size() == 9);
  unsigned ndr = 0;
  for (const auto& port : devices.ports) {
    INFO(port.device);
    CHECK(port.port == 1);
    CHECK(port.state == "ACTIVE");
    CHECK(port.phys_state == "LinkUp");
    CHECK_FALSE(port.efa);
    if (port.link_layer == "InfiniBand" && port.rate_gbps == std::optional<double>(400)) ++ndr;
  }
  CHECK(ndr == 8);
  CHECK(devices.ports.back().device == "mlx5_bond_0");
  CHECK(devices.ports.back().link_layer == "Ethernet");
  CHECK(devices.ports.back().rate_gbps == std::optional<double>(200));
  CHECK_FALSE(devices.ports.front().numa_node);  // not captured
}

TEST_CASE("read_link_counters: RDMA port counters from sysfs, NVML left out says why", "[probe][fabric]") {
  FakeSystem system;
  system.add_tree(fixture_path("probe/ib-h100-8x400"));
  const auto snapshot = gpuenv::probe::read_link_counters(system, {"", std::chrono::seconds(1)});
  CHECK_FALSE(snapshot.nvml);
  CHECK(snapshot.nvml_reason == "NVML was not asked for");
  REQUIRE(snapshot.ports.size() == 9);
  CHECK(snapshot.ports[0].device == "mlx5_0");
  CHECK(snapshot.ports[0].port_rcv_errors == std::optional<std::uint64_t>(14));
  CHECK(snapshot.ports[0].link_downed == std::optional<std::uint64_t>(0));
  CHECK(snapshot.ports[1].device == "mlx5_1");
  CHECK(snapshot.ports[1].link_downed == std::optional<std::uint64_t>(255));  // the 8-bit counter, saturated
}

TEST_CASE("link_counter_growth: growth per GPU, link and port, a reset counter, the time between", "[probe][fabric]") {
  using namespace gpuenv::probe;
  LinkCounterSnapshot before;
  before.taken_ms = 1000;
  GpuLinkCounters gpu;
  gpu.index = 0;
  gpu.uuid = "GPU-a";
  gpu.pcie_replays = 10;
  gpu.nvlinks.push_back({0, true, 5, 0, 1, 1});
  gpu.nvlinks.push_back({1, true, 0, 0, 0, 0});
  before.gpus.push_back(gpu);
  before.ports.push_back({"mlx5_0", 1, 3, 0, 100, 0});
  LinkCounterSnapshot after = before;
  after.taken_ms = 31000;
  after.gpus[0].pcie_replays = 25;
  after.gpus[0].nvlinks[0] = {0, true, 7, 0, 4, 2};  // 2 replays, 3 + 1 CRC
  after.gpus[0].nvlinks[1] = {1, false, 0, 0, 0, 0};
  after.ports[0] = {"mlx5_0", 1, 1, 0, 150, 0};  // link_downed went down: reset (driver reload) -> its value
  const auto growth = link_counter_growth(before, after);
  CHECK(growth.seconds == Approx(30));
  REQUIRE(growth.gpus.size() == 1);
  CHECK(growth.gpus[0].pcie_replays == std::optional<std::uint64_t>(15));
  REQUIRE(growth.gpus[0].nvlinks.size() == 2);
  CHECK(growth.gpus[0].nvlinks[0].replay == std::optional<std::uint64_t>(2));
  CHECK(growth.gpus[0].nvlinks[0].crc == std::optional<std::uint64_t>(4));
  CHECK(growth.gpus[0].nvlinks[1].active_before);
  CHECK_FALSE(growth.gpus[0].nvlinks[1].active_after);
  REQUIRE(growth.ports.size() == 1);
  CHECK(growth.ports[0].link_downed == std::optional<std::uint64_t>(1));
  CHECK(growth.ports[0].symbol_error == std::optional<std::uint64_t>(50));
  // A GPU that is gone at the second reading has no growth; one without a UUID is matched by index.
  after.gpus[0].uuid = "GPU-b";
  CHECK(link_counter_growth(before, after).gpus.empty());
}

TEST_CASE("fabric manager: package names, versions, the daemon's --version output", "[probe][fabric]") {
  using gpuenv::probe::InstalledPackage;
  // Package names per NVIDIA/gpu-driver-container (ubuntu22.04/install.sh: nvidia-fabricmanager-<branch> below R580,
  // nvidia-fabricmanager from R580), as data/install/drivers.toml records them.
  auto found = gpuenv::probe::fabric_manager_package({{"nvidia-fabricmanager-dev-535", "535.104.05-1"},
                                                      {"libnvidia-nscq-535", "535.104.05-1"},
                                                      {"nvidia-fabricmanager-535", "535.104.05-1"}});
  REQUIRE(found);
  CHECK(found->name == "nvidia-fabricmanager-535");
  CHECK(gpuenv::probe::fabric_manager_package({{"nvidia-fabricmanager", "580.65.06-1"}})->name ==
        "nvidia-fabricmanager");
  CHECK_FALSE(gpuenv::probe::fabric_manager_package({{"nvidia-fabricmanager-dev", "580.65.06-1"}}));
  CHECK(gpuenv::probe::upstream_version("535.104.05-1") == "535.104.05");
  CHECK(gpuenv::probe::upstream_version("1:580.65.06-0ubuntu1") == "580.65.06");
  // `nv-fabricmanager --version` as gpud's test quotes it (components/accelerator/nvidia/query, @ 4a8de33a).
  CHECK(gpuenv::probe::fabric_manager_version_from_output("\n\n\n\tFabric Manager version is : 535.161.08\n\n") ==
        "535.161.08");
  CHECK(gpuenv::probe::fabric_manager_version_from_output("no version here").empty());
}

namespace {

/// A node with 8 H100 (NVML facts) and four NVSwitches on the PCI bus: "Bridge [0680]: NVIDIA Corporation Device
/// [10de:22a3]" as lspci shows an HGX H100 baseboard's (the class file reads 0x068000).
FakeSystem hgx_node() {
  FakeSystem system;
  for (const char* bus : {"0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"}) {
    const std::string base = std::string("/sys/bus/pci/devices/") + bus + "/";
    system.files[base + "vendor"] = "0x10de\n";
    system.files[base + "device"] = "0x22a3\n";
    system.files[base + "class"] = "0x068000\n";
  }
  system.files["/sys/bus/pci/devices/0000:18:00.0/vendor"] = "0x10de\n";
  system.files["/sys/bus/pci/devices/0000:18:00.0/class"] = "0x030200\n";
  system.files["/sys/bus/pci/devices/0000:18:00.0/numa_node"] = "0\n";
  return system;
}

gpuenv::probe::HostFacts one_gpu() {
  gpuenv::probe::HostFacts facts;
  gpuenv::probe::GpuFacts gpu;
  gpu.pci_bus_id = "00000000:18:00.0";
  facts.gpus.gpus.push_back(gpu);
  return facts;
}

}  // namespace

TEST_CASE("collect_fabric: NVSwitches, the fabric manager's package and service, NUMA, peer memory",
          "[probe][fabric]") {
  FakeSystem system = hgx_node();
  system.files["/var/lib/dpkg/status"] =
      "Package: nvidia-fabricmanager-550\nStatus: install ok installed\nVersion: 550.54.15-1\n\n"
      "Package: nvlsm\nStatus: install ok installed\nVersion: 2025.03.1-1\n";
  system.commands["systemctl is-active nvidia-fabricmanager"] = {0, false, false, "active\n", ""};
  system.files["/sys/module/nvidia_peermem/version"] = "550.54.15\n";
  auto facts = one_gpu();
  gpuenv::probe::collect_fabric(system, true, std::chrono::seconds(1), facts);
  const auto& fabric = facts.fabric;
  CHECK(fabric.pci_scanned);
  CHECK(fabric.nvswitches == std::vector<std::string>{"0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"});
  CHECK(fabric.manager.installed);
  CHECK(fabric.manager.package == "nvidia-fabricmanager-550");
  CHECK(fabric.manager.version == "550.54.15");
  CHECK(fabric.manager.running == std::optional<bool>(true));
  CHECK(fabric.manager.nvlsm_installed);
  CHECK(fabric.peermem_loaded == std::optional<bool>(true));
  CHECK(fabric.peermem_evidence == "/sys/module/nvidia_peermem/version");
  REQUIRE(fabric.gpu_numa.size() == 1);
  CHECK(fabric.gpu_numa[0].pci_bus_id == "0000:18:00.0");
  CHECK(fabric.gpu_numa[0].numa_node == std::optional<int>(0));
}

TEST_CASE("collect_fabric: a stopped service, the binary's version, nothing run under --root", "[probe][fabric]") {
  FakeSystem system = hgx_node();
  system.files["/usr/bin/nv-fabricmanager"] = "";
  system.commands["/usr/bin/nv-fabricmanager --version"] = {0, false, false, "Fabric Manager version is : 535.161.08\n",
                                                            ""};
  system.commands["systemctl is-active nvidia-fabricmanager"] = {3, false, false, "failed\n", ""};
  auto facts = one_gpu();
  gpuenv::probe::collect_fabric(system, true, std::chrono::seconds(1), facts);
  CHECK(facts.fabric.manager.installed);
  CHECK(facts.fabric.manager.version == "535.161.08");
  CHECK(facts.fabric.manager.where == "/usr/bin/nv-fabricmanager");
  CHECK(facts.fabric.manager.running == std::optional<bool>(false));
  CHECK(facts.fabric.manager.service_state == "failed");
  CHECK(facts.fabric.peermem_loaded == std::optional<bool>(false));  // live: /sys/module says no

  FakeSystem tree = hgx_node();
  tree.files["/usr/bin/nv-fabricmanager"] = "";
  auto rooted = one_gpu();
  gpuenv::probe::collect_fabric(tree, false, std::chrono::seconds(1), rooted);
  CHECK(tree.commands_run.empty());
  CHECK(rooted.fabric.manager.installed);
  CHECK(rooted.fabric.manager.version.empty());
  CHECK_FALSE(rooted.fabric.manager.running);
  CHECK_FALSE(rooted.fabric.peermem_loaded);  // no /sys/module in the tree: unknown
}

TEST_CASE("collect_fabric: without NVSwitches the fabric manager's commands are not run", "[probe][fabric]") {
  // A PCIe node (one GPU, no class 0x0680 bridge): nothing needs the fabric manager, so rpm, its --version and
  // systemctl are not asked (fabric.manager is skipped there anyway); files are still read.
  FakeSystem system;
  system.files["/sys/bus/pci/devices/0000:18:00.0/vendor"] = "0x10de\n";
  system.files["/sys/bus/pci/devices/0000:18:00.0/class"] = "0x030200\n";
  system.files["/usr/bin/nv-fabricmanager"] = "";
  auto facts = one_gpu();
  gpuenv::probe::collect_fabric(system, true, std::chrono::seconds(1), facts);
  CHECK(facts.fabric.pci_scanned);
  CHECK(facts.fabric.nvswitches.empty());
  CHECK(system.commands_run.empty());
  CHECK(facts.fabric.manager.installed);
  CHECK_FALSE(facts.fabric.manager.running);
  CHECK(facts.fabric.manager.service_state == "not asked: no NVSwitch needs the fabric manager");
}

TEST_CASE("collect_fabric: GPUs in an NVLink fabric with no switch in sight still get the fabric manager asked for",
          "[probe][fabric]") {
  // An HGX B200 before mlx5_core is loaded: no NVSwitch on PCI, no /sys/class/infiniband, so no SW_MNG bridge; the GPUs
  // wait for the fabric manager (NVML fabric state Not Started). doctor's fabric.manager judges the fabric manager
  // there, so systemctl is asked as on a board whose switches are in sight. /sys/module/<name> exists for every loaded
  // module (Documentation/ABI/stable/sysfs-module): mlx5_core and ib_umad are not loaded here.
  FakeSystem system;
  system.add_tree(fixture_path("probe/hgx-b200-no-mlx5"));
  system.commands["systemctl is-active nvidia-fabricmanager"] = {3, false, false, "inactive\n", ""};
  auto facts = one_gpu();
  facts.gpus.gpus[0].name = "NVIDIA B200";
  gpuenv::probe::collect_fabric(system, true, std::chrono::seconds(1), facts);
  CHECK(facts.fabric.nvswitches.empty());
  CHECK(facts.fabric.nvlink5_bridges.empty());
  CHECK(facts.fabric.manager.service_state == "inactive");
  CHECK(facts.fabric.manager.running == std::optional<bool>(false));
  CHECK(facts.fabric.mlx5_core_loaded == std::optional<bool>(false));
  CHECK(facts.fabric.ib_umad_loaded == std::optional<bool>(false));

  system.files["/sys/module/mlx5_core/refcnt"] = "1\n";
  system.files["/sys/module/ib_umad/refcnt"] = "0\n";
  auto loaded = one_gpu();
  GpuFabricInfo waiting;
  waiting.state = GpuFabricInfo::State::not_started;
  loaded.gpus.gpus[0].fabric = waiting;  // any GPU NVML places in a fabric, whatever its name
  gpuenv::probe::collect_fabric(system, true, std::chrono::seconds(1), loaded);
  CHECK(loaded.fabric.manager.service_state == "inactive");
  CHECK(loaded.fabric.mlx5_core_loaded == std::optional<bool>(true));
  CHECK(loaded.fabric.ib_umad_loaded == std::optional<bool>(true));

  FakeSystem bare;  // under --root, a tree without /sys/module: unknown, not "not loaded"
  auto rooted = one_gpu();
  gpuenv::probe::collect_fabric(bare, false, std::chrono::seconds(1), rooted);
  CHECK_FALSE(rooted.fabric.mlx5_core_loaded);
  CHECK_FALSE(rooted.fabric.ib_umad_loaded);
}

TEST_CASE("NVLink fabric signals: HGX NVLink5 names, fabric state, a multi-node cluster UUID", "[probe][fabric]") {
  using gpuenv::probe::in_multi_node_nvlink_domain;
  using gpuenv::probe::in_nvlink_fabric;
  using gpuenv::probe::is_hgx_nvlink5_gpu;
  CHECK(is_hgx_nvlink5_gpu("NVIDIA B200"));
  CHECK(is_hgx_nvlink5_gpu("NVIDIA B100"));
  CHECK_FALSE(is_hgx_nvlink5_gpu("NVIDIA GB200"));  // a Grace superchip: its switches are in the switch trays
  CHECK_FALSE(is_hgx_nvlink5_gpu("NVIDIA RTX PRO 6000 Blackwell Server Edition"));
  CHECK_FALSE(is_hgx_nvlink5_gpu("NVIDIA H100 80GB HBM3"));

  gpuenv::probe::GpuFacts gpu;
  CHECK_FALSE(in_nvlink_fabric(gpu));  // nothing read
  gpu.fabric = GpuFabricInfo{};
  CHECK_FALSE(in_nvlink_fabric(gpu));  // NVML_GPU_FABRIC_STATE_NOT_SUPPORTED
  for (auto state :
       {GpuFabricInfo::State::not_started, GpuFabricInfo::State::in_progress, GpuFabricInfo::State::completed}) {
    gpu.fabric->state = state;
    CHECK(in_nvlink_fabric(gpu));
  }
  // go-nvlib's IsFabricAttached (NVIDIA/go-nvlib pkg/nvlib/device/device.go @ 0171eccd): `if info.ClusterUuid ==
  // [16]uint8{} { return false, nil }`. The set one is the GB200's of kubernetes-sigs/dra-driver-nvidia-gpu#626.
  gpu.fabric->cluster_uuid = "00000000-0000-0000-0000-000000000000";
  CHECK_FALSE(in_multi_node_nvlink_domain(gpu));
  gpu.fabric->cluster_uuid = "dc6e40c4-d722-4357-9ba6-5291dd461278";
  CHECK(in_multi_node_nvlink_domain(gpu));
  gpu.fabric->cluster_uuid = "N/A";
  CHECK_FALSE(in_multi_node_nvlink_domain(gpu));
  gpu.fabric->cluster_uuid.clear();
  CHECK_FALSE(in_multi_node_nvlink_domain(gpu));
}

TEST_CASE("nvidia-smi -q -x <fabric>: N/A on a real report, Completed as the -q text prints it", "[probe][fabric]") {
  // A real R595 report (shared/fixtures/nvidia-smi-xml/geforce-rtx-3080_driver-595.58.03_cuda-13.2.xml): every
  // fabric field N/A, health block included.
  const auto report = gpuenv::probe::inventory_from_nvidia_smi_xml(
      read_fixture("probe/nvidia-smi-xml/geforce-rtx-3080_driver-595.58.03_cuda-13.2.xml"), "report.xml");
  REQUIRE(report.availability.available);
  REQUIRE(report.gpus[0].fabric);
  CHECK(report.gpus[0].fabric->state == GpuFabricInfo::State::not_supported);
  CHECK(report.gpus[0].fabric->status.empty());
  // Constructed: the values `nvidia-smi -q` printed on an unhealthy GB200 (kubernetes-sigs/dra-driver-nvidia-gpu#626)
  // in the XML element names of the report above.
  const std::string xml =
      "<?xml version=\"1.0\" ?><nvidia_smi_log><driver_version>570.133.20</driver_version><attached_gpus>1"
      "</attached_gpus><gpu id=\"00000000:18:00.0\"><product_name>NVIDIA GB200</product_name><fabric><state>Completed"
      "</state><status>Success</status><cliqueId>2</cliqueId><clusterUuid>dc6e40c4-d722-4357-9ba6-5291dd461278"
      "</clusterUuid><health><summary>Unhealthy</summary><bandwidth>Full</bandwidth></health></fabric></gpu>"
      "</nvidia_smi_log>";
  const auto completed = gpuenv::probe::inventory_from_nvidia_smi_xml(xml, "gb200.xml");
  REQUIRE(completed.gpus.size() == 1);
  REQUIRE(completed.gpus[0].fabric);
  const GpuFabricInfo& fabric = *completed.gpus[0].fabric;
  CHECK(fabric.state == GpuFabricInfo::State::completed);
  CHECK(fabric.status_ok);
  CHECK(fabric.clique_id == std::optional<unsigned>(2));
  CHECK(fabric.cluster_uuid == "dc6e40c4-d722-4357-9ba6-5291dd461278");
  CHECK(fabric.health_summary == "Unhealthy");
  CHECK(fabric.source == "nvidia-smi -q -x");
}
