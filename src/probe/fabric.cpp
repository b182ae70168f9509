#include "probe/fabric.hpp"

#include <algorithm>
#include <cctype>

#include "probe/pci_bus_id.hpp"
#include "probe/pci_devices.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::probe {
namespace {

// Where NVIDIA's packages put the fabric manager daemon (CUDA repository packages and the .run installer).
constexpr const char* k_fabric_manager_binaries[] = {"/usr/bin/nv-fabricmanager", "/usr/sbin/nv-fabricmanager"};
constexpr const char* k_fabric_manager_service = "nvidia-fabricmanager";

// The files NCCL's GPUDirect RDMA check looks for (NVIDIA/nccl src/transport/net_ib/gdr.cc ibGdrSupportInitOnce).
constexpr const char* k_peermem_files[] = {"/sys/module/nvidia_peermem/version",
                                           "/sys/kernel/mm/memory_peers/nv_mem/version",
                                           "/sys/kernel/mm/memory_peers/nv_mem_nc/version"};

// The AWS EFA installer's libfabric and the aws-ofi-nccl plugin NCCL loads (libnccl-net.so), old and new layouts.
constexpr const char* k_efa_libfabric[] = {"/opt/amazon/efa/lib/libfabric.so.1",
                                           "/opt/amazon/efa/lib64/libfabric.so.1"};
constexpr const char* k_efa_nccl_plugin[] = {
    "/opt/amazon/ofi-nccl/lib/libnccl-net.so", "/opt/amazon/ofi-nccl/lib64/libnccl-net.so",
    "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so",
    "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu/libnccl-net.so", "/opt/aws-ofi-nccl/lib/libnccl-net.so"};

void collect_nvswitches(system::System& system, FabricFacts& fabric) {
  const std::vector<PciDevice> devices = read_pci_devices(system);
  fabric.pci_scanned = !devices.empty();
  for (const PciDevice& device : nvidia_pci_inventory(devices).nvswitches) fabric.nvswitches.push_back(device.bus_id);
  ManagementBridges bridges = read_management_bridges(system);
  fabric.nvlink5_bridges = std::move(bridges.bridges);
  fabric.vpd_unreadable = std::move(bridges.unreadable);
}

/// A package's version through `rpm -q` (RPM systems, live only); nullopt when rpm or the package is absent.
std::optional<std::string> rpm_version(system::System& system, const std::string& package,
                                       std::chrono::milliseconds timeout) {
  const system::CommandResult result = system.run({"rpm", "-q", "--queryformat", "%{VERSION}", package}, timeout);
  if (result.not_found || result.exit_code != 0) return std::nullopt;
  const std::string version(util::trim(result.out));
  if (version.empty() || !util::Version::parse(version)) return std::nullopt;
  return version;
}

/// The fabric manager from the package databases and its binary; `rpm`, `nv-fabricmanager --version` and
/// `systemctl` run only when `ask` (live, and NVSwitches that need it: elsewhere fabric.manager is skipped anyway).
void collect_fabric_manager(system::System& system, bool live, bool ask, std::chrono::milliseconds timeout,
                            FabricManagerFacts& manager) {
  std::vector<InstalledPackage> packages;
  if (auto status = system.read_file("/var/lib/dpkg/status")) packages = parse_dpkg_status(*status);
  if (auto package = fabric_manager_package(packages)) {
    manager.installed = true;
    manager.package = package->name;
    manager.version = upstream_version(package->version);
    manager.where = "/var/lib/dpkg/status";
  }
  for (const InstalledPackage& package : packages) {
    if (package.name == "nvlsm") {
      manager.nvlsm_installed = true;
      manager.nvlsm_version = upstream_version(package.version);
    }
  }
  // RPM names: nvidia-fabric-manager below R580, nvidia-fabricmanager from R580 (NVIDIA/gpu-driver-container rhel9).
  for (const char* package : {"nvidia-fabric-manager", "nvidia-fabricmanager"}) {
    if (!ask || manager.installed) break;
    if (auto version = rpm_version(system, package, timeout)) {
      manager.installed = true;
      manager.package = package;
      manager.version = *version;
      manager.where = std::string("rpm -q ") + package;
    }
  }
  if (ask && !manager.nvlsm_installed) {
    if (auto version = rpm_version(system, "nvlsm", timeout)) {
      manager.nvlsm_installed = true;
      manager.nvlsm_version = *version;
    }
  }
  for (const char* binary : k_fabric_manager_binaries) {
    if (!system.exists(binary)) continue;
    if (!manager.installed) manager.where = binary;
    manager.installed = true;
    if (manager.version.empty() && ask) {
      const system::CommandResult result = system.run({binary, "--version"}, timeout);
      manager.version = fabric_manager_version_from_output(result.out + "\n" + result.err);
    }
    break;
  }
  if (ask) find_fabric_manager_process(system, manager);
  if (!ask) {
    manager.service_state = live ? "not asked: no NVSwitch needs the fabric manager"
                                 : "not asked under --root (systemd is not queried in an inspected tree)";
    return;
  }
  const system::CommandResult state = system.run({"systemctl", "is-active", k_fabric_manager_service}, timeout);
  if (state.not_found) {
    manager.service_state = "systemctl is not available";
  } else if (state.timed_out) {
    manager.service_state = "systemctl did not answer";
  } else {
    manager.service_state = std::string(util::trim(state.out));
    manager.running = manager.service_state == "active";
  }
}

void collect_gpudirect(system::System& system, bool live, FabricFacts& fabric) {
  for (const char* file : k_peermem_files) {
    if (system.exists(file)) {
      fabric.peermem_loaded = true;
      fabric.peermem_evidence = file;
      break;
    }
  }
  if (!fabric.peermem_loaded && (live || system.exists("/sys/module"))) fabric.peermem_loaded = false;
  std::vector<std::string> found;
  for (const char* path : k_efa_libfabric) {
    if (system.exists(path)) {
      fabric.efa_libfabric = true;
      found.emplace_back(path);
      break;
    }
  }
  for (const char* path : k_efa_nccl_plugin) {
    if (system.exists(path)) {
      fabric.efa_nccl_plugin = true;
      found.emplace_back(path);
      break;
    }
  }
  fabric.efa_where = util::join(found, ", ");
}

/// The modules an NVLink5 board's fabric manager needs for its switches (NVIDIA/gpu-driver-container
/// _ensure_nvlink5_prerequisites waits for mlx5_core and ib_umad). /sys/module/<name> exists for every loaded module
/// (Documentation/ABI/stable/sysfs-module), so its absence, where /sys/module is readable, means not loaded.
void collect_nvlink5_modules(system::System& system, bool live, FabricFacts& fabric) {
  if (!live && !system.exists("/sys/module")) return;
  fabric.mlx5_core_loaded = system.exists("/sys/module/mlx5_core");
  fabric.ib_umad_loaded = system.exists("/sys/module/ib_umad");
}

void collect_gpu_numa(system::System& system, const GpuInventory& gpus, FabricFacts& fabric) {
  for (const GpuFacts& gpu : gpus.gpus) {
    const auto bus = canonical_pci_bus_id(gpu.pci_bus_id);
    if (!bus) continue;
    GpuNumaNode node{gpu.index, *bus, std::nullopt};
    if (auto text = system.read_file("/sys/bus/pci/devices/" + *bus + "/numa_node", system::FileKind::host_text)) {
      const auto value = util::parse_int(util::trim(*text));
      if (value && *value >= 0 && *value < 4096) node.numa_node = static_cast<int>(*value);
    }
    fabric.gpu_numa.push_back(node);
  }
}

}  // namespace

std::string to_string(GpuFabricInfo::State state) {
  switch (state) {
    case GpuFabricInfo::State::not_supported:
      return "Not Supported";
    case GpuFabricInfo::State::not_started:
      return "Not Started";
    case GpuFabricInfo::State::in_progress:
      return "In Progress";
    case GpuFabricInfo::State::completed:
      return "Completed";
  }
  return "Not Supported";
}

std::string upstream_version(std::string_view package_version) {
  std::string_view text = util::trim(package_version);
  if (const std::size_t epoch = text.find(':'); epoch != std::string_view::npos) text = text.substr(epoch + 1);
  if (const std::size_t revision = text.find('-'); revision != std::string_view::npos) text = text.substr(0, revision);
  return std::string(text);
}

std::optional<InstalledPackage> fabric_manager_package(const std::vector<InstalledPackage>& packages) {
  for (const InstalledPackage& package : packages) {
    if (package.name == "nvidia-fabricmanager") return package;
    if (util::starts_with(package.name, "nvidia-fabricmanager-") && !util::ends_with(package.name, "-dev") &&
        util::parse_int(package.name.substr(std::string_view("nvidia-fabricmanager-").size()))) {
      return package;
    }
  }
  return std::nullopt;
}

std::string fabric_manager_version_from_output(std::string_view output) {
  for (std::string_view line : util::split_lines(output)) {
    const std::size_t marker = line.find("version is");
    if (marker == std::string_view::npos) continue;
    std::string_view rest = util::trim(line.substr(marker + std::string_view("version is").size()));
    if (!rest.empty() && rest.front() == ':') rest = util::trim(rest.substr(1));
    const std::string word(rest.substr(0, rest.find_first_of(" \t")));
    if (util::Version::parse(word)) return word;
  }
  return {};
}

bool is_hgx_nvlink5_gpu(std::string_view name) {
  if (util::contains(name, "GB")) return false;
  return util::contains(name, "B100") || util::contains(name, "B200") || util::contains(name, "B300");
}

bool in_nvlink_fabric(const GpuFacts& gpu) {
  return gpu.fabric && gpu.fabric->state != GpuFabricInfo::State::not_supported;
}

bool in_multi_node_nvlink_domain(const GpuFacts& gpu) {
  if (!gpu.fabric) return false;
  const std::string& uuid = gpu.fabric->cluster_uuid;
  bool hex = !uuid.empty();
  bool nonzero = false;
  for (const char c : uuid) {
    if (c == '-') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) hex = false;
    if (c != '0') nonzero = true;
  }
  return hex && nonzero;
}

void collect_fabric(system::System& system, bool live, std::chrono::milliseconds timeout, HostFacts& facts) {
  collect_nvswitches(system, facts.fabric);
  const bool switched = !facts.fabric.nvswitches.empty() || !facts.fabric.nvlink5_bridges.empty();
  // GPUs in an NVLink fabric, or HGX NVLink5 parts, with no switch in sight (mlx5_core not loaded, a container, a VM
  // whose NVSwitches the hypervisor holds): fabric.manager still judges the fabric manager there, so ask for it.
  const auto& gpus = facts.gpus.gpus;
  const bool fabric_gpus = std::any_of(gpus.begin(), gpus.end(), [](const GpuFacts& gpu) {
    return in_nvlink_fabric(gpu) || is_hgx_nvlink5_gpu(gpu.name);
  });
  collect_fabric_manager(system, live, live && (switched || fabric_gpus), timeout, facts.fabric.manager);
  collect_nvlink5_modules(system, live, facts.fabric);
  collect_gpudirect(system, live, facts.fabric);
  collect_gpu_numa(system, facts.gpus, facts.fabric);
}

void find_fabric_manager_process(system::System& system, FabricManagerFacts& manager) {
  for (const std::string& pid : system.list_directory("/proc")) {
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string path = "/proc/" + pid + "/comm";
    auto comm = system.read_file(path, system::FileKind::host_text);
    if (comm && util::trim(*comm) == "nv-fabricmanage") {
      manager.process_seen = true;
      manager.process_evidence = path;
      return;
    }
  }
}

}  // namespace gpuenv::probe
