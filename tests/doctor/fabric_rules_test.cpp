// doctor's fabric rules on HostFacts built in C++: fabric.state, fabric.manager, fabric.sxid, ib.ports,
// fabric.gpudirect, fabric.affinity, and the link rates nvlink.errors, pcie.replay, ib.errors (docs/fabric.md).
// The contracts are NVIDIA's, quoted at each case: the NVML API reference (fabric registration), the Fabric Manager
// user guide (the daemon, its version, NVLSM), DCGM's limits (link error rates) and NCCL's GPUDirect check.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "doctor/instances.hpp"
#include "doctor/rule_rows.hpp"
#include "doctor/rules.hpp"
#include "doctor/thresholds.hpp"
#include "probe/collect.hpp"
#include "probe/fabric.hpp"
#include "probe/facts.hpp"
#include "probe/link_counters.hpp"
#include "probe/nvlink5.hpp"
#include "probe/pci_devices.hpp"
#include "probe/rdma.hpp"
#include "support/fake_nvml_library.hpp"
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

  HostFacts pcie = hgx();  // no NVSwitch and no GPU in an NVLink fabric: nothing to manage, whatever is installed
  pcie.fabric.nvswitches.clear();
  pcie.fabric.manager.running = false;
  for (auto& gpu : pcie.gpus.gpus) gpu.fabric->state = GpuFabricInfo::State::not_supported;
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
// a switch-management bridge from a compute NIC. NVML's fabric state needs no root: GPUs it places in an NVLink fabric
// need a fabric manager, judged as on a board whose switches are in sight (review 27 on 5b315f0: "the package, service
// and version checks need no root"); only with no fabric state to go by is the board a "cannot tell".
TEST_CASE("fabric.manager: an HGX B200 read without root is judged by NVML's fabric state", "[doctor][fabric]") {
  HostFacts b200 = hgx_b200();
  b200.fabric.nvlink5_bridges.clear();
  b200.fabric.vpd_unreadable = {"mlx5_0", "mlx5_10", "mlx5_11"};
  const Finding& judged = require_finding(evaluate(b200), "fabric.manager");
  CHECK(judged.status == Status::warn);  // the fabric manager matches the driver and runs; NVLSM is missing
  CHECK(judged.message.find("NVML places 8 of 8 GPUs (NVIDIA B200) in an NVLink fabric (8 Completed)") !=
        std::string::npos);
  CHECK(judged.message.find("readable by root only") != std::string::npos);
  CHECK(judged.message.find("no fabric manager is needed") == std::string::npos);
  b200.fabric.manager.nvlsm_installed = true;
  CHECK(require_finding(evaluate(b200), "fabric.manager").status == Status::pass);

  HostFacts unknown = b200;  // a report without the fabric block: nothing but the model to go by
  for (auto& gpu : unknown.gpus.gpus) gpu.fabric.reset();
  const Finding& cannot = require_finding(evaluate(unknown), "fabric.manager");
  CHECK(cannot.status == Status::skip);
  CHECK(cannot.message.find("cannot tell whether this board's NVLink5 switches need the fabric manager") !=
        std::string::npos);
  CHECK(cannot.remedy.find("as root") != std::string::npos);

  // An H100 PCIe node read without root: NVML places no GPU in a fabric (nvidia-smi prints N/A), no NVLink5 part.
  HostFacts pcie = hgx_b200();
  for (auto& gpu : pcie.gpus.gpus) {
    gpu.name = "NVIDIA H100 PCIe";
    gpu.fabric->state = GpuFabricInfo::State::not_supported;
  }
  pcie.fabric.nvlink5_bridges.clear();
  pcie.fabric.vpd_unreadable = {"mlx5_0"};
  CHECK(require_finding(evaluate(pcie), "fabric.manager").message.find("no fabric manager is needed") !=
        std::string::npos);
}

namespace {

/// An HGX B200 before mlx5_core is loaded (or seen from a container without /sys/class/infiniband): no NVSwitch on
/// PCI, no InfiniBand device, so no SW_MNG bridge; /sys/module without mlx5_core and ib_umad; no fabric manager; the
/// GPUs wait for one (Not Started).
HostFacts no_switch_b200() {
  HostFacts facts = hgx_b200();
  facts.fabric.nvlink5_bridges.clear();
  facts.fabric.mlx5_core_loaded = false;
  facts.fabric.ib_umad_loaded = false;
  facts.fabric.manager = {};
  fabric_not_started(facts);
  return facts;
}

/// A GB200 NVL72 compute tray: four GB200 GPUs registered with the rack's NVLink domain, as `nvidia-smi -q` showed one
/// in kubernetes-sigs/dra-driver-nvidia-gpu#626 (State Completed, Status Success, CliqueId 2, ClusterUUID
/// dc6e40c4-d722-4357-9ba6-5291dd461278); no NVSwitch, no bridge, no fabric manager on the tray.
HostFacts gb200_tray() {
  HostFacts facts = hgx();
  facts.gpus.gpus.resize(4);
  for (auto& gpu : facts.gpus.gpus) {
    gpu.name = "NVIDIA GB200";
    gpu.fabric->clique_id = 2;
    gpu.fabric->cluster_uuid = "dc6e40c4-d722-4357-9ba6-5291dd461278";
  }
  facts.fabric.nvswitches.clear();
  facts.fabric.manager = {};
  return facts;
}

/// `facts` after `change`.
HostFacts fabric_facts_with(HostFacts facts, const std::function<void(HostFacts&)>& change) {
  change(facts);
  return facts;
}

}  // namespace

// No NVSwitch and no NVLink5 bridge in sight is not "no fabric manager is needed". Sources, per row below:
// - NVIDIA/gpu-driver-container ubuntu24.04/nvidia-driver @ 09dc9546, _start_daemons: on an NVLink5 system (an
//   InfiniBand device whose VPD says SW_MNG) it runs _ensure_nvlink5_prerequisites ("waiting for the mlx5_core and
//   ib_umad kernel modules to be loaded") and then nvidia-fabricmanager-start.sh with the nvlsm config; otherwise it
//   starts nv-fabricmanager only when /proc/driver/nvidia-nvswitch/devices lists NVSwitches. A GB200 compute tray has
//   neither, so the driver container starts no fabric manager there.
// - nvml.h (NVIDIA/go-nvml gen/nvml/nvml.h): NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0, NOT_STARTED 1, IN_PROGRESS 2,
//   COMPLETED 3; NVIDIA's nvloom reads Not Supported as "MNNVL fabric not available", TransformerEngine refuses
//   multi-node NVLink on it.
// - NVIDIA/go-nvlib pkg/nvlib/device/device.go @ 0171eccd, IsFabricAttached: a GPU is attached to a (multi-node)
//   fabric only when its state is Completed and `info.ClusterUuid` is not all zeros.
// - NVIDIA MNNVL user guide (https://docs.nvidia.com/multi-node-nvlink-systems/mnnvl-user-guide/overview.html): the
//   rack's NVSwitches sit in 9 NVLink switch trays, compute trays hold the GPUs.
// - Fabric Manager user guide, shared NVSwitch virtualization: "only GPUs [are] passed through to the guests", "the
//   fabrics are not visible to guests" (quoted in NVIDIA/kubevirt-gpu-device-plugin#133): a guest sees GPUs in a
//   fabric without an NVSwitch, and the service VM's fabric manager registers them.
TEST_CASE("fabric.manager without a visible switch: the GPUs' fabric state decides, never a false alarm",
          "[doctor][fabric]") {
  struct Row {
    std::string name;
    std::function<HostFacts()> facts;
    Status expected;
    std::vector<std::string> says;
    std::string remedy_says;  ///< "" when not checked
  };
  const std::vector<Row> rows = {
      {"HGX B200, mlx5_core not loaded, no fabric manager: the same finding as with the bridges in sight",
       [] { return no_switch_b200(); },
       Status::fail,
       {"NVML places 8 of 8 GPUs (NVIDIA B200) in an NVLink fabric (8 Not Started)",
        "no InfiniBand device under /sys/class/infiniband; mlx5_core and ib_umad are not loaded", "indirect evidence",
        "no fabric manager is installed"},
       "modprobe mlx5_core ib_umad"},
      {"HGX B200 without mlx5_core, its fabric manager unit failed",
       [] {
         return fabric_facts_with(no_switch_b200(), [](HostFacts& f) {
           f.fabric.manager = hgx().fabric.manager;
           f.fabric.manager.running = false;
           f.fabric.manager.service_state = "failed";
           f.fabric.manager.nvlsm_installed = true;
         });
       },
       Status::fail,
       {"the nvidia-fabricmanager service is failed"},
       "modprobe mlx5_core ib_umad"},
      // NVML's fabric state stays Completed after the fabric manager that set it died (NVIDIA/NVSentinel#889: a broken
      // fabric manager unnoticed for 20 days); gpud excuses a failed unit only when its log says NV_WARN_NOTHING_TO_DO
      // (leptonai/gpud components/accelerator/nvidia/fabric-manager/component.go:480-489). On a B200 the switches are
      // the host's, whether doctor sees them or not: a failed unit fails as it does with the bridges in sight.
      {"HGX B200 read without root, its fabric manager unit failed after registering every GPU (stale Completed)",
       [] {
         return fabric_facts_with(hgx_b200(), [](HostFacts& f) {
           f.fabric.nvlink5_bridges.clear();
           f.fabric.vpd_unreadable = {"mlx5_0", "mlx5_10", "mlx5_11"};
           f.fabric.manager.running = false;
           f.fabric.manager.service_state = "failed";
           f.fabric.manager.nvlsm_installed = true;
           for (auto& gpu : f.gpus.gpus) gpu.fabric->state = GpuFabricInfo::State::completed;
         });
       },
       Status::fail,
       {"8 Completed", "readable by root only", "the nvidia-fabricmanager service is failed"},
       "systemctl enable --now nvidia-fabricmanager"},
      {"HGX B200 without mlx5_core, its fabric manager unit failed, the GPUs still Completed",
       [] {
         return fabric_facts_with(no_switch_b200(), [](HostFacts& f) {
           f.fabric.manager = hgx().fabric.manager;
           f.fabric.manager.running = false;
           f.fabric.manager.service_state = "failed";
           f.fabric.manager.nvlsm_installed = true;
           for (auto& gpu : f.gpus.gpus) gpu.fabric->state = GpuFabricInfo::State::completed;
         });
       },
       Status::fail,
       {"8 Completed", "the nvidia-fabricmanager service is failed"},
       "modprobe mlx5_core ib_umad"},
      {"HGX B200 read without root, its fabric manager unit inactive, the GPUs Completed",
       [] {
         return fabric_facts_with(hgx_b200(), [](HostFacts& f) {
           f.fabric.nvlink5_bridges.clear();
           f.fabric.vpd_unreadable = {"mlx5_0"};
           f.fabric.manager.running = false;
           f.fabric.manager.service_state = "inactive";
           f.fabric.manager.nvlsm_installed = true;
           for (auto& gpu : f.gpus.gpus) gpu.fabric->state = GpuFabricInfo::State::completed;
         });
       },
       Status::warn,
       {"service is inactive", "every GPU's NVLink fabric state is Completed/Success"},
       "remove the host's package"},
      {"HGX B200, fabric manager and NVLSM installed and active, but the modules for its switches not loaded",
       [] {
         return fabric_facts_with(no_switch_b200(), [](HostFacts& f) {
           f.fabric.manager = hgx().fabric.manager;
           f.fabric.manager.nvlsm_installed = true;
         });
       },
       Status::warn,
       {"(mlx5_core, ib_umad) are not both loaded"},
       "modprobe mlx5_core ib_umad"},
      {"HGX B200 seen from a container: the GPU Operator's fabric manager registered every GPU",
       [] {
         return fabric_facts_with(no_switch_b200(), [](HostFacts& f) {
           f.fabric.mlx5_core_loaded.reset();
           f.fabric.ib_umad_loaded.reset();
           for (auto& gpu : f.gpus.gpus) gpu.fabric->state = GpuFabricInfo::State::completed;
         });
       },
       Status::pass,
       {"no fabric manager on the host, but every GPU's NVLink fabric state is Completed/Success"},
       ""},
      {"H100 VM under shared NVSwitch virtualization: the guest's fabric manager unit failed with nothing to do",
       [] {
         return fabric_facts_with(hgx(), [](HostFacts& f) {
           f.fabric.nvswitches.clear();
           f.fabric.manager.running = false;
           f.fabric.manager.service_state = "failed";
         });
       },
       Status::pass,
       {"NVML places 8 of 8 GPUs (NVIDIA H100 80GB HBM3)", "service is failed", "hypervisor of a VM"},
       ""},
      {"H100 VM whose partition the hypervisor has not activated",
       [] {
         return fabric_facts_with(hgx(), [](HostFacts& f) {
           f.fabric.nvswitches.clear();
           f.fabric.manager = {};
           fabric_not_started(f);
         });
       },
       Status::fail,
       {"8 Not Started"},
       "shared NVSwitch virtualization"},
      {"GB200 compute tray: its switches are managed in the switch trays",
       [] { return gb200_tray(); },
       Status::skip,
       {"the GPUs are NVIDIA GB200 (a Grace superchip) in the NVLink cluster dc6e40c4-d722-4357-9ba6-5291dd461278",
        "no fabric manager runs on this host"},
       ""},
      {"GB200 compute tray still registering with its domain",
       [] { return fabric_facts_with(gb200_tray(), [](HostFacts& f) { fabric_not_started(f); }); },
       Status::skip,
       {"multi-node NVLink rack"},
       ""},
      {"a GPU of unknown name in a multi-node NVLink cluster",
       [] {
         return fabric_facts_with(gb200_tray(), [](HostFacts& f) {
           for (auto& gpu : f.gpus.gpus) gpu.name = "NVIDIA Graphics Device";
         });
       },
       Status::skip,
       {"NVML places the GPUs in the multi-node NVLink cluster dc6e40c4"},
       ""},
      {"single-GPU VM with one B200",
       [] { return fabric_facts_with(no_switch_b200(), [](HostFacts& f) { f.gpus.gpus.resize(1); }); },
       Status::skip,
       {"NVML places 1 of 1 GPU (NVIDIA B200)", "one GPU has no NVLink peer on this host"},
       ""},
      {"PCIe Blackwell (RTX PRO 6000): no NVLink fabric",
       [] {
         return fabric_facts_with(hgx(), [](HostFacts& f) {
           f.fabric.nvswitches.clear();
           for (auto& gpu : f.gpus.gpus) {
             gpu.name = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
             gpu.fabric->state = GpuFabricInfo::State::not_supported;
           }
         });
       },
       Status::skip,
       {"no fabric manager is needed"},
       ""},
      {"B200 GPUs NVML places in no fabric: the model alone cannot tell",
       [] {
         return fabric_facts_with(no_switch_b200(), [](HostFacts& f) {
           for (auto& gpu : f.gpus.gpus) gpu.fabric->state = GpuFabricInfo::State::not_supported;
         });
       },
       Status::skip,
       {"cannot tell", "NVML places none in an NVLink fabric (state Not Supported)", "mlx5_core"},
       "modprobe mlx5_core ib_umad"},
      {"B200 GPUs with no fabric state read at all",
       [] {
         return fabric_facts_with(no_switch_b200(), [](HostFacts& f) {
           for (auto& gpu : f.gpus.gpus) gpu.fabric.reset();
         });
       },
       Status::skip,
       {"cannot tell", "no NVLink fabric state could be read"},
       ""},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const Finding& f = require_finding(evaluate(row.facts()), "fabric.manager");
    INFO(f.message);
    INFO(f.remedy);
    CHECK(f.status == row.expected);
    for (const std::string& text : row.says) CHECK(f.message.find(text) != std::string::npos);
    if (!row.remedy_says.empty()) CHECK(f.remedy.find(row.remedy_says) != std::string::npos);
    const bool nvlink = row.name.find("RTX PRO") == std::string::npos;
    if (nvlink) CHECK(f.message.find("no fabric manager is needed") == std::string::npos);
  }
}

// The same decisions on facts collected as doctor collects them: a constructed host tree (tests/fixtures/probe/
// hgx-b200-no-mlx5, README there) read through FakeSystem, and the fake libnvidia-ml answering the fabric calls from
// tests/fixtures/nvml/*.conf (keys fabric_state, fabric_status, fabric_clique: tests/fake_nvml/fake_nvml.cpp).
TEST_CASE("fabric.manager on a host tree and the fake NVML: B200 without mlx5_core, with its bridges, GB200, PCIe",
          "[doctor][fabric][nvml]") {
  using namespace std::string_literals;  // the VPD holds NUL bytes
  const auto with_bridges = [](gpuenv::testing::FakeSystem& system) {
    system.files["/sys/module/mlx5_core/version"] = "24.10-1.1.4\n";
    system.files["/sys/module/ib_umad/refcnt"] = "0\n";
    for (const char* bridge : {"mlx5_10", "mlx5_11"}) {
      const std::string base = std::string("/sys/class/infiniband/") + bridge;
      system.files[base + "/device/uevent"] = "DRIVER=mlx5_core\n";
      system.files[base + "/device/vpd"] =
          "\x82\x10"
          "ConnectX-7 bridge\x90\x20SMDL=SW_MNG\0\x78"s;
    }
  };
  struct Row {
    std::string name;
    std::string conf;
    std::function<void(gpuenv::testing::FakeSystem&)> change;
    Status expected;
    std::string says;
  };
  const std::vector<Row> rows = {
      {"HGX B200, mlx5_core not loaded", "hgx-b200-not-registered.conf", nullptr, Status::fail,
       "NVML places 8 of 8 GPUs (NVIDIA B200) in an NVLink fabric (8 Not Started), but no NVSwitch or NVLink5 "
       "switch-management bridge is visible (no InfiniBand device under /sys/class/infiniband; mlx5_core and ib_umad "
       "are not loaded; indirect evidence)"},
      {"the same board with mlx5_core loaded and its bridges in sight", "hgx-b200-not-registered.conf", with_bridges,
       Status::fail,
       "NVLink5 switches managed through mlx5_10, mlx5_11 (VPD SW_MNG) but no fabric manager is installed"},
      {"a GB200 compute tray", "gb200-tray.conf", nullptr, Status::skip, "no fabric manager runs on this host"},
      {"PCIe Blackwell GPUs", "rtx-pro-6000-pcie.conf", nullptr, Status::skip, "no fabric manager is needed"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    gpuenv::testing::FakeSystem system;
    system.add_tree(gpuenv::testing::fixture_path("probe/hgx-b200-no-mlx5"));
    if (row.change) row.change(system);
    const gpuenv::testing::ScopedEnv fixture("GPUENV_FAKE_NVML", gpuenv::testing::fixture_path("nvml/" + row.conf));
    const gpuenv::testing::FakeNvmlCopy library;
    system.real_libraries["libnvidia-ml.so.1"] = library.path();
    gpuenv::probe::CollectOptions options;
    options.live = true;
    options.libcuda = false;
    options.link_counters = false;
    options.timeout = std::chrono::seconds(5);
    const HostFacts facts = gpuenv::probe::collect_host_facts(system, options);
    INFO(facts.gpus.availability.reason);
    REQUIRE(facts.gpus.availability.available);
    const Finding& f = require_finding(evaluate(facts), "fabric.manager");
    INFO(f.message);
    CHECK(f.status == row.expected);
    CHECK(f.message.find(row.says) != std::string::npos);
  }
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
       "(mlx5_0:1: 7 symbol errors (below ibcheckerrs' 10; no link rate to judge its bit error rate by)"},
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
      // Shown, not judged (gpuenv's policy): the effective BER, judged against DCGM's 1e-12, judges them.
      {"effective errors", rise(1, 219, 40), Status::pass,
       "; GPU 0 (00000000:10:00.0) link 1: 40 effective errors (not judged: the effective bit error rate judges them)"},
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

// Symbol errors by their growth during the run, on a real 8x NDR node's /sys/class/infiniband (tests/fixtures/probe/
// ib-h100-8x400: 400 Gb/s InfiniBand ports, "400 Gb/sec (4X NDR)", mlx5_bond_0 an Ethernet port) read twice through
// FakeSystem, `seconds` apart, with `errors` added to one port's symbol_error in between (and `rate` written over its
// rate, `downed` added to its link_downed). The limits are rows of data/doctor/thresholds.toml, both gpuenv policy,
// and symbol errors never fail a node:
// - rdma-core infiniband-diags/scripts/ibcheckerrs.in @ 41293e0e: "# Default thresholds SymbolErrorCounter=10", and
//   `if (th[$1] > 0 && $2 >= th[$1]) warn = warn "#warn: counter " ...`: 10 or more is a warning; the same project's
//   rate limit is higher (infiniband-diags/scripts/IBswcountlimits.pm: `%IBswcountlimits::rate_dep_thresholds =
//   ("SymbolErrors", 10, ...)` per second, check_counter_rates);
// - the InfiniBand specification "requires less than one-bit error per 10^12 bits transmitted" (NVIDIA DGX SuperPOD
//   cabling design guide, "Bit Error Rate (BER)"), and NVIDIA's ibdiagnet: "For NDR/HDR/EDR links, symbol errors
//   (NDR/HDR) or effective errors (EDR) are the actual errors seen by the application level after error correction"
//   (IBUtils2 2.24.0, "Bit Error Rate (BER)"): on HDR/NDR, errors / (400e9 x seconds) bounds the post-FEC BER from
//   below (each symbol error is at least one bit error); on EDR symbol errors come before FEC and are not held to it.
// - the kernel reads symbol_error as the 16-bit and link_downed as the 8-bit PMA counter (drivers/infiniband/core/
//   sysfs.c PORT_PMA_ATTR(symbol_error, 0, 16, 32), PORT_PMA_ATTR(link_downed, 2, 8, 56)); the capture's mlx5_1
//   link_downed reads 255, at its maximum. A counter at its maximum stops counting (IBA PortCounters).
TEST_CASE("ib.errors: symbol errors judged by ibcheckerrs' count and the InfiniBand bit error rate",
          "[doctor][fabric]") {
  struct Row {
    std::string name;
    std::string device;
    unsigned errors;
    double seconds;
    Status expected;
    std::string says;
    std::string rate;     ///< written over the port's rate; "" keeps the capture's
    unsigned downed = 0;  ///< added to the port's link_downed
  };
  const std::vector<Row> rows = {
      {"quiet", "mlx5_4", 0, 60, Status::pass, "ports: no link went down, symbol errors within the limits in 60 s", ""},
      {"a few, reported", "mlx5_4", 4, 60, Status::pass,
       "mlx5_4:1: 4 symbol errors (below ibcheckerrs' 10; post-FEC bit error rate at least 1.7e-13 at 400 Gb/s)", ""},
      {"ibcheckerrs' count, within the BER", "mlx5_4", 12, 60, Status::warn,
       "mlx5_4:1: 12 symbol errors (ibcheckerrs warns from 10; post-FEC bit error rate at least 5.0e-13 at 400 Gb/s)",
       ""},
      {"above the specification's BER on NDR: a warning, never a failure", "mlx5_4", 36, 60, Status::warn,
       "mlx5_4:1: 36 symbol errors (post-FEC bit error rate at least 1.5e-12 at 400 Gb/s, above the InfiniBand "
       "specification's 1.0e-12; a lower bound, HDR/NDR only)",
       ""},
      {"the same count over a longer run is within the BER", "mlx5_4", 36, 300, Status::warn,
       "post-FEC bit error rate at least 3.0e-13", ""},
      {"HDR: post-FEC as NDR", "mlx5_4", 36, 60, Status::warn,
       "post-FEC bit error rate at least 3.0e-12 at 200 Gb/s, above the InfiniBand specification's",
       "200 Gb/sec (4X HDR)"},
      {"EDR: symbol errors before FEC, the BER not judged", "mlx5_4", 500, 60, Status::warn,
       "mlx5_4:1: 500 symbol errors (ibcheckerrs warns from 10; bit error rate at least 8.3e-11 at 100 Gb/sec (4X EDR) "
       "(not HDR/NDR: symbol errors before forward error correction, reported, not judged))",
       "100 Gb/sec (4X EDR)"},
      {"EDR: fewer than 10 reported", "mlx5_4", 5, 60, Status::pass, "reported, not judged", "100 Gb/sec (4X EDR)"},
      {"a burst in a one-second window: too few to judge", "mlx5_4", 8, 1, Status::pass,
       "mlx5_4:1: 8 symbol errors (below ibcheckerrs' 10; post-FEC bit error rate at least 2.0e-11", ""},
      {"an Ethernet (RoCE) port is reported only", "mlx5_bond_0", 500, 60, Status::pass,
       "mlx5_bond_0:1: 500 symbol errors (Ethernet link: reported, not judged)", ""},
      {"a link that retrained during the run: its symbol errors warn at most", "mlx5_4", 3600, 60, Status::warn,
       "a lower bound, HDR/NDR only; the link went down during the run, and a retrain brings symbol errors", "", 1},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    gpuenv::testing::FakeSystem system;
    system.add_tree(gpuenv::testing::fixture_path("probe/ib-h100-8x400"));
    const std::string port = "/sys/class/infiniband/" + row.device + "/ports/1/";
    if (!row.rate.empty()) system.files[port + "rate"] = row.rate + "\n";
    HostFacts facts = hgx();
    facts.rdma = gpuenv::probe::read_rdma_devices(system, true);
    const gpuenv::probe::LinkCounterOptions ports_only{"", std::chrono::seconds(1)};
    facts.counters_start = gpuenv::probe::read_link_counters(system, ports_only);
    const std::vector<std::pair<std::string, unsigned>> added = {{"symbol_error", row.errors},
                                                                 {"link_downed", row.downed}};
    for (const auto& [counter, count] : added)
      system.files[port + "counters/" + counter] =
          std::to_string(std::stoul(system.files[port + "counters/" + counter]) + count) + "\n";
    system.clock += std::chrono::milliseconds(static_cast<long>(row.seconds * 1000));
    facts.counters_end = gpuenv::probe::read_link_counters(system, ports_only);
    const Finding& f = require_finding(evaluate(facts), "ib.errors");
    INFO(f.message);
    CHECK(f.status == row.expected);
    CHECK(f.message.find(row.says) != std::string::npos);
    CHECK(f.message.find("mlx5_1:1 link_downed at the counter's maximum") != std::string::npos);
    if (row.expected != Status::pass) CHECK(f.remedy.find("ibdiagnet --get_phy_info") != std::string::npos);
    if (row.says.find("above the InfiniBand") != std::string::npos)
      CHECK(f.source.find("10^12 bits") != std::string::npos);
  }
  // A symbol_error counter already at its 16-bit maximum cannot grow: its errors cannot be judged, a warning.
  gpuenv::testing::FakeSystem saturated;
  saturated.add_tree(gpuenv::testing::fixture_path("probe/ib-h100-8x400"));
  saturated.files["/sys/class/infiniband/mlx5_4/ports/1/counters/symbol_error"] = "65535\n";
  HostFacts facts = hgx();
  facts.rdma = gpuenv::probe::read_rdma_devices(saturated, true);
  facts.counters_start = gpuenv::probe::read_link_counters(saturated, {"", std::chrono::seconds(1)});
  saturated.clock += std::chrono::seconds(60);
  facts.counters_end = gpuenv::probe::read_link_counters(saturated, {"", std::chrono::seconds(1)});
  const Finding& stuck = require_finding(evaluate(facts), "ib.errors");
  CHECK(stuck.status == Status::warn);
  CHECK(stuck.message.find("mlx5_4:1 symbol_error at the counter's maximum (65535): its symbol errors cannot be "
                           "judged") != std::string::npos);
  CHECK(stuck.remedy.find("perfquery -R") != std::string::npos);
}
