// doctor's fabric rules on HostFacts built in C++: fabric.state, fabric.manager, fabric.sxid, ib.ports,
// fabric.gpudirect, fabric.affinity, and the link rates nvlink.errors, pcie.replay, ib.errors (docs/fabric.md).
// The contracts are NVIDIA's, quoted at each case: the NVML API reference (fabric registration), the Fabric Manager
// user guide (the daemon, its version, NVLSM), DCGM's limits (link error rates) and NCCL's GPUDirect check.

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "doctor/instances.hpp"
#include "doctor/rule_rows.hpp"
#include "doctor/rules.hpp"
#include "doctor/thresholds.hpp"
#include "probe/fabric.hpp"
#include "probe/facts.hpp"
#include "probe/nvlink5.hpp"
#include "probe/pci_devices.hpp"
#include "probe/rdma.hpp"
#include "support/fake_system.hpp"
#include "support/findings.hpp"

namespace {

using gpuenv::probe::GpuFabricInfo;
using gpuenv::probe::HostFacts;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::testing::has_finding;
using gpuenv::testing::require_finding;
using gpuenv::testing::doctor_rules::kb;
using gpuenv::testing::doctor_rules::thresholds;

const gpuenv::doctor::InstanceExpectation* instance(const std::string& type) {
  auto table = gpuenv::doctor::builtin_instances();
  REQUIRE(table);
  return gpuenv::doctor::find_instance(**table, type);
}

/// An 8x H100 HGX node as it should be: registered with the fabric, four NVSwitches, fabric manager at the driver's
/// version and running, the kernel log readable and quiet.
HostFacts hgx() {
  HostFacts facts;
  facts.kernel.module_loaded = true;
  facts.kernel.module_version = "550.54.15";
  facts.kernel_log_source = "dmesg";
  facts.host.kernel_release = "5.15.0-119-generic";
  facts.gpus.availability.available = true;
  facts.gpus.driver_version = "550.54.15";
  for (unsigned i = 0; i < 8; ++i) {
    gpuenv::probe::GpuFacts gpu;
    gpu.index = i;
    gpu.name = "NVIDIA H100 80GB HBM3";
    gpu.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    GpuFabricInfo fabric;
    fabric.state = GpuFabricInfo::State::completed;
    fabric.status = "Success";
    fabric.status_ok = true;
    fabric.source = "nvmlDeviceGetGpuFabricInfoV";
    gpu.fabric = fabric;
    facts.gpus.gpus.push_back(gpu);
  }
  facts.fabric.pci_scanned = true;
  facts.fabric.nvswitches = {"0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"};
  facts.fabric.manager.installed = true;
  facts.fabric.manager.package = "nvidia-fabricmanager-550";
  facts.fabric.manager.version = "550.54.15";
  facts.fabric.manager.running = true;
  facts.fabric.manager.service_state = "active";
  facts.rdma.availability.available = true;
  return facts;
}

/// An HGX B200 as the host sees it: no NVSwitch on PCI, two InfiniBand bridges whose VPD says SW_MNG, the fabric
/// manager installed and running, every GPU registered.
HostFacts hgx_b200() {
  HostFacts facts = hgx();
  for (auto& gpu : facts.gpus.gpus) gpu.name = "NVIDIA B200";
  facts.fabric.nvswitches.clear();
  facts.fabric.nvlink5_bridges = {"mlx5_10", "mlx5_11"};
  return facts;
}

/// The GPUs as a board whose fabric manager never ran leaves them: fabric state "Not Started".
void fabric_not_started(HostFacts& facts) {
  for (auto& gpu : facts.gpus.gpus) gpu.fabric->state = GpuFabricInfo::State::not_started;
}

std::vector<Finding> evaluate(const HostFacts& facts, const gpuenv::doctor::InstanceExpectation* type = nullptr) {
  gpuenv::doctor::Expectations expectations;
  expectations.instance = type;
  return gpuenv::doctor::evaluate(facts, thresholds(), kb(), expectations);
}

}  // namespace

TEST_CASE("fabric: a healthy HGX H100 node passes every fabric check", "[doctor][fabric]") {
  const auto findings = evaluate(hgx());
  CHECK(require_finding(findings, "fabric.state").status == Status::pass);
  CHECK(require_finding(findings, "fabric.manager").status == Status::pass);
  CHECK(require_finding(findings, "fabric.manager").message.find("matches the driver 550.54.15") != std::string::npos);
  CHECK(require_finding(findings, "fabric.sxid").status == Status::pass);
  CHECK(require_finding(findings, "ib.ports").status == Status::skip);
  CHECK(require_finding(findings, "fabric.gpudirect").status == Status::skip);
  CHECK_FALSE(has_finding(findings, "nvlink.errors"));  // no counter readings: nothing to judge
}

TEST_CASE("fabric.state: every state and status NVML can report, per GPU", "[doctor][fabric]") {
  // NVML API reference, nvmlGpuFabricInfo_v3_t
  // (https://docs.nvidia.com/deploy/nvml-api/structnvmlGpuFabricInfo__v3__t.html): "state: Current Probe State of GPU
  // registration process. See NVML_GPU_FABRIC_STATE_*"; "status: Probe Error status, if any. Must be checked only if
  // Probe state returns "complete""; "healthSummary: GPU Fabric health summary. See NVML_GPU_FABRIC_HEALTH_SUMMARY_*"
  // (group__nvmlFabricDefs.html: NOT_SUPPORTED, HEALTHY, UNHEALTHY, LIMITED_CAPACITY).
  struct Row {
    GpuFabricInfo::State state;
    bool ok;
    std::string status;
    std::string health;
    Status expected;
    std::string says;
  };
  const std::vector<Row> rows = {
      {GpuFabricInfo::State::in_progress, false, "", "", Status::fail, "In Progress"},
      {GpuFabricInfo::State::not_started, false, "", "", Status::fail, "Not Started"},
      // Before Completed the status means nothing ("must be checked only if Probe state returns complete").
      {GpuFabricInfo::State::in_progress, false, "Insufficient Resources", "", Status::fail, "In Progress"},
      // Azure/azhpc-images#506: State Completed, Status Insufficient Resources passed their old check.
      {GpuFabricInfo::State::completed, false, "Insufficient Resources", "", Status::fail, "Insufficient Resources"},
      {GpuFabricInfo::State::completed, true, "Success", "Unhealthy", Status::fail, "Unhealthy"},
      {GpuFabricInfo::State::completed, true, "Success", "Limited Capacity", Status::warn, "Limited Capacity"},
      {GpuFabricInfo::State::completed, true, "Success", "Healthy", Status::pass, "registered"},
  };
  for (const Row& row : rows) {
    INFO(row.says);
    HostFacts facts = hgx();
    facts.gpus.gpus[3].fabric->state = row.state;
    facts.gpus.gpus[3].fabric->status_ok = row.ok;
    facts.gpus.gpus[3].fabric->status = row.status;
    facts.gpus.gpus[3].fabric->health_summary = row.health;
    const Finding& f = require_finding(evaluate(facts), "fabric.state");
    CHECK(f.status == row.expected);
    CHECK(f.message.find(row.says) != std::string::npos);
    if (row.state != GpuFabricInfo::State::completed) CHECK(f.message.find("Insufficient") == std::string::npos);
    if (row.expected == Status::fail) {
      CHECK(f.message.find("GPU 3") != std::string::npos);
      CHECK_FALSE(f.remedy.empty());
    }
  }
  HostFacts older = hgx();
  for (auto& gpu : older.gpus.gpus) gpu.fabric->state = GpuFabricInfo::State::not_supported;  // A100, PCIe GPUs
  CHECK(require_finding(evaluate(older), "fabric.state").status == Status::skip);
}

TEST_CASE("fabric.manager: missing, another version, stopped, NVLSM on B200, no NVSwitch", "[doctor][fabric]") {
  // NVIDIA Fabric Manager user guide (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/, release
  // 2.3, May 2025): NVSwitch-based HGX/DGX boards need the fabric manager before the GPUs can use NVLink; at start "the
  // FM service checks the currently loaded kernel driver stack version for compatibility, and if the loaded driver
  // stack version is not compatible, aborts the process" (so its package must be the driver's exact version);
  // sections 1.3.2 "Systems Using Fourth Generation NVSwitches" and 1.5 "What is NVLink Subnet Manager?" (HGX
  // B200/B100: FM works with NVLSM). On a system without NVSwitches the service exits with NV_WARN_NOTHING_TO_DO.
  HostFacts missing = hgx();
  missing.fabric.manager = {};
  fabric_not_started(missing);  // without a fabric manager no GPU gets past "Not Started"
  const Finding& absent = require_finding(evaluate(missing), "fabric.manager");
  CHECK(absent.status == Status::fail);
  CHECK(absent.message.find("4 NVSwitches") != std::string::npos);
  CHECK(absent.remedy.find("exactly 550.54.15") != std::string::npos);
  CHECK(absent.remedy.find("systemctl enable --now nvidia-fabricmanager") != std::string::npos);

  HostFacts other = hgx();
  other.fabric.manager.version = "550.54.14";
  const Finding& mismatch = require_finding(evaluate(other), "fabric.manager");
  CHECK(mismatch.status == Status::fail);
  CHECK(mismatch.message.find("550.54.14 does not match the driver 550.54.15") != std::string::npos);

  HostFacts stopped = hgx();
  stopped.fabric.manager.running = false;
  stopped.fabric.manager.service_state = "failed";
  fabric_not_started(stopped);
  const Finding& down = require_finding(evaluate(stopped), "fabric.manager");
  CHECK(down.status == Status::fail);
  CHECK(down.message.find("service is failed") != std::string::npos);

  HostFacts rooted = hgx();  // under --root the service state is unknown: not judged
  rooted.fabric.manager.running.reset();
  rooted.fabric.manager.service_state = "not asked under --root";
  CHECK(require_finding(evaluate(rooted), "fabric.manager").status == Status::pass);

  HostFacts b200 = hgx();
  for (auto& gpu : b200.gpus.gpus) gpu.name = "NVIDIA B200";
  CHECK(require_finding(evaluate(b200), "fabric.manager").status == Status::warn);
  b200.fabric.manager.nvlsm_installed = true;
  CHECK(require_finding(evaluate(b200), "fabric.manager").status == Status::pass);

  HostFacts pcie = hgx();  // no NVSwitch: nothing to manage, whatever is installed
  pcie.fabric.nvswitches.clear();
  pcie.fabric.manager.running = false;
  const Finding& none = require_finding(evaluate(pcie), "fabric.manager");
  CHECK(none.status == Status::skip);
  CHECK(none.message.find("NV_WARN_NOTHING_TO_DO") != std::string::npos);
}

TEST_CASE("fabric.manager: an HGX B200, whose NVSwitches are not on PCI, still needs the fabric manager",
          "[doctor][fabric]") {
  // On NVLink5 boards the host sees no NVSwitch PCI function: the switches are managed through ConnectX bridges whose
  // VPD carries SW_MNG (NVIDIA/gpu-driver-container ubuntu24.04/nvidia-driver, _assert_nvlink5_system), and the
  // fabric manager with NVLSM drives them over those InfiniBand devices (Fabric Manager user guide 1.3.2, 1.5). The
  // GPUs stay unusable until it has (cudaErrorSystemNotReady), so "no NVSwitch, no fabric manager needed" would pass
  // a node no job can run on.
  HostFacts b200 = hgx_b200();
  b200.fabric.manager = {};
  fabric_not_started(b200);
  const Finding& absent = require_finding(evaluate(b200), "fabric.manager");
  CHECK(absent.status == Status::fail);
  CHECK(absent.message.find("NVLink5 switches managed through mlx5_10, mlx5_11") != std::string::npos);
  CHECK(absent.remedy.find("exactly 550.54.15") != std::string::npos);

  b200 = hgx_b200();
  CHECK(require_finding(evaluate(b200), "fabric.manager").status == Status::warn);  // NVLSM missing
  b200.fabric.manager.nvlsm_installed = true;
  b200.fabric.manager.nvlsm_version = "2025.03.0";
  const Finding& ready = require_finding(evaluate(b200), "fabric.manager");
  CHECK(ready.status == Status::pass);
  CHECK(ready.message.find("NVLSM 2025.03.0") != std::string::npos);
}

// The bridges' VPD is root's only (mode 0600 in sysfs): as another user doctor sees InfiniBand devices but cannot tell
// a switch-management bridge from a compute NIC, so "no fabric manager is needed" would be a guess on an HGX B200.
TEST_CASE("fabric.manager: an HGX B200 read without root cannot tell, and does not say no fabric manager is needed",
          "[doctor][fabric]") {
  HostFacts b200 = hgx_b200();
  b200.fabric.nvlink5_bridges.clear();
  b200.fabric.vpd_unreadable = {"mlx5_0", "mlx5_10", "mlx5_11"};
  const Finding& unknown = require_finding(evaluate(b200), "fabric.manager");
  CHECK(unknown.status == Status::skip);
  CHECK(unknown.message.find("cannot tell whether this board's NVLink5 switches need the fabric manager") !=
        std::string::npos);
  CHECK(unknown.remedy.find("as root") != std::string::npos);
  // An H100 PCIe node read without root: no NVLink5 board, so the usual answer stands.
  HostFacts pcie = hgx_b200();
  for (auto& gpu : pcie.gpus.gpus) gpu.name = "NVIDIA H100 PCIe";
  pcie.fabric.nvlink5_bridges.clear();
  pcie.fabric.vpd_unreadable = {"mlx5_0"};
  CHECK(require_finding(evaluate(pcie), "fabric.manager").message.find("no fabric manager is needed") !=
        std::string::npos);
}

TEST_CASE("fabric.manager: the GPU Operator's fabric manager, in its driver container, is not a missing one",
          "[doctor][fabric]") {
  // The GPU Operator starts nv-fabricmanager inside the nvidia-driver-ctr container: "deployed either as a systemd
  // service (nvidia-fabricmanager.service) on bare-metal / host-driver installations [or] a child daemon process
  // inside the GPU Operator's nvidia-driver-ctr container" (NVIDIA/NVSentinel issue 883): the host then has no
  // package, no binary and no systemd unit of it.
  // NVML's fabric state Completed/Success is set only once the fabric manager has configured the GPU (nvml.h,
  // nvmlGpuFabricInfo_t), so it shows the fabric manager at work wherever it runs.
  HostFacts operator_node = hgx();
  operator_node.fabric.manager = {};
  const Finding& completed = require_finding(evaluate(operator_node), "fabric.manager");
  CHECK(completed.status == Status::pass);
  CHECK(completed.message.find("no fabric manager on the host") != std::string::npos);
  CHECK(completed.message.find("Completed/Success") != std::string::npos);

  fabric_not_started(operator_node);  // a visible process is enough while the GPUs are still being registered
  operator_node.fabric.manager.process_seen = true;
  operator_node.fabric.manager.process_evidence = "/proc/4242/comm";
  const Finding& process = require_finding(evaluate(operator_node), "fabric.manager");
  CHECK(process.status == Status::pass);
  CHECK(process.message.find("/proc/4242/comm") != std::string::npos);

  HostFacts baked = hgx();  // a host package left disabled while the fabric works: worth a look, not a drain
  baked.fabric.manager.running = false;
  baked.fabric.manager.service_state = "inactive";
  const Finding& inactive = require_finding(evaluate(baked), "fabric.manager");
  CHECK(inactive.status == Status::warn);
  CHECK(inactive.remedy.find("remove the host's package") != std::string::npos);

  HostFacts crashed = hgx();  // a host-managed node whose fabric manager died: the GPUs keep "Completed"
  crashed.fabric.manager.running = false;
  crashed.fabric.manager.service_state = "failed";
  CHECK(require_finding(evaluate(crashed), "fabric.manager").status == Status::fail);

  HostFacts partial = hgx();  // one GPU not registered and no process: the fabric manager is missing after all
  partial.fabric.manager = {};
  partial.gpus.gpus[3].fabric->state = GpuFabricInfo::State::in_progress;
  CHECK(require_finding(evaluate(partial), "fabric.manager").status == Status::fail);
}

TEST_CASE("fabric manager process: found by its kernel name in /proc", "[probe][fabric]") {
  gpuenv::testing::FakeSystem system;
  system.files["/proc/1/comm"] = "systemd\n";
  system.files["/proc/4242/comm"] = "nv-fabricmanage\n";  // TASK_COMM_LEN 16: 15 characters and the NUL
  system.files["/proc/self/comm"] = "nv-fabricmanage\n";  // not a pid: skipped
  gpuenv::probe::FabricManagerFacts manager;
  gpuenv::probe::find_fabric_manager_process(system, manager);
  CHECK(manager.process_seen);
  CHECK(manager.process_evidence == "/proc/4242/comm");
  system.files.erase("/proc/4242/comm");
  gpuenv::probe::FabricManagerFacts none;
  gpuenv::probe::find_fabric_manager_process(system, none);
  CHECK_FALSE(none.process_seen);
}

TEST_CASE("nvlink5_management_bridges: only InfiniBand devices whose VPD says SW_MNG, sorted", "[probe][fabric]") {
  // The VPD of a switch-tray bridge holds the keyword SMDL=SW_MNG among binary fields; an ordinary ConnectX-7 NIC
  // shares its PCI id (15b3:1021) but not that keyword.
  using namespace std::string_literals;  // the VPD holds NUL bytes
  gpuenv::testing::FakeSystem system;
  const std::string vpd_bridge =
      "\x82\x10"
      "ConnectX-7 bridge\x90\x20SMDL=SW_MNG\0\x78"s;
  system.files["/sys/class/infiniband/mlx5_11/device/vpd"] = vpd_bridge;
  system.files["/sys/class/infiniband/mlx5_10/device/vpd"] = vpd_bridge;
  system.files["/sys/class/infiniband/mlx5_0/device/vpd"] =
      "\x82\x0a"
      "ConnectX-7\x90\x08PN:MCX75\0\x78"s;
  system.files["/sys/class/infiniband/mlx5_2/ports/1/state"] = "4: ACTIVE\n";  // no VPD readable
  REQUIRE(vpd_bridge.find("SW_MNG") != std::string::npos);
  CHECK(gpuenv::probe::nvlink5_management_bridges(system) == std::vector<std::string>{"mlx5_10", "mlx5_11"});
  gpuenv::testing::FakeSystem h100;
  CHECK(gpuenv::probe::nvlink5_management_bridges(h100).empty());
}

TEST_CASE("fabric.sxid: fatal SXids fail, corrected ECC passes, an unknown code warns", "[doctor][fabric]") {
  // Severity per data/sxid.toml: the Fabric Manager user guide's SXid appendix (fatal vs non-fatal NVSwitch errors)
  // as leptonai/gpud copies it; the log lines are the real ones in tests/fixtures/probe/sxid-xid79-h100.log.
  HostFacts facts = hgx();
  facts.sxid_events = gpuenv::probe::parse_sxid_events(gpuenv::testing::read_fixture("probe/sxid-xid79-h100.log"));
  const Finding& fatal = require_finding(evaluate(facts), "fabric.sxid");
  CHECK(fatal.status == Status::fail);
  CHECK(fatal.message.find("SXid 20034 on 0000:05:00.0 x2: LTSSM Fault Up") != std::string::npos);
  CHECK(fatal.remedy.find("SXid 20034") != std::string::npos);

  HostFacts corrected = hgx();
  corrected.sxid_events.push_back({11012, "nvidia-nvswitch0", "0000:05:00.0", false, "Single bit ECC", "", 1});
  CHECK(require_finding(evaluate(corrected), "fabric.sxid").status == Status::pass);
  corrected.sxid_events.push_back({99999, "nvidia-nvswitch0", "0000:05:00.0", false, "new", "", 2});
  const Finding& unknown = require_finding(evaluate(corrected), "fabric.sxid");
  CHECK(unknown.status == Status::warn);
  CHECK(unknown.message.find("not in gpuenv's SXid table") != std::string::npos);
  corrected.sxid_events.push_back({99998, "nvidia-nvswitch0", "0000:05:00.0", true, "new and fatal", "", 3});
  const Finding& unknown_fatal = require_finding(evaluate(corrected), "fabric.sxid");
  CHECK(unknown_fatal.status == Status::fail);  // the driver printed "Fatal": trusted for a code the table lacks
  CHECK(unknown_fatal.message.find("SXid 99998 on 0000:05:00.0 (Fatal, not in gpuenv's SXid table)") !=
        std::string::npos);
  CHECK(unknown_fatal.remedy.find("reset the GPUs and NVSwitches") != std::string::npos);

  HostFacts unreadable = hgx();
  unreadable.kernel_log_source = "unreadable: dmesg is not allowed";
  CHECK(require_finding(evaluate(unreadable), "fabric.sxid").status == Status::skip);
}

TEST_CASE("ib.ports: a real 8x NDR node against ND H100 v5, a port down, a slow rail", "[doctor][fabric]") {
  const auto* nd = instance("Standard_ND96isr_H100_v5");
  REQUIRE(nd != nullptr);
  REQUIRE(nd->nic_rate_gbps == std::optional<double>(400));
  gpuenv::testing::FakeSystem system;
  system.add_tree(gpuenv::testing::fixture_path("probe/ib-h100-8x400"));
  HostFacts facts = hgx();
  facts.rdma = gpuenv::probe::read_rdma_devices(system, true);
  const Finding& ok = require_finding(evaluate(facts, nd), "ib.ports");
  CHECK(ok.status == Status::pass);
  CHECK(ok.message.find("8 InfiniBand/RoCE ports ACTIVE/LinkUp at 400 Gb/s") != std::string::npos);

  HostFacts down = facts;
  down.rdma.ports[2].state = "DOWN";
  down.rdma.ports[2].phys_state = "Polling";
  const Finding& lost = require_finding(evaluate(down, nd), "ib.ports");
  CHECK(lost.status == Status::fail);
  CHECK(lost.message.find("7 of 8") != std::string::npos);
  CHECK(lost.message.find("mlx5_4:1 DOWN/Polling") != std::string::npos);

  HostFacts slow = facts;
  slow.rdma.ports[0].rate_gbps = 200;
  slow.rdma.ports[0].rate_text = "200 Gb/sec (2X NDR)";
  CHECK(require_finding(evaluate(slow, nd), "ib.ports").status == Status::fail);

  // Without an instance type the ports are reported, never judged.
  CHECK(require_finding(evaluate(down), "ib.ports").status == Status::pass);
}

TEST_CASE("ib.ports: EFA ports on a p4d counted by state, a port down fails", "[doctor][fabric]") {
  // An EFA port in sysfs as linux-rdma/rdma-core#884 shows it (`cat /sys/class/infiniband/efa_0/ports/1/link_layer`
  // prints "Unknown"; ibv_devinfo: state PORT_ACTIVE (4)) under the rdmapNsM names the EFA driver gives on p4d/p5
  // (uccl-project/uccl#163: rdmap16s27); the device's uevent names the efa driver. p4d.24xlarge has 4 (the EC2 API).
  const auto* p4d = instance("p4d.24xlarge");
  REQUIRE(p4d != nullptr);
  REQUIRE(p4d->efa_devices == std::optional<unsigned>(4));
  gpuenv::testing::FakeSystem system;
  for (const char* device : {"rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27"}) {
    const std::string base = std::string("/sys/class/infiniband/") + device;
    system.files[base + "/device/uevent"] = "DRIVER=efa\nPCI_ID=1D0F:EFA0\n";
    system.files[base + "/ports/1/state"] = "4: ACTIVE\n";
    system.files[base + "/ports/1/phys_state"] = "5: LinkUp\n";
    system.files[base + "/ports/1/link_layer"] = "Unknown\n";
  }
  HostFacts facts = hgx();
  facts.rdma = gpuenv::probe::read_rdma_devices(system, true);
  REQUIRE(facts.rdma.ports.size() == 4);
  const Finding& ok = require_finding(evaluate(facts, p4d), "ib.ports");
  CHECK(ok.status == Status::pass);
  CHECK(ok.message.find("4 EFA ports ACTIVE/LinkUp, as p4d.24xlarge should have") != std::string::npos);

  system.files["/sys/class/infiniband/rdmap32s27/ports/1/state"] = "1: DOWN\n";
  system.files["/sys/class/infiniband/rdmap32s27/ports/1/phys_state"] = "3: Disabled\n";
  facts.rdma = gpuenv::probe::read_rdma_devices(system, true);
  const Finding& lost = require_finding(evaluate(facts, p4d), "ib.ports");
  CHECK(lost.status == Status::fail);
  CHECK(lost.message.find("3 of 4 EFA ports") != std::string::npos);
  CHECK(lost.message.find("rdmap32s27:1 DOWN/Disabled") != std::string::npos);
}

TEST_CASE("fabric.gpudirect: peer memory, dma-buf, neither, EFA's libfabric and NCCL plugin", "[doctor][fabric]") {
  // NCCL's own check (NVIDIA/nccl src/transport/net_ib/gdr.cc ibGdrSupportInitOnce): GPUDirect RDMA when
  // /sys/kernel/mm/memory_peers/nv_mem/version or /sys/module/nvidia_peermem/version exists, or dma-buf (the open
  // kernel module on Linux 5.12+, NVIDIA GPU Operator "GPUDirect RDMA" page).
  HostFacts ib = hgx();
  ib.rdma.infiniband = {"mlx5_0"};
  ib.fabric.peermem_loaded = false;
  ib.kernel.open_module = false;
  const Finding& neither = require_finding(evaluate(ib), "fabric.gpudirect");
  CHECK(neither.status == Status::warn);
  CHECK(neither.remedy.find("modprobe nvidia_peermem") != std::string::npos);
  ib.kernel.open_module = true;  // kernel 5.15 >= 5.12: dma-buf
  CHECK(require_finding(evaluate(ib), "fabric.gpudirect").status == Status::pass);
  ib.host.kernel_release = "5.4.0-150-generic";
  CHECK(require_finding(evaluate(ib), "fabric.gpudirect").status == Status::warn);
  ib.fabric.peermem_loaded = true;
  ib.fabric.peermem_evidence = "/sys/module/nvidia_peermem/version";
  CHECK(require_finding(evaluate(ib), "fabric.gpudirect").status == Status::pass);

  HostFacts efa = hgx();
  efa.rdma.efa = {"rdmap16s27"};
  efa.fabric.efa_libfabric = true;
  const Finding& plugin = require_finding(evaluate(efa), "fabric.gpudirect");
  CHECK(plugin.status == Status::warn);
  CHECK(plugin.message.find("aws-ofi-nccl") != std::string::npos);
  efa.fabric.efa_nccl_plugin = true;
  CHECK(require_finding(evaluate(efa), "fabric.gpudirect").status == Status::pass);
}

TEST_CASE("fabric.affinity: NICs per GPU NUMA node, reported and never judged", "[doctor][fabric]") {
  HostFacts facts = hgx();
  gpuenv::probe::RdmaPort port;
  port.device = "mlx5_0";
  port.numa_node = 0;
  facts.rdma.ports.push_back(port);
  facts.fabric.gpu_numa = {{0, "0000:10:00.0", 0}, {4, "0000:14:00.0", 1}};
  const Finding& f = require_finding(evaluate(facts), "fabric.affinity");
  CHECK(f.status == Status::pass);
  CHECK(f.message.find("GPU 0 on NUMA 0: mlx5_0") != std::string::npos);
  CHECK(f.message.find("GPU 4 on NUMA 1: no RDMA NIC") != std::string::npos);
  CHECK(f.message.find("not judged") != std::string::npos);
}

namespace {

using gpuenv::probe::LinkCounterSnapshot;

/// Start and end readings `seconds` apart: GPU 0 with links 0 and 1 at Gen5 x16, one port.
HostFacts with_counters(double seconds, const std::function<void(LinkCounterSnapshot&)>& change) {
  HostFacts facts = hgx();
  LinkCounterSnapshot start;
  start.nvml = true;
  gpuenv::probe::GpuLinkCounters gpu;
  gpu.index = 0;
  gpu.uuid = "GPU-0";
  gpu.pci_bus_id = "00000000:10:00.0";
  gpu.pcie_replays = 3;
  gpu.pcie_gen = 5;
  gpu.pcie_width = 16;
  gpu.nvlinks = {{0, true, 0, 0, 0, 0}, {1, true, 0, 0, 0, 0}};
  start.gpus.push_back(gpu);
  start.ports.push_back({"mlx5_0", 1, 2, 0, 0, 14});
  LinkCounterSnapshot end = start;
  end.taken_ms = static_cast<std::int64_t>(seconds * 1000);
  change(end);
  facts.counters_start = start;
  facts.counters_end = end;
  return facts;
}

}  // namespace

TEST_CASE("link rates: NVLink, PCIe replay and IB port counters that grow during the run", "[doctor][fabric]") {
  // DCGM's limits (NVIDIA/DCGM): health watch DCGM_LIMIT_MAX_NVLINK_ERROR 1 (any replay or recovery error) and
  // DCGM_LIMIT_MAX_NVLINK_CRC_ERROR 100 per second; diag max_pcie_replays 80; health GetExpectedPcieReplayRate (BER
  // 1e-12 x the link's bit rate per lane x lanes, per minute). The values are rows of data/doctor/thresholds.toml.
  struct Row {
    std::string name;
    std::function<void(LinkCounterSnapshot&)> change;
    std::string id;
    Status expected;
    std::string says;
  };
  const std::vector<Row> rows = {
      {"quiet", [](LinkCounterSnapshot&) {}, "nvlink.errors", Status::pass, "2 NVLinks: no replay"},
      {"one replay", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[1].replay = 1; }, "nvlink.errors", Status::fail,
       "link 1: 1 replay errors"},
      {"a recovery", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[0].recovery = 2; }, "nvlink.errors", Status::fail,
       "2 recovery errors"},
      {"a few CRC", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[0].crc_flit = 5; }, "nvlink.errors", Status::warn,
       "5 CRC errors"},
      {"CRC storm", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[0].crc_data = 5000; }, "nvlink.errors", Status::fail,
       "(250/s)"},
      {"link down", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[1].active = false; }, "nvlink.errors", Status::fail,
       "link 1 went down during the run"},
      {"replays within allowance", [](LinkCounterSnapshot& s) { s.gpus[0].pcie_replays = 3 + 31; }, "pcie.replay",
       Status::pass, "within DCGM's allowance"},
      {"replays above allowance", [](LinkCounterSnapshot& s) { s.gpus[0].pcie_replays = 3 + 32; }, "pcie.replay",
       Status::warn, "32 PCIe replays (Gen5 x16 allows 31)"},
      {"replays above DCGM diag", [](LinkCounterSnapshot& s) { s.gpus[0].pcie_replays = 3 + 80; }, "pcie.replay",
       Status::fail, "80 PCIe replays"},
      {"a flap", [](LinkCounterSnapshot& s) { s.ports[0].link_downed = 3; }, "ib.errors", Status::warn,
       "mlx5_0:1 went down 1 time(s)"},
      {"symbol errors", [](LinkCounterSnapshot& s) { s.ports[0].symbol_error = 7; }, "ib.errors", Status::pass,
       "reported, not judged: mlx5_0:1: 7 symbol errors"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const Finding& f = require_finding(evaluate(with_counters(20, row.change)), row.id);
    CHECK(f.status == row.expected);
    CHECK(f.message.find(row.says) != std::string::npos);
  }
  // DCGM's per-minute allowance scales with the run's length: 32 replays in 120 s at Gen5 x16 (62 allowed) pass.
  const Finding& longer = require_finding(
      evaluate(with_counters(120, [](LinkCounterSnapshot& s) { s.gpus[0].pcie_replays = 3 + 32; })), "pcie.replay");
  CHECK(longer.status == Status::pass);
  // NVML unreadable at the end: both GPU findings skip with the reason; the ports are still judged.
  const auto findings = evaluate(with_counters(20, [](LinkCounterSnapshot& s) {
    s.nvml = false;
    s.nvml_reason = "NVML did not answer within 10000 ms";
    s.gpus.clear();
  }));
  CHECK(require_finding(findings, "nvlink.errors").status == Status::skip);
  CHECK(require_finding(findings, "pcie.replay").message.find("did not answer") != std::string::npos);
  // Links whose DL counters do not read (NVLink5 on Blackwell reports other fields: DCGM's MonitorNVLink5Fields) are
  // not "no error": with none readable the finding skips, and only readable links are counted.
  const auto unread = [](LinkCounterSnapshot& s) {
    for (auto& link : s.gpus[0].nvlinks) link.replay = link.recovery = link.crc_flit = link.crc_data = std::nullopt;
  };
  const auto blackwell = evaluate(with_counters(20, [&](LinkCounterSnapshot& s) { unread(s); }));
  CHECK(require_finding(blackwell, "nvlink.errors").status == Status::skip);
  HostFacts one_unread = with_counters(20, [](LinkCounterSnapshot&) {});
  for (auto* snapshot : {&one_unread.counters_start, &one_unread.counters_end}) {
    auto& link = (*snapshot)->gpus[0].nvlinks[1];
    link.replay = link.recovery = link.crc_flit = link.crc_data = std::nullopt;
  }
  CHECK(require_finding(evaluate(one_unread), "nvlink.errors").message.find("1 NVLinks: no replay") !=
        std::string::npos);
  CHECK(require_finding(findings, "ib.errors").status == Status::pass);
  // evaluate_link_counters is the same judgement alone (doctor appends it after its end reading).
  const auto alone = gpuenv::doctor::evaluate_link_counters(
      with_counters(20, [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[1].replay = 1; }), thresholds());
  REQUIRE(alone.size() == 3);
  CHECK(alone[0].id == "nvlink.errors");
  CHECK(alone[0].status == Status::fail);
}

// Blackwell (NVLink5): nvml.h marks the replay/recovery/CRC counters "unsupported for Blackwell+" (NVIDIA/go-nvml
// gen/nvml/nvml.h @ 2f9e261f), so doctor's start and end readings carry the NVML_FI_DEV_NVLINK_COUNT_* counters
// instead, judged by probe/nvlink5.hpp's table as smoke.link_errors judges them, after DCGM 4.6.0
// (modules/health/DcgmHealthWatch.cpp MonitorNVLink5Fields: any rise of an error counter fails,
// DCGM_LIMIT_MAX_NVLINK_ERROR 1; MonitorNVLinkErrorFields: a successful link recovery warns, a failed one fails;
// common/DcgmUtilities.cpp IsEffectiveBerThresholdExceeded: an effective bit error rate above 1e-12 fails).
TEST_CASE("link rates: NVLink5 counters that grow during the run, judged by probe's table", "[doctor][fabric]") {
  using gpuenv::probe::LinkCounterSnapshot;
  // Links 0 and 1 of GPU 0 read as a B200's: the older counters refused, every NVLink5 counter of the table read.
  const auto blackwell = [](LinkCounterSnapshot& s) {
    for (auto& link : s.gpus[0].nvlinks) {
      link.replay = link.recovery = link.crc_flit = link.crc_data = std::nullopt;
      link.nvlink5.clear();
      for (const auto& field : gpuenv::probe::nvlink5_error_fields())
        link.nvlink5.push_back({field.id, 100 * link.link + 7});  // each link its own counts
    }
    s.gpus[0].nvlink5_effective_ber = 0xfff;  // NVML's zero, 15e-255
    s.gpus[0].nvlink5_symbol_ber = 73710;     // DCGM's healthy Blackwell aggregate
  };
  /// `field` of link `link` at the end reading, `by` more than at the start.
  const auto rise = [](unsigned link, unsigned field, std::uint64_t by) {
    return [=](LinkCounterSnapshot& s) {
      for (auto& counter : s.gpus[0].nvlinks[link].nvlink5)
        if (counter.field == field) counter.value += by;
    };
  };
  struct Row {
    std::string name;
    std::function<void(LinkCounterSnapshot&)> change;
    Status expected;
    std::string says;
  };
  const std::vector<Row> rows = {
      {"quiet", [](LinkCounterSnapshot&) {}, Status::pass, "2 NVLinks: no NVLink5 error counter rose in 20 s"},
      {"symbol errors", rise(1, 221, 2), Status::fail, "GPU 0 (00000000:10:00.0) link 1: 2 symbol errors"},
      {"malformed packets", rise(0, 206, 1), Status::fail, "link 0: 1 malformed packet errors"},
      {"buffer overrun", rise(1, 207, 3), Status::fail, "link 1: 3 buffer overrun errors"},
      {"receive errors", rise(0, 208, 1), Status::fail, "link 0: 1 receive errors"},
      {"remote receive errors", rise(0, 209, 1), Status::fail, "link 0: 1 remote receive errors"},
      {"general receive errors", rise(0, 210, 1), Status::fail, "link 0: 1 general receive errors"},
      {"link integrity", rise(1, 211, 1), Status::fail, "link 1: 1 local link integrity errors"},
      {"a failed link recovery", rise(1, 214, 1), Status::fail, "link 1: 1 failed link recoveries"},
      {"a successful link recovery", rise(0, 213, 1), Status::warn, "link 0: 1 successful link recoveries"},
      {"effective errors", rise(1, 219, 40), Status::warn, "link 1: 40 effective errors"},
      {"effective BER above 1e-12", [](LinkCounterSnapshot& s) { s.gpus[0].nvlink5_effective_ber = (2u << 8) | 12; },
       Status::fail, "GPU 0 (00000000:10:00.0): effective bit error rate 2e-12 over all links"},
      {"symbol BER above the floor", [](LinkCounterSnapshot& s) { s.gpus[0].nvlink5_symbol_ber = (15u << 8) | 237; },
       Status::fail, "symbol bit error rate 15e-237"},
      {"a link down", [](LinkCounterSnapshot& s) { s.gpus[0].nvlinks[1].active = false; }, Status::fail,
       "link 1 went down during the run"},
  };
  // Both readings are a B200's (with_counters changes only the end reading).
  const auto b200_readings = [&blackwell] {
    HostFacts facts = with_counters(20, [](LinkCounterSnapshot&) {});
    blackwell(*facts.counters_start);
    blackwell(*facts.counters_end);
    return facts;
  };
  for (const Row& row : rows) {
    INFO(row.name);
    HostFacts facts = b200_readings();
    row.change(*facts.counters_end);
    const Finding& f = require_finding(evaluate(facts), "nvlink.errors");
    CHECK(f.status == row.expected);
    CHECK_THAT(f.message, Catch::Contains(row.says));
    if (row.expected != Status::pass) CHECK_THAT(f.source, Catch::Contains("MonitorNVLink5Fields"));
  }
  // A warning and a failure together: the failure decides, both are named.
  HostFacts both = b200_readings();
  rise(0, 213, 1)(*both.counters_end);
  rise(1, 221, 1)(*both.counters_end);
  const Finding& f = require_finding(evaluate(both), "nvlink.errors");
  CHECK(f.status == Status::fail);
  CHECK_THAT(f.message, Catch::Contains("link 0: 1 successful link recoveries"));
  CHECK_THAT(f.message, Catch::Contains("link 1: 1 symbol errors"));
}

TEST_CASE("gpu.nvlink: a B200's NVLink5 counters since the driver loaded are shown, not judged", "[doctor][fabric]") {
  HostFacts facts = hgx();
  for (auto& gpu : facts.gpus.gpus) {
    gpuenv::probe::NvLinkFacts links;  // 18 links up; the older counters refused (unknown), NVLink5's read
    for (unsigned link = 0; link < 18; ++link) links.active.push_back(link);
    links.nvlink5 = {{221, 0}, {213, gpu.index == 5 ? 3U : 0U}, {219, gpu.index == 5 ? 120U : 0U}};
    gpu.nvlink = links;
  }
  const Finding& f = require_finding(evaluate(facts), "gpu.nvlink");
  CHECK(f.status == Status::pass);
  CHECK_THAT(f.message, Catch::Contains("GPU 5 (00000000:15:00.0): 18 of 18 NVLinks active; NVLink5 counters since the "
                                        "driver loaded: 3 successful link recoveries, 120 effective errors"));
  CHECK_THAT(f.message, !Catch::Contains("GPU 4 (00000000:14:00.0): 18 of 18"));  // nothing counted: no note
}
