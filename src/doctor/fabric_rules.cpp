// The fabric, passively: each GPU's NVLink fabric registration, the fabric manager that NVSwitch boards need, SXid
// errors, the RDMA ports against the instance type, GPUDirect RDMA readiness and NIC-to-GPU NUMA affinity
// (docs/fabric.md).

#include <algorithm>
#include <map>
#include <set>

#include "doctor/rules_detail.hpp"
#include "probe/sxid.hpp"

namespace gpuenv::doctor::rules_detail {

namespace {

using probe::GpuFabricInfo;

constexpr const char* k_nvml_fabric_source =
    "nvml.h nvmlGpuFabricInfo_v3_t / NVML_GPU_FABRIC_STATE_* (\"status must be checked only if state returns "
    "complete\"; NVIDIA/go-nvml gen/nvml/nvml.h @ 2f9e261f)";
constexpr const char* k_fabric_manager_source =
    "NVIDIA Fabric Manager user guide (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/): FM checks "
    "the loaded driver's version at start and aborts on a mismatch; CUDA fails with cudaErrorSystemNotReady until FM "
    "has initialised the fabric";
constexpr const char* k_start_fabric_manager =
    "`systemctl enable --now nvidia-fabricmanager`; `journalctl -u nvidia-fabricmanager` says why it stopped";

/// The driver version the fabric manager must equal: the loaded kernel module's, else NVML's.
std::string driver_version(const HostFacts& facts) {
  return !facts.kernel.module_version.empty() ? facts.kernel.module_version : facts.gpus.driver_version;
}

/// Whether a kernel release ("5.15.0-119-generic") is at least major.minor.
bool kernel_at_least(const std::string& release, int major, int minor) {
  const auto version = Version::parse(release.substr(0, release.find_first_not_of("0123456789.")));
  return version && *version >= Version(std::vector<int>{major, minor});
}

/// Fourth-generation NVSwitch boards (HGX B100/B200/B300, or any node with an SW_MNG bridge), where the fabric
/// manager needs NVLSM.
bool has_fourth_generation_nvswitch(const HostFacts& facts) {
  if (!facts.fabric.nvlink5_bridges.empty()) return true;
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    for (const char* model : {"B100", "B200", "B300"}) {
      if (util::contains(gpu.name, model) && !util::contains(gpu.name, "GB")) return true;
    }
  }
  return false;
}

/// "8 NVSwitches (0000:…)" or, on NVLink5 boards, "NVLink5 switches managed through mlx5_10, mlx5_11 (VPD SW_MNG)".
std::string describe_switches(const probe::FabricFacts& fabric) {
  std::vector<std::string> parts;
  if (!fabric.nvswitches.empty()) {
    parts.push_back(std::to_string(fabric.nvswitches.size()) + " NVSwitch" +
                    (fabric.nvswitches.size() == 1 ? "" : "es") + " (" + util::join(fabric.nvswitches, ", ") + ")");
  }
  if (!fabric.nvlink5_bridges.empty())
    parts.push_back("NVLink5 switches managed through " + util::join(fabric.nvlink5_bridges, ", ") + " (VPD SW_MNG)");
  return util::join(parts, " and ");
}

/// Why the fabric manager is at work although the host has no running unit of it: a visible nv-fabricmanager
/// process, or NVML's fabric state Completed/Success on every GPU (which only the fabric manager sets); "" if neither.
std::string fabric_manager_elsewhere(const HostFacts& facts) {
  if (facts.fabric.manager.process_seen)
    return "an nv-fabricmanager process runs (" + facts.fabric.manager.process_evidence +
           "; the GPU Operator's driver container runs it without a host package)";
  const auto& gpus = facts.gpus.gpus;
  const bool all_completed = !gpus.empty() && std::all_of(gpus.begin(), gpus.end(), [](const GpuFacts& gpu) {
    return gpu.fabric && gpu.fabric->state == GpuFabricInfo::State::completed && gpu.fabric->status_ok;
  });
  if (!all_completed) return {};
  return "every GPU's NVLink fabric state is Completed/Success, which the fabric manager sets: it runs outside the "
         "host's view (the GPU Operator's driver container)";
}

std::string fabric_install_hint(const std::string& driver) {
  const std::string version = driver.empty() ? "<driver version>" : driver;
  return "install the fabric manager at exactly " + version +
         " (`gpuenv install` plans it: Ubuntu nvidia-fabricmanager-<branch> below R580 and nvidia-fabricmanager from "
         "R580, RHEL nvidia-fabric-manager below R580), then " +
         k_start_fabric_manager;
}

}  // namespace

void check_fabric_state(const HostFacts& facts, Findings& out) {
  PerGpu state("fabric.state", k_nvml_fabric_source);
  const std::string wait =
      "start the fabric manager and wait for registration (" + std::string(k_start_fabric_manager) +
      "); `nvidia-smi -q | grep -A6 Fabric` must show State Completed, Status Success; if it stays there, reboot";
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (!gpu.fabric || gpu.fabric->state == GpuFabricInfo::State::not_supported) continue;
    const GpuFabricInfo& fabric = *gpu.fabric;
    state.checked();
    if (fabric.state != GpuFabricInfo::State::completed) {
      state.add(Status::fail, gpu,
                "NVLink fabric state " + probe::to_string(fabric.state) +
                    ": the GPU is not registered with the fabric yet (CUDA refuses work with error 802, system not "
                    "ready, until it is)",
                wait);
    } else if (!fabric.status_ok) {
      state.add(Status::fail, gpu,
                "NVLink fabric registration completed with status " +
                    (fabric.status.empty() ? std::string("unknown") : fabric.status),
                "check the fabric manager's log (`journalctl -u nvidia-fabricmanager`) and the NVSwitch/NVLink health "
                "(`nvidia-smi nvlink --status`); reset the GPUs and NVSwitches (reboot); if it persists, open a "
                "hardware ticket");
    } else if (fabric.health_summary == "Unhealthy") {
      state.add(Status::fail, gpu, "NVLink fabric health Unhealthy",
                "check `nvidia-smi -q | grep -A12 Fabric` for which health bit is set (bandwidth, route, access "
                "timeout, configuration); drain the node and reboot; open a hardware ticket if it stays");
    } else if (fabric.health_summary == "Limited Capacity") {
      state.add(Status::warn, gpu, "NVLink fabric health Limited Capacity (degraded bandwidth or a recovering route)",
                "check `nvidia-smi -q | grep -A12 Fabric` and `nvidia-smi nvlink --status`; expect lower collective "
                "bandwidth until it recovers");
    }
  }
  state.finish(out, "registered with the NVLink fabric (State Completed, Status Success)",
               "no GPU reports an NVLink fabric state (GPUs before Hopper, PCIe GPUs without NVSwitch, or a driver "
               "before R550); fabric.manager covers NVSwitch boards");
}

void check_fabric_manager(const HostFacts& facts, Findings& out) {
  const probe::FabricFacts& fabric = facts.fabric;
  const probe::FabricManagerFacts& manager = fabric.manager;
  if (fabric.nvswitches.empty() && fabric.nvlink5_bridges.empty() && !fabric.vpd_unreadable.empty() &&
      has_fourth_generation_nvswitch(facts)) {
    // An HGX B200/B300 board manages its NVSwitches through a ConnectX bridge that only its VPD names.
    out.push_back(make("fabric.manager", Status::skip,
                       "cannot tell whether this board's NVLink5 switches need the fabric manager: the VPD of " +
                           util::join(fabric.vpd_unreadable, ", ") +
                           " (which names the switch-management bridges, SW_MNG) is readable by root only",
                       "run `gpuenv doctor` as root (gpuenv-doctor.service does); fabric.state still shows whether "
                       "each GPU registered with the fabric"));
    return;
  }
  if (fabric.nvswitches.empty() && fabric.nvlink5_bridges.empty()) {
    std::string message = fabric.pci_scanned ? "no NVSwitch on the PCI bus and no NVLink5 switch-management bridge: "
                                               "no fabric manager is needed"
                                             : "the PCI devices could not be read (/sys/bus/pci/devices)";
    if (manager.installed)
      message += " (" + manager.package + " " + manager.version +
                 " is installed; without NVSwitches it exits with NV_WARN_NOTHING_TO_DO)";
    out.push_back(make("fabric.manager", Status::skip, message));
    return;
  }
  const std::string switches = describe_switches(fabric);
  const std::string driver = driver_version(facts);
  // The GPU Operator runs the fabric manager in its driver container: no host package or unit, yet a working fabric.
  // A host unit that *failed* is no such case: NVML's fabric state stays Completed after the fabric manager that set
  // it died, so only a visible process excuses it.
  const bool host_unit_failed = manager.installed && manager.service_state == "failed" && !manager.process_seen;
  if ((!manager.installed || manager.running == false) && !host_unit_failed) {
    if (const std::string elsewhere = fabric_manager_elsewhere(facts); !elsewhere.empty()) {
      const bool host_unit_down = manager.installed;
      out.push_back(make(
          "fabric.manager", host_unit_down && !manager.process_seen ? Status::warn : Status::pass,
          switches + ": " +
              (host_unit_down ? "the host's nvidia-fabricmanager service is " +
                                    (manager.service_state.empty() ? std::string("not running") : manager.service_state)
                              : std::string("no fabric manager on the host")) +
              ", but " + elsewhere,
          host_unit_down && !manager.process_seen
              ? "if the GPU Operator runs the fabric manager, remove the host's package; else " +
                    std::string(k_start_fabric_manager)
              : std::string(),
          k_fabric_manager_source));
      return;
    }
  }
  if (!manager.installed) {
    out.push_back(make("fabric.manager", Status::fail,
                       switches + " but no fabric manager is installed: the GPUs cannot use NVLink through them",
                       fabric_install_hint(driver), k_fabric_manager_source));
    return;
  }
  const std::string name = (manager.package.empty() ? std::string("nv-fabricmanager") : manager.package) +
                           (manager.version.empty() ? std::string() : " " + manager.version);
  std::vector<std::string> problems;
  std::vector<std::string> remedies;
  if (!manager.version.empty() && !driver.empty() && manager.version != driver) {
    problems.push_back(name + " does not match the driver " + driver + " (the fabric manager refuses to start)");
    remedies.push_back(fabric_install_hint(driver));
  }
  if (manager.running == false) {
    problems.push_back("the nvidia-fabricmanager service is " +
                       (manager.service_state.empty() ? std::string("not running") : manager.service_state));
    remedies.emplace_back(k_start_fabric_manager);
  }
  Status status = problems.empty() ? Status::pass : Status::fail;
  if (has_fourth_generation_nvswitch(facts) && !manager.nvlsm_installed) {
    problems.push_back("NVLSM (the NVLink subnet manager fourth-generation NVSwitch boards need) was not found");
    remedies.emplace_back("install the nvlsm package from NVIDIA's CUDA repository (the fabric manager starts it)");
    status = std::max(status, Status::warn);
  }
  if (!problems.empty()) {
    out.push_back(make("fabric.manager", status, switches + ": " + util::join(problems, "; "),
                       util::join(remedies, "; "), k_fabric_manager_source));
    return;
  }
  std::string message = switches + ": " + name + (driver.empty() ? "" : " matches the driver " + driver);
  message += manager.running ? ", service active" : " (service state unknown: " + manager.service_state + ")";
  if (manager.nvlsm_installed) message += "; NVLSM " + manager.nvlsm_version;
  out.push_back(make("fabric.manager", Status::pass, message, {}, k_fabric_manager_source));
}

void check_sxid(const HostFacts& facts, Findings& out) {
  if (facts.sxid_events.empty()) {
    if (facts.fabric.nvswitches.empty()) {
      out.push_back(make("fabric.sxid", Status::skip,
                         facts.fabric.nvlink5_bridges.empty()
                             ? "no NVSwitch, no SXid events"
                             : "no NVSwitch on the PCI bus: SXids come from the nvidia-nvswitch driver of PCI "
                               "NVSwitches, and this board's switches are managed through " +
                                   util::join(facts.fabric.nvlink5_bridges, ", ")));
    } else if (facts.kernel_log_source.empty() || util::starts_with(facts.kernel_log_source, "unreadable")) {
      out.push_back(make("fabric.sxid", Status::skip, "no kernel log could be read for SXid events",
                         "run doctor as root, or allow dmesg (sysctl kernel.dmesg_restrict=0)"));
    } else {
      out.push_back(make("fabric.sxid", Status::pass, "no SXid events in " + facts.kernel_log_source));
    }
    return;
  }
  std::map<std::pair<int, std::string>, unsigned> groups;  // (code, NVSwitch bus) -> headlines
  std::set<std::pair<int, std::string>> printed_fatal;     // groups the driver called "Fatal" at least once
  for (const probe::SxidEvent& event : facts.sxid_events) {
    ++groups[{event.code, event.pci_bus_id}];
    if (event.fatal) printed_fatal.insert({event.code, event.pci_bus_id});
  }
  Status worst = Status::pass;
  std::vector<std::string> lines;
  std::vector<std::string> remedies;
  std::string source;
  for (const auto& [key, count] : groups) {
    const auto& [code, bus] = key;
    std::string line = "SXid " + std::to_string(code) + " on " + bus + (count > 1 ? " x" + std::to_string(count) : "");
    Status status = Status::warn;
    std::string remedy = "look up SXid " + std::to_string(code) + " in the Fabric Manager user guide";
    if (auto info = probe::sxid_info(code)) {
      line += ": " + info->name;
      using probe::XidSeverity;
      status = info->severity >= XidSeverity::error     ? Status::fail
               : info->severity == XidSeverity::warning ? Status::warn
                                                        : Status::pass;
      remedy = info->action == "-" ? std::string() : "SXid " + std::to_string(code) + ": " + info->action;
      source = info->source;
    } else if (printed_fatal.count(key) != 0) {
      // The driver's own word for a code the table lacks: the guide's fatal SXids are recovered only by a restart
      // (its "fatal" section says restart the guest VM, "always fatal" the host: data/sxid.toml's header), which is
      // what table rows of category fatal already map to (severity error).
      line += " (Fatal, not in gpuenv's SXid table)";
      status = Status::fail;
      remedy =
          "the driver called SXid " + std::to_string(code) +
          " fatal: drain the node and reset the GPUs and NVSwitches (reboot); open a hardware ticket if it returns";
    } else {
      line += " (not in gpuenv's SXid table)";
    }
    worst = std::max(worst, status);
    lines.push_back(line);
    if (status != Status::pass && !remedy.empty() &&
        std::find(remedies.begin(), remedies.end(), remedy) == remedies.end())
      remedies.push_back(remedy);
  }
  out.push_back(make("fabric.sxid", worst, util::join(lines, "; ") + " (" + facts.kernel_log_source + ")",
                     util::join(remedies, "; "), source));
}

void check_gpudirect(const HostFacts& facts, Findings& out) {
  const probe::FabricFacts& fabric = facts.fabric;
  const bool has_ib = !facts.rdma.infiniband.empty();
  const bool has_efa = !facts.rdma.efa.empty();
  if (!has_ib && !has_efa) {
    out.push_back(make("fabric.gpudirect", Status::skip, "no RDMA device: GPUDirect RDMA does not apply"));
    return;
  }
  std::vector<std::string> ok;
  std::vector<std::string> problems;
  std::vector<std::string> remedies;
  if (has_ib) {
    const bool dma_buf = facts.kernel.open_module.value_or(false) && kernel_at_least(facts.host.kernel_release, 5, 12);
    if (fabric.peermem_loaded == true) {
      ok.push_back("peer memory module loaded (" + fabric.peermem_evidence + ")");
    } else if (dma_buf) {
      ok.push_back("dma-buf (open kernel module on kernel " + facts.host.kernel_release + ")");
    } else if (fabric.peermem_loaded == false) {
      problems.push_back(
          "InfiniBand/RoCE devices but neither nvidia_peermem nor dma-buf (the open kernel module on "
          "kernel 5.12 or later): NCCL stages GPU data through host memory");
      remedies.emplace_back(
          "`modprobe nvidia_peermem` and list it in /etc/modules-load.d/, or use the open kernel modules on a kernel "
          "of 5.12 or later (dma-buf, NVIDIA's recommendation)");
    }
  }
  if (has_efa) {
    if (fabric.efa_libfabric) {
      ok.push_back("EFA libfabric");
    } else {
      problems.push_back("EFA devices but no libfabric from the EFA installer (/opt/amazon/efa)");
      remedies.emplace_back("run the aws-efa-installer (it installs libfabric with the efa provider)");
    }
    if (fabric.efa_nccl_plugin) {
      ok.push_back("aws-ofi-nccl plugin");
    } else {
      problems.push_back(
          "no aws-ofi-nccl plugin (libnccl-net.so) on the host: NCCL falls back to TCP sockets unless "
          "the job's container carries it");
      remedies.emplace_back("install aws-ofi-nccl (the EFA installer ships it) or use a container image that has it");
    }
  }
  constexpr const char* source =
      "NVIDIA/nccl src/transport/net_ib/gdr.cc @ 5067397c (the peer-memory files NCCL checks); GPU Operator "
      "GPUDirect RDMA page (dma-buf recommended over nvidia-peermem, open kernel modules); AWS EFA installer layout";
  if (!problems.empty()) {
    out.push_back(make("fabric.gpudirect", Status::warn,
                       util::join(problems, "; ") + (ok.empty() ? "" : " (present: " + util::join(ok, ", ") + ")"),
                       util::join(remedies, "; "), source));
  } else if (ok.empty()) {
    out.push_back(make("fabric.gpudirect", Status::skip,
                       "whether a peer-memory module is loaded is unknown (/sys/module is not in the inspected tree)"));
  } else {
    out.push_back(make("fabric.gpudirect", Status::pass, util::join(ok, "; "), {}, source));
  }
}

void check_affinity(const HostFacts& facts, Findings& out) {
  std::map<int, std::vector<std::string>> nics;  // NUMA node -> RDMA devices on it
  for (const probe::RdmaPort& port : facts.rdma.ports) {
    if (!port.numa_node) continue;
    auto& names = nics[*port.numa_node];
    if (std::find(names.begin(), names.end(), port.device) == names.end()) names.push_back(port.device);
  }
  std::vector<std::string> lines;
  std::set<int> gpu_nodes;
  for (const probe::GpuNumaNode& gpu : facts.fabric.gpu_numa) {
    if (!gpu.numa_node) continue;
    gpu_nodes.insert(*gpu.numa_node);
    const auto it = nics.find(*gpu.numa_node);
    lines.push_back("GPU " + std::to_string(gpu.gpu_index) + " on NUMA " + std::to_string(*gpu.numa_node) + ": " +
                    (it == nics.end() ? std::string("no RDMA NIC") : util::join(it->second, ", ")));
  }
  if (lines.empty() || nics.empty()) {
    out.push_back(
        make("fabric.affinity", Status::skip,
             "no NUMA node known for the GPUs or the RDMA NICs (single-socket hosts and many VMs report none)"));
    return;
  }
  // Reported, not judged: no public source fixes a rule, and NCCL picks the nearest NIC from the topology itself.
  out.push_back(make("fabric.affinity", Status::pass, util::join(lines, "; ") + " (reported, not judged)"));
}

void check_ib_ports(const HostFacts& facts, const InstanceExpectation* instance, Findings& out) {
  const std::vector<probe::RdmaPort>& ports = facts.rdma.ports;
  if (ports.empty()) {
    out.push_back(make("ib.ports", Status::skip,
                       facts.rdma.availability.available ? "no RDMA ports" : facts.rdma.availability.reason));
    return;
  }
  const auto usable = [&](const probe::RdmaPort& port, bool efa) {
    if (port.efa != efa || port.state != "ACTIVE" || (!port.phys_state.empty() && port.phys_state != "LinkUp"))
      return false;
    if (efa || !instance || !instance->nic_rate_gbps) return true;
    return port.rate_gbps && *port.rate_gbps >= *instance->nic_rate_gbps;
  };
  const auto describe = [](const probe::RdmaPort& port) {
    std::string text = port.device + ":" + std::to_string(port.port) + " " +
                       (port.state.empty() ? std::string("state unknown") : port.state);
    if (!port.phys_state.empty()) text += "/" + port.phys_state;
    if (!port.rate_text.empty()) text += " " + port.rate_text;
    return text;
  };
  std::vector<std::string> all;
  for (const probe::RdmaPort& port : ports) all.push_back(describe(port));
  const bool efa = instance && instance->efa_devices;
  const std::optional<unsigned> want = !instance ? std::nullopt
                                       : efa     ? instance->efa_devices
                                                 : instance->infiniband_devices;
  if (!want) {
    out.push_back(make("ib.ports", Status::pass,
                       util::join(all, "; ") + " (no NIC count known for this instance type: reported, not judged)"));
    return;
  }
  std::vector<std::string> short_of;
  unsigned count = 0;
  for (const probe::RdmaPort& port : ports) {
    if (port.efa != efa) continue;
    if (usable(port, efa)) {
      ++count;
    } else {
      short_of.push_back(describe(port));
    }
  }
  const std::string rate =
      !efa && instance->nic_rate_gbps ? " at " + number(*instance->nic_rate_gbps, 0) + " Gb/s or more" : "";
  const std::string kind = efa ? "EFA" : "InfiniBand/RoCE";
  if (count >= *want) {
    out.push_back(make("ib.ports", Status::pass,
                       std::to_string(count) + " " + kind + " ports ACTIVE/LinkUp" + rate + ", as " +
                           instance->instance_type + " should have",
                       {}, instance->source));
    return;
  }
  out.push_back(make("ib.ports", Status::fail,
                     std::to_string(count) + " of " + std::to_string(*want) + " " + kind + " ports ACTIVE/LinkUp" +
                         rate + " (" + instance->instance_type + ")" +
                         (short_of.empty() ? "" : "; not counted: " + util::join(short_of, "; ")),
                     "a port in Polling has lost its cable or switch port, Disabled was turned off, a lower rate "
                     "means a bad cable or transceiver: check `ibstat`, reseat or replace the cable, or open a ticket "
                     "with the provider; multi-node jobs run at the slowest rail's speed",
                     instance->source));
}

}  // namespace gpuenv::doctor::rules_detail
