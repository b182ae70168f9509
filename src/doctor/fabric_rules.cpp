// The fabric, passively: each GPU's NVLink fabric registration, the fabric manager that NVSwitch boards need, SXid
// errors, the RDMA ports against the instance type, GPUDirect RDMA readiness and NIC-to-GPU NUMA affinity
// (docs/fabric.md).

#include <algorithm>
#include <map>
#include <set>

#include "doctor/rules_detail.hpp"
#include "probe/fabric.hpp"
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
constexpr const char* k_hidden_switch_source =
    "NVIDIA/gpu-driver-container ubuntu24.04/nvidia-driver @ 09dc9546 (_start_daemons: the fabric manager starts with "
    "an SW_MNG bridge, once mlx5_core and ib_umad are loaded, or with NVSwitch devices, else not at all); nvml.h "
    "NVML_GPU_FABRIC_STATE_* (Not Supported: no NVLink fabric); NVIDIA/go-nvlib pkg/nvlib/device/device.go @ 0171eccd "
    "IsFabricAttached (a multi-node fabric sets clusterUuid); NVIDIA MNNVL user guide (switch trays)";
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
  const auto& gpus = facts.gpus.gpus;
  return std::any_of(gpus.begin(), gpus.end(), [](const GpuFacts& gpu) { return probe::is_hgx_nvlink5_gpu(gpu.name); });
}

/// Every GPU registered with the fabric: State Completed, Status Success (only a fabric manager sets it).
bool all_fabric_completed(const HostFacts& facts) {
  const auto& gpus = facts.gpus.gpus;
  return !gpus.empty() && std::all_of(gpus.begin(), gpus.end(), [](const GpuFacts& gpu) {
    return gpu.fabric && gpu.fabric->state == GpuFabricInfo::State::completed && gpu.fabric->status_ok;
  });
}

/// What says that a board whose switches this host cannot see is an NVLink board anyway (docs/fabric.md,
/// "fabric.manager without a visible switch").
struct HiddenSwitches {
  enum class Kind {
    none,          ///< nothing says so: no fabric manager is needed
    multi_node,    ///< a Grace superchip or multi-node NVLink domain: the switch trays manage the switches
    model_only,    ///< HGX NVLink5 GPUs by name, but NVML places none in a fabric: cannot tell
    single_gpu,    ///< one GPU in a fabric: whoever holds the switches registers it
    fabric_state,  ///< GPUs NVML places in an NVLink fabric: a fabric manager must register them
  };
  Kind kind = Kind::none;
  std::string evidence;  ///< "NVML places 8 of 8 GPUs (NVIDIA B200) in an NVLink fabric (8 Not Started)"
  std::string why;       ///< why no switch is visible: "no InfiniBand device ...; mlx5_core is not loaded"
  bool nvlink5 = false;  ///< HGX B100/B200/B300 GPUs
};

/// Why neither an NVSwitch nor an NVLink5 switch-management bridge is in sight.
std::string why_switches_hidden(const HostFacts& facts, bool nvlink5) {
  const probe::FabricFacts& fabric = facts.fabric;
  std::vector<std::string> why;
  if (!fabric.pci_scanned) why.emplace_back("the PCI devices could not be read (/sys/bus/pci/devices)");
  if (!fabric.vpd_unreadable.empty()) {
    why.push_back("the VPD of " + util::join(fabric.vpd_unreadable, ", ") +
                  ", which names NVLink5 switch-management bridges (SW_MNG), is readable by root only");
  } else if (facts.rdma.infiniband.empty() && facts.rdma.efa.empty()) {
    why.emplace_back("no InfiniBand device under /sys/class/infiniband");
  } else {
    why.emplace_back("no InfiniBand device's VPD names a switch-management bridge (SW_MNG)");
  }
  if (nvlink5) {
    std::vector<std::string> unloaded;
    if (fabric.mlx5_core_loaded == false) unloaded.emplace_back("mlx5_core");
    if (fabric.ib_umad_loaded == false) unloaded.emplace_back("ib_umad");
    if (!unloaded.empty())
      why.push_back(util::join(unloaded, " and ") + (unloaded.size() == 1 ? " is" : " are") + " not loaded");
  }
  return util::join(why, "; ");
}

/// "8 Not Started" or "7 Completed, 1 In Progress".
std::string fabric_state_counts(const std::vector<const GpuFacts*>& gpus) {
  std::map<GpuFabricInfo::State, unsigned> counts;
  for (const GpuFacts* gpu : gpus) ++counts[gpu->fabric->state];
  std::vector<std::string> parts;
  for (const auto& [state, count] : counts) parts.push_back(std::to_string(count) + " " + probe::to_string(state));
  return util::join(parts, ", ");
}

HiddenSwitches hidden_switches(const HostFacts& facts) {
  HiddenSwitches out;
  const auto& gpus = facts.gpus.gpus;
  std::string nvlink5_model;
  std::string superchip;
  std::string cluster;
  std::vector<const GpuFacts*> in_fabric;
  bool fabric_read = false;
  for (const GpuFacts& gpu : gpus) {
    if (probe::is_hgx_nvlink5_gpu(gpu.name)) nvlink5_model = gpu.name;
    for (const char* model : {"GB200", "GB300", "GH200"}) {
      if (util::contains(gpu.name, model)) superchip = gpu.name;
    }
    if (gpu.fabric) fabric_read = true;
    if (probe::in_nvlink_fabric(gpu)) in_fabric.push_back(&gpu);
    if (probe::in_multi_node_nvlink_domain(gpu)) cluster = gpu.fabric->cluster_uuid;
  }
  out.nvlink5 = !nvlink5_model.empty();
  if (!out.nvlink5 && (!superchip.empty() || !cluster.empty())) {
    out.kind = HiddenSwitches::Kind::multi_node;
    out.evidence = !superchip.empty() ? "the GPUs are " + superchip + " (a Grace superchip)"
                                      : "NVML places the GPUs in the multi-node NVLink cluster " + cluster;
    if (!superchip.empty() && !cluster.empty()) out.evidence += " in the NVLink cluster " + cluster;
    return out;
  }
  if (in_fabric.empty()) {
    if (!out.nvlink5) return out;
    out.kind = HiddenSwitches::Kind::model_only;
    out.evidence = "the GPUs are " + nvlink5_model + ", an HGX NVLink5 part, but " +
                   (fabric_read ? std::string("NVML places none in an NVLink fabric (state Not Supported)")
                                : std::string("no NVLink fabric state could be read"));
    out.why = why_switches_hidden(facts, true);
    return out;
  }
  const std::string model = out.nvlink5 ? nvlink5_model : in_fabric.front()->name;
  out.kind = gpus.size() == 1 ? HiddenSwitches::Kind::single_gpu : HiddenSwitches::Kind::fabric_state;
  out.evidence = "NVML places " + std::to_string(in_fabric.size()) + " of " + std::to_string(gpus.size()) + " " +
                 (gpus.size() == 1 ? "GPU" : "GPUs") + (model.empty() ? "" : " (" + model + ")") +
                 " in an NVLink fabric (" + fabric_state_counts(in_fabric) + ")";
  out.why = why_switches_hidden(facts, out.nvlink5);
  return out;
}

/// What to do when the GPUs are in an NVLink fabric but no switch is in sight: `then` (the fabric manager's own
/// remedy, may be empty) after what makes the switches visible, and what a VM's owner does instead.
std::string hidden_switches_remedy(const HiddenSwitches& hidden, const std::string& then = {}) {
  const std::string vm =
      "in a VM whose NVSwitches the hypervisor holds (shared NVSwitch virtualization) the provider's fabric manager "
      "registers the GPUs instead: ask the provider";
  if (!hidden.nvlink5)
    return (then.empty() ? std::string() : then + "; ") + vm + " (this host sees no NVSwitch: " + hidden.why + ")";
  return "this host sees none of the board's NVLink5 switches (" + hidden.why +
         "), which an HGX B100/B200/B300 fabric manager manages with NVLSM (package nvlsm) through ConnectX bridges: "
         "load mlx5_core and ib_umad first (`modprobe mlx5_core ib_umad`; NVIDIA's driver container waits for both "
         "before it starts the fabric manager) and run doctor as root to see the bridges (their VPD says SW_MNG; "
         "Fabric Manager user guide, fourth-generation NVSwitch sections)" +
         (then.empty() ? std::string() : ", then " + then) + "; " + vm;
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
  if (!all_fabric_completed(facts)) return {};
  return "every GPU's NVLink fabric state is Completed/Success, which the fabric manager sets: it runs outside the "
         "host's view (the GPU Operator's driver container, or the hypervisor of a VM)";
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
  // No switch in sight is not "no switch": an HGX B200 shows its NVLink5 switches only through ConnectX bridges that
  // need mlx5_core (and root, for their VPD), and a VM may get GPUs without the NVSwitches they are wired to. The GPUs
  // themselves say whether they sit in an NVLink fabric (docs/fabric.md, "fabric.manager without a visible switch").
  const bool switches_seen = !fabric.nvswitches.empty() || !fabric.nvlink5_bridges.empty();
  std::string switches;
  std::optional<HiddenSwitches> hidden;  // set when only the GPUs show the fabric (indirect evidence)
  if (!switches_seen) {
    hidden = hidden_switches(facts);
    using Kind = HiddenSwitches::Kind;
    if (hidden->kind == Kind::none) {
      std::string message = fabric.pci_scanned ? "no NVSwitch on the PCI bus and no NVLink5 switch-management "
                                                 "bridge: no fabric manager is needed"
                                               : "the PCI devices could not be read (/sys/bus/pci/devices)";
      if (manager.installed)
        message += " (" + manager.package + " " + manager.version +
                   " is installed; without NVSwitches it exits with NV_WARN_NOTHING_TO_DO)";
      out.push_back(make("fabric.manager", Status::skip, message));
      return;
    }
    if (hidden->kind == Kind::multi_node) {
      out.push_back(make("fabric.manager", Status::skip,
                         hidden->evidence +
                             ": a Grace superchip node or compute tray holds no NVSwitch; in a multi-node NVLink rack "
                             "(GH200 NVL32, GB200/GB300 NVL72) the switch trays manage the switches (NVLink management "
                             "on NVOS), so no fabric manager runs on this host",
                         "fabric.state shows whether each GPU registered with the NVLink domain; IMEX "
                         "(nvidia-imex) is the compute tray's own service for multi-node NVLink",
                         k_hidden_switch_source));
      return;
    }
    if (hidden->kind == Kind::model_only) {
      out.push_back(make("fabric.manager", Status::skip,
                         "cannot tell whether this board's NVLink5 switches need the fabric manager: " +
                             hidden->evidence + ", and no switch is visible (" + hidden->why + ")",
                         !fabric.vpd_unreadable.empty()
                             ? "run `gpuenv doctor` as root (gpuenv-doctor.service does); fabric.state still shows "
                               "whether each GPU registered with the fabric"
                             : hidden_switches_remedy(*hidden),
                         k_hidden_switch_source));
      return;
    }
    if (hidden->kind == Kind::single_gpu) {
      out.push_back(make("fabric.manager", Status::skip,
                         hidden->evidence + " and no switch is visible (" + hidden->why +
                             "): one GPU has no NVLink peer on this host; whoever holds its switches (the "
                             "hypervisor's fabric manager in a single-GPU VM) registers it",
                         "fabric.state judges the GPU's registration", k_hidden_switch_source));
      return;
    }
    switches = hidden->evidence + ", but no NVSwitch or NVLink5 switch-management bridge is visible (" + hidden->why +
               "; indirect evidence)";
  } else {
    switches = describe_switches(fabric);
  }
  const bool indirect = hidden.has_value();
  const std::string source = indirect ? std::string(k_fabric_manager_source) + "; " + k_hidden_switch_source
                                      : std::string(k_fabric_manager_source);
  const std::string driver = driver_version(facts);
  // The GPU Operator runs the fabric manager in its driver container: no host package or unit, yet a working fabric.
  // A host unit that *failed* is no such case where the switches are in sight: NVML's fabric state stays Completed
  // after the fabric manager that set it died, so only a visible process excuses it. Where no switch is in sight only
  // because of how doctor looks (an HGX B100/B200/B300 by name, whose switches hide behind mlx5_core and root-only
  // VPD), the switches are the host's all the same: a failed unit fails there too (NVSentinel #889, a broken fabric
  // manager unnoticed for 20 days). Only a VM-like case, GPUs in a fabric that are no NVLink5 HGX board and no hidden
  // VPD, may run a host unit that exits by design (NV_WARN_NOTHING_TO_DO) while the hypervisor's fabric manager does
  // the work; gpud excuses a failed unit only on that log line (components/accelerator/nvidia/fabric-manager/
  // component.go), which doctor does not read, so there it is excused by the setting alone.
  const bool unit_excused = indirect && !hidden->nvlink5 && fabric.vpd_unreadable.empty();
  const bool host_unit_failed =
      !unit_excused && manager.installed && manager.service_state == "failed" && !manager.process_seen;
  if ((!manager.installed || manager.running == false) && !host_unit_failed) {
    if (const std::string elsewhere = fabric_manager_elsewhere(facts); !elsewhere.empty()) {
      const bool host_unit_down = manager.installed;
      const bool unit_left_down = host_unit_down && !manager.process_seen && !unit_excused;
      out.push_back(make(
          "fabric.manager", unit_left_down ? Status::warn : Status::pass,
          switches + ": " +
              (host_unit_down ? "the host's nvidia-fabricmanager service is " +
                                    (manager.service_state.empty() ? std::string("not running") : manager.service_state)
                              : std::string("no fabric manager on the host")) +
              ", but " + elsewhere,
          unit_left_down ? "if the GPU Operator runs the fabric manager, remove the host's package; else " +
                               std::string(k_start_fabric_manager)
                         : std::string(),
          source));
      return;
    }
  }
  const auto with_hidden = [&](const std::string& remedy) {
    return indirect ? hidden_switches_remedy(*hidden, remedy) : remedy;
  };
  if (!manager.installed) {
    out.push_back(make("fabric.manager", Status::fail,
                       switches + (indirect ? "; no fabric manager is installed: the GPUs cannot use NVLink until one "
                                              "registers them"
                                            : " but no fabric manager is installed: the GPUs cannot use NVLink "
                                              "through them"),
                       with_hidden(fabric_install_hint(driver)), source));
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
    remedies.push_back(with_hidden(k_start_fabric_manager));
  }
  Status status = problems.empty() ? Status::pass : Status::fail;
  if (has_fourth_generation_nvswitch(facts) && !manager.nvlsm_installed) {
    problems.push_back("NVLSM (the NVLink subnet manager fourth-generation NVSwitch boards need) was not found");
    remedies.emplace_back("install the nvlsm package from NVIDIA's CUDA repository (the fabric manager starts it)");
    status = std::max(status, Status::warn);
  }
  if (indirect && has_fourth_generation_nvswitch(facts) && !all_fabric_completed(facts) &&
      (fabric.mlx5_core_loaded == false || fabric.ib_umad_loaded == false)) {
    // NVIDIA's driver container starts the fabric manager on an NVLink5 board only once both modules are loaded.
    problems.emplace_back(
        "the kernel modules its NVLSM reaches the NVLink5 switches through (mlx5_core, ib_umad) are not both loaded");
    remedies.push_back(hidden_switches_remedy(*hidden));
    status = std::max(status, Status::warn);
  }
  if (!problems.empty()) {
    out.push_back(make("fabric.manager", status, switches + ": " + util::join(problems, "; "),
                       util::join(remedies, "; "), source));
    return;
  }
  std::string message = switches + ": " + name + (driver.empty() ? "" : " matches the driver " + driver);
  message += manager.running ? ", service active" : " (service state unknown: " + manager.service_state + ")";
  if (manager.nvlsm_installed) message += "; NVLSM " + manager.nvlsm_version;
  out.push_back(make("fabric.manager", Status::pass, message, {}, source));
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
    const bool driver_fatal = printed_fatal.count(key) != 0;
    const std::optional<probe::SxidInfo> info = probe::sxid_info(code);
    const Status status = sxid_status(info, driver_fatal);
    std::string line = "SXid " + std::to_string(code) + " on " + bus + (count > 1 ? " x" + std::to_string(count) : "");
    std::string remedy = "look up SXid " + std::to_string(code) + " in the Fabric Manager user guide";
    if (info) {
      line += ": " + info->name;
      if (!driver_fatal && info->severity >= probe::XidSeverity::error && status != Status::fail)
        line += " (gpuenv's table, from a secondary source, calls it an error; the driver printed Non-fatal)";
      remedy = info->action == "-" ? std::string() : "SXid " + std::to_string(code) + ": " + info->action;
      source = info->source;
    } else if (driver_fatal) {
      // The driver's own word for a code the table lacks: the guide's fatal SXids are recovered only by a restart
      // (its "fatal" section says restart the guest VM, "always fatal" the host: data/sxid.toml's header).
      line += " (Fatal, not in gpuenv's SXid table)";
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

namespace gpuenv::doctor {

report::Status sxid_status(const std::optional<probe::SxidInfo>& info, bool driver_fatal) {
  switch (probe::judge_sxid(info, driver_fatal)) {
    case probe::SxidJudgement::fail:
      return report::Status::fail;
    case probe::SxidJudgement::warn:
      return report::Status::warn;
    case probe::SxidJudgement::pass:
      break;
  }
  return report::Status::pass;
}

}  // namespace gpuenv::doctor
