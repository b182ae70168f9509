#include "probe/collect.hpp"

#include <algorithm>

#include "probe/cloud.hpp"
#include "probe/cuda_driver.hpp"
#include "probe/cuda_toolkit.hpp"
#include "probe/fabric.hpp"
#include "probe/frameworks.hpp"
#include "probe/host_info.hpp"
#include "probe/kernel_log_window.hpp"
#include "probe/link_counters.hpp"
#include "probe/nvidia_smi_exit.hpp"
#include "probe/nvidia_smi_xml.hpp"
#include "probe/nvml.hpp"
#include "probe/packages.hpp"
#include "probe/proc_driver_version.hpp"
#include "probe/rdma.hpp"
#include "probe/sxid.hpp"
#include "probe/uptime.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::probe {
namespace {

/// What dmesg's text cannot prove, for the kernel-log source in findings: read without /dev/kmsg it comes from
/// syslog(2), which prints each line of a message with the message's own prefix (docs/security.md).
constexpr const char* k_dmesg_caveat = "text, not the kernel's records: /dev/kmsg unreadable";
/// What a log file cannot prove: `logger -t kernel` writes lines that read as the kernel's.
constexpr const char* k_log_file_caveat = "kernel-tagged lines, which a local user can forge";

using system::System;

/// Directories where distributions and NVIDIA's installers put the driver's user-space libraries.
constexpr const char* k_library_dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                                          "/usr/lib", "/usr/local/nvidia/lib64"};

std::optional<std::string> read_if_exists(System& system, const std::string& path, HostFacts& facts) {
  if (!system.exists(path)) return std::nullopt;
  auto text = system.read_file(path);
  if (!text) {
    facts.unreadable.push_back(path);
    return std::nullopt;
  }
  return std::move(*text);
}

/// A /sys/class/dmi/id field, trimmed; empty when absent or unreadable (product_serial is root-only: no finding).
std::string dmi_field(System& system, const std::string& name) {
  const std::string path = "/sys/class/dmi/id/" + name;
  if (!system.exists(path)) return {};
  auto text = system.read_file(path);
  return text ? std::string(util::trim(*text)) : std::string();
}

/// The instance type from the metadata service, when asked for, live, and DMI named the cloud but not the type.
void ask_cloud_metadata(System& system, const CollectOptions& options, HostFacts& facts) {
  HostInfo& host = facts.host;
  if (!options.cloud_metadata || !options.live || !host.instance_type.empty()) return;
  if (host.cloud.empty()) {
    host.cloud_source += "; --cloud-metadata: no cloud to ask (DMI names none)";
    return;
  }
  const auto endpoint = options.metadata_endpoint ? options.metadata_endpoint : default_metadata_endpoint(host.cloud);
  if (!endpoint) {
    host.cloud_source += "; --cloud-metadata: no metadata service known for " + host.cloud;
    return;
  }
  auto type = query_instance_type(system, host.cloud, *endpoint, options.metadata_timeout);
  if (!type) {
    host.cloud_source += "; the metadata service did not answer: " + type.error().message;
    return;
  }
  host.instance_type = *type;
  host.cloud_source += "; instance type from the metadata service";
}

void collect_cloud(System& system, const CollectOptions& options, HostFacts& facts) {
  const DmiStrings dmi = read_dmi_strings(system);
  if (dmi.sys_vendor.empty() && dmi.product_name.empty() && dmi.chassis_asset_tag.empty()) {
    facts.host.cloud_source = "/sys/class/dmi/id is not readable";
    return;
  }
  const CloudIdentity identity = classify_cloud(dmi);
  facts.host.cloud = identity.cloud;
  facts.host.instance_type = identity.instance_type;
  facts.host.cloud_source = identity.cloud.empty() ? "no cloud recognised in DMI (sys_vendor=" + dmi.sys_vendor +
                                                         ", product_name=" + dmi.product_name + ")"
                                                   : "DMI " + identity.evidence;
  ask_cloud_metadata(system, options, facts);
}

void collect_host(System& system, const CollectOptions& options, HostFacts& facts) {
  HostInfo& host = facts.host;
  for (const char* path : {"/etc/os-release", "/usr/lib/os-release"}) {
    if (auto text = read_if_exists(system, path, facts)) {
      const OsRelease os = parse_os_release(*text);
      host.os_id = os.id;
      host.os_version_id = os.version_id;
      host.os_pretty_name = os.pretty_name;
      break;
    }
  }
  if (auto text = read_if_exists(system, "/proc/sys/kernel/osrelease", facts))
    host.kernel_release = std::string(util::trim(*text));
  if (auto text = read_if_exists(system, "/proc/sys/kernel/arch", facts)) {
    host.architecture = std::string(util::trim(*text));
  } else if (options.live) {
#if defined(__x86_64__)
    host.architecture = "x86_64";
#elif defined(__aarch64__)
    host.architecture = "aarch64";
#endif
  }
  if (auto text = read_if_exists(system, "/proc/cpuinfo", facts)) {
    if (const int count = count_cpuinfo_processors(*text); count > 0) host.cpu_count = static_cast<unsigned>(count);
  }
  if (auto text = read_if_exists(system, "/proc/meminfo", facts)) {
    if (auto kib = parse_meminfo_total_kib(*text)) host.memory_total_kib = static_cast<std::uint64_t>(*kib);
  }
  // Where the CUDA stack (/usr/local) and container images (/var/lib/docker, containerd) live.
  for (const char* path : {"/", "/usr/local", "/var/lib/docker", "/var/lib/containerd"}) {
    if (!system.exists(path)) continue;
    if (auto bytes = system.available_bytes(path)) {
      const bool same = std::any_of(host.free_bytes.begin(), host.free_bytes.end(),
                                    [&](const auto& e) { return e.second == *bytes; });
      if (!same) host.free_bytes.emplace_back(path, *bytes);
    }
  }
}

void collect_kernel_driver(System& system, HostFacts& facts) {
  KernelDriver& k = facts.kernel;
  if (auto text = read_if_exists(system, "/proc/modules", facts)) {
    const LoadedModules modules = parse_proc_modules(*text);
    k.module_loaded = modules.nvidia();
    k.nouveau_loaded = modules.nouveau();
    k.modules_source = "/proc/modules";
  } else {
    k.modules_source = "/proc/modules is not readable";
  }
  if (auto text = read_if_exists(system, "/proc/driver/nvidia/version", facts)) {
    if (auto parsed = parse_proc_driver_version(*text)) {
      k.module_loaded = true;
      k.module_version = parsed->module.version;
      k.open_module = parsed->module.open_module;
    }
  }
  const std::string efivar = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";
  if (auto bytes = read_if_exists(system, efivar, facts)) {
    if (auto enabled = parse_secure_boot_efivar(*bytes)) k.secure_boot = *enabled;
  }
  for (const std::string& name : system.list_directory("/dev")) {
    if (util::starts_with(name, "nvidia")) k.device_nodes.push_back(name);
  }
}

void collect_driver_libraries(System& system, HostFacts& facts) {
  for (const char* dir : k_library_dirs) {
    for (const std::string& file : system.list_directory(dir)) {
      for (const char* stem : {"libnvidia-ml", "libcuda"}) {
        const std::string version = version_from_library_name(file, stem);
        if (!version.empty()) facts.driver_libraries.push_back({stem, std::string(dir) + "/" + file, version});
      }
    }
  }
}

GpuInventory run_nvidia_smi(System& system, const CollectOptions& options, const std::string& nvml_reason) {
  GpuInventory inventory;
  inventory.availability.source = "nvidia-smi -q -x";
  const system::CommandResult result = system.run({"nvidia-smi", "-q", "-x"}, options.timeout);
  if (result.not_found) {
    inventory.availability.reason = nvml_reason + "; nvidia-smi is not installed";
  } else if (result.timed_out) {
    inventory.availability.reason = nvml_reason + "; nvidia-smi did not answer within " +
                                    std::to_string(options.timeout.count()) + " ms (a hung GPU or driver)";
  } else if (result.truncated) {
    inventory.availability.reason = nvml_reason + "; nvidia-smi printed more than " +
                                    std::to_string(system::k_command_output_cap >> 20) +
                                    " MiB (captured output is cut there), which is no report";
  } else if (result.signal != 0) {
    inventory.availability.reason = nvml_reason + "; nvidia-smi was killed by signal " + std::to_string(result.signal) +
                                    (result.signal == 9 ? " (SIGKILL: the OOM killer or a watchdog)" : "");
  } else if (result.exit_code != 0) {
    std::string meaning = "exit code " + std::to_string(result.exit_code);
    if (auto known = nvidia_smi_exit_code(result.exit_code)) meaning += " (" + std::string(known->meaning) + ")";
    const NvidiaSmiError error = classify_nvidia_smi_error(result.out + result.err);
    std::string detail = error.line;
    if (error.nvml_library_version) detail += " (NVML library version " + *error.nvml_library_version + ")";
    if (detail.size() > 200) detail.resize(200);
    inventory.availability.reason =
        nvml_reason + "; nvidia-smi failed with " + meaning + (detail.empty() ? "" : ": " + detail);
  } else {
    return inventory_from_nvidia_smi_xml(result.out, "nvidia-smi -q -x");
  }
  return inventory;
}

/// Calls `read(limit)` (NVML, libcuda) with the per-call timeout cut to the run's deadline; when the deadline has
/// passed the call is not made, and a call that gave up at the deadline is reported to it as `what`.
template <typename Facts, typename Read>
Facts call_within_deadline(const CollectOptions& options, const std::string& what, Read read) {
  if (options.deadline == nullptr) return read(options.timeout);
  const std::chrono::milliseconds limit = options.deadline->limit(options.timeout);
  if (limit <= std::chrono::milliseconds(0)) {
    options.deadline->note_cut_short(what);
    Facts skipped;
    skipped.availability.source = what;
    skipped.availability.reason = what + " was not queried: the run's deadline (--timeout) had passed";
    return skipped;
  }
  Facts facts = read(limit);
  if (!facts.availability.available && limit < options.timeout &&
      options.deadline->time_left() <= std::chrono::milliseconds(0)) {
    options.deadline->note_cut_short(what);
  }
  return facts;
}

/// The link counters now; nullopt under --root or when not asked for. The GPUs' counters come from NVML within the
/// run's deadline unless `nvml_unasked` says why not (it did not answer the inventory: a missing or hung NVML is not
/// asked again); the RDMA ports' are sysfs files, always read.
std::optional<LinkCounterSnapshot> read_counters(System& system, const CollectOptions& options,
                                                 const std::optional<std::string>& nvml_unasked) {
  if (!options.live || !options.link_counters || options.nvidia_smi_xml) return std::nullopt;
  LinkCounterOptions counters{nvml_unasked ? std::string() : options.nvml_library, options.timeout};
  std::optional<std::string> reason = nvml_unasked;
  if (!nvml_unasked && options.deadline != nullptr) {
    counters.timeout = options.deadline->limit(options.timeout);
    if (counters.timeout <= std::chrono::milliseconds(0)) {
      options.deadline->note_cut_short("NVML link counters");
      counters.nvml_library.clear();
      reason = "the run's deadline (--timeout) had passed";
    }
  }
  LinkCounterSnapshot snapshot = read_link_counters(system, counters);
  if (reason) snapshot.nvml_reason = *reason;
  return snapshot;
}

void collect_gpus(System& system, const CollectOptions& options, HostFacts& facts) {
  if (options.nvidia_smi_xml) {
    facts.gpus = inventory_from_nvidia_smi_xml(*options.nvidia_smi_xml, options.nvidia_smi_xml_origin);
    return;
  }
  if (!options.live) {
    facts.gpus.availability.reason =
        "GPUs are not queried under --root (pass --nvidia-smi-xml FILE to judge a captured report)";
    return;
  }
  facts.gpus = call_within_deadline<GpuInventory>(
      options, "NVML", [&](std::chrono::milliseconds limit) { return read_nvml(system, options.nvml_library, limit); });
  // The run's link counters start once NVML has answered: an absent or hung NVML is not asked again.
  facts.counters_start = read_counters(
      system, options,
      facts.gpus.availability.available
          ? std::nullopt
          : std::optional<std::string>("NVML did not answer the inventory (" + facts.gpus.availability.reason + ")"));
  // nvidia-smi is a fallback only: it is slow, and NVML already answered if it could.
  if (!facts.gpus.availability.available && (facts.kernel.module_loaded || !facts.driver_libraries.empty())) {
    facts.gpus = run_nvidia_smi(system, options, facts.gpus.availability.reason);
  }
}

/// Narrows the log to the --since window: /dev/kmsg and dmesg hold this boot only, cut by their seconds since boot
/// for --since DURATION; files are cut at their last boot banner, or by their timestamps.
void apply_kernel_log_window(System& system, const CollectOptions& options, KernelLog& log) {
  if (!log.readable()) return;
  if (log.records || log.source == "dmesg") {
    if (!options.kernel_log_since) return;
    const auto uptime = uptime_seconds(system);
    const std::string span = "last " + std::to_string(options.kernel_log_since->count()) + " s";
    if (!uptime) {
      log.notes.insert(log.notes.begin(),
                       "since boot: /proc/uptime is unreadable, so the " + span + " cannot be cut out");
      return;
    }
    const double since = *uptime - static_cast<double>(options.kernel_log_since->count());
    if (log.records) {
      std::erase_if(*log.records, [since](const KmsgRecord& record) {
        return static_cast<double>(record.microseconds) < since * 1e6;
      });
    } else {
      log.text = dmesg_since(*log.text, since);
    }
    log.notes.insert(log.notes.begin(), span);
    return;
  }
  LogWindow window =
      options.kernel_log_since
          ? log_file_since(*log.text, options.now_unix - options.kernel_log_since->count(), options.now_unix)
          : log_file_since_boot(*log.text);
  log.text = std::move(window.text);
  log.notes.insert(log.notes.begin(), window.how);
}

void collect_kernel_log(System& system, const CollectOptions& options, HostFacts& facts) {
  KernelLog log = read_kernel_log(system, options.live);
  apply_kernel_log_window(system, options, log);
  facts.kernel_log_source = log.described();
  if (log.readable()) facts.kernel_events = kernel_log_events(log).events;
  if (log.records) {
    facts.sxid_events = sxid_events_from_kmsg(*log.records);
  } else if (log.text) {
    facts.sxid_events = parse_sxid_events(*log.text);
  }
}

std::string first_header_version(System& system, const std::vector<std::string>& paths, std::string& where,
                                 util::Expected<util::Version> (*parse)(std::string_view), HostFacts& facts) {
  for (const std::string& path : paths) {
    if (auto text = read_if_exists(system, path, facts)) {
      if (auto version = parse(*text)) {
        where = path;
        return version->str();
      }
    }
  }
  return {};
}

void collect_toolkits(System& system, const CollectOptions& options, HostFacts& facts) {
  std::vector<std::string> path_dirs;
  std::vector<std::string> library_dirs;
  if (options.live) {
    // Keep the variables alive while their pieces (string_views) are copied out.
    const std::string path = system.environment("PATH").value_or("");
    const std::string library_path = system.environment("LD_LIBRARY_PATH").value_or("");
    for (auto dir : util::split(path, ':')) path_dirs.emplace_back(dir);
    for (auto dir : util::split(library_path, ':')) library_dirs.emplace_back(dir);
  }
  std::vector<std::string> roots;
  for (const std::string& name : system.list_directory("/usr/local")) {
    if (util::starts_with(name, "cuda-")) roots.push_back("/usr/local/" + name);
  }
  if (roots.empty() && system.exists("/usr/local/cuda/bin")) roots.push_back("/usr/local/cuda");
  for (const std::string& root : roots) {
    CudaToolkit toolkit;
    toolkit.root = root;
    if (auto json = read_if_exists(system, root + "/version.json", facts)) {
      if (auto parsed = parse_cuda_version_json(*json)) toolkit.version = parsed->version.str();
    }
    if (toolkit.version.empty()) {
      if (auto txt = read_if_exists(system, root + "/version.txt", facts)) {
        if (auto parsed = parse_cuda_version_txt(*txt)) toolkit.version = parsed->str();
      }
    }
    if (toolkit.version.empty())
      toolkit.version = root.substr(root.rfind("cuda-") == std::string::npos ? root.size() : root.rfind("cuda-") + 5);
    if (toolkit.version.empty()) continue;
    toolkit.has_nvcc = system.exists(root + "/bin/nvcc");
    // /usr/local/cuda is the conventional symlink to the default toolkit.
    const auto on = [&](const std::vector<std::string>& dirs, const std::string& sub) {
      return std::any_of(dirs.begin(), dirs.end(), [&](const std::string& d) {
        return d == root + sub || d == root + sub + "/" ||
               (roots.size() == 1 && (d == "/usr/local/cuda" + sub || d == "/usr/local/cuda" + sub + "/"));
      });
    };
    toolkit.on_path = on(path_dirs, "/bin");
    toolkit.on_library_path = on(library_dirs, "/lib64");
    for (const std::string& file : system.list_directory(root + "/lib64")) {
      const std::string version = version_from_library_name(file, "libcublas");
      if (!version.empty()) toolkit.cublas_version = version;
    }
    facts.toolkits.push_back(std::move(toolkit));
  }
  std::sort(facts.toolkits.begin(), facts.toolkits.end(), [](const CudaToolkit& a, const CudaToolkit& b) {
    return util::Version::parse(a.version).value_or(util::Version()) <
           util::Version::parse(b.version).value_or(util::Version());
  });
}

void collect_libraries(System& system, const CollectOptions& options, HostFacts& facts) {
  std::vector<std::string> cudnn_headers = {
      "/usr/include/cudnn_version.h", "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h",
      "/usr/include/x86_64-linux-gnu/cudnn_version_v8.h", "/usr/include/aarch64-linux-gnu/cudnn_version_v9.h"};
  std::vector<std::string> nccl_headers = {"/usr/include/nccl.h"};
  for (const CudaToolkit& toolkit : facts.toolkits) {
    cudnn_headers.push_back(toolkit.root + "/include/cudnn_version.h");
    nccl_headers.push_back(toolkit.root + "/include/nccl.h");
  }
  Library cudnn;
  cudnn.version = first_header_version(system, cudnn_headers, cudnn.header, parse_cudnn_header, facts);
  if (options.live) cudnn.runtime_version = read_cudnn_runtime_version(system);
  if (auto status = read_if_exists(system, "/var/lib/dpkg/status", facts)) {
    for (const InstalledPackage& package : parse_dpkg_status(*status)) {
      if (!util::starts_with(package.name, "libcudnn") || util::contains(package.name, "-dev") ||
          util::contains(package.name, "samples"))
        continue;
      const std::string cuda = cudnn_package_cuda(package);
      if (!cuda.empty()) cudnn.built_for_cuda = cuda;
      if (cudnn.version.empty()) cudnn.version = std::string(util::split(package.version, '-').front());
    }
  }
  if (!cudnn.version.empty() || !cudnn.runtime_version.empty()) facts.cudnn = cudnn;
  Library nccl;
  nccl.version = first_header_version(system, nccl_headers, nccl.header, parse_nccl_header, facts);
  if (!nccl.version.empty()) facts.nccl = nccl;
}

bool file_mentions(System& system, const std::string& path, std::string_view needle) {
  if (!system.exists(path)) return false;
  auto text = system.read_file(path);
  return text && util::contains(*text, needle);
}

void collect_containers(System& system, const CollectOptions& options, HostFacts& facts) {
  ContainerRuntime& c = facts.containers;
  std::vector<std::string> bins = {"/usr/bin", "/usr/local/bin", "/usr/sbin"};
  if (options.live) {
    const std::string path = system.environment("PATH").value_or("");
    for (auto dir : util::split(path, ':')) bins.emplace_back(dir);
  }
  const auto find = [&](const std::string& program) -> std::optional<std::string> {
    for (const std::string& dir : bins) {
      if (!dir.empty() && system.exists(dir + "/" + program)) return dir + "/" + program;
    }
    return std::nullopt;
  };
  c.nvidia_ctk = find("nvidia-ctk");
  c.nvidia_container_runtime =
      find("nvidia-container-runtime").has_value() || system.exists("/etc/nvidia-container-runtime/config.toml");
  c.docker_installed = find("dockerd").has_value() || find("docker").has_value();
  c.docker_nvidia_runtime = file_mentions(system, "/etc/docker/daemon.json", "nvidia");
  c.containerd_installed = find("containerd").has_value();
  c.containerd_nvidia_runtime = file_mentions(system, "/etc/containerd/config.toml", "nvidia");
  for (const std::string& name : system.list_directory("/etc/containerd/conf.d")) {
    c.containerd_nvidia_runtime =
        c.containerd_nvidia_runtime || file_mentions(system, "/etc/containerd/conf.d/" + name, "nvidia");
  }
}

/// The report's <fabric> in NVML's shape; "N/A" (before Hopper) is the state Not Supported.
GpuFabricInfo fabric_from_nvidia_smi(const NvidiaSmiFabric& smi) {
  GpuFabricInfo info;
  info.source = "nvidia-smi -q -x";
  const std::string state = smi.state.value_or("");
  if (state == "Completed") info.state = GpuFabricInfo::State::completed;
  if (state == "In Progress") info.state = GpuFabricInfo::State::in_progress;
  if (state == "Not Started") info.state = GpuFabricInfo::State::not_started;
  info.status = smi.status.value_or("");
  info.status_ok = info.status == "Success";
  if (smi.clique_id && *smi.clique_id >= 0) info.clique_id = static_cast<unsigned>(*smi.clique_id);
  info.cluster_uuid = smi.cluster_uuid.value_or("");
  info.health_summary = smi.health_summary.value_or("");
  return info;
}

std::optional<std::uint64_t> to_unsigned(const std::optional<long long>& value) {
  if (!value || *value < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*value);
}

}  // namespace

DmiStrings read_dmi_strings(System& system) {
  DmiStrings dmi;
  dmi.sys_vendor = dmi_field(system, "sys_vendor");
  dmi.product_name = dmi_field(system, "product_name");
  dmi.product_version = dmi_field(system, "product_version");
  dmi.chassis_asset_tag = dmi_field(system, "chassis_asset_tag");
  dmi.board_asset_tag = dmi_field(system, "board_asset_tag");
  dmi.product_serial = dmi_field(system, "product_serial");
  dmi.bios_vendor = dmi_field(system, "bios_vendor");
  dmi.bios_version = dmi_field(system, "bios_version");
  return dmi;
}

std::string version_from_library_name(std::string_view file_name, std::string_view stem) {
  const std::string prefix = std::string(stem) + ".so.";
  if (!util::starts_with(file_name, prefix)) return {};
  const std::string_view rest = file_name.substr(prefix.size());
  const auto version = util::Version::parse(rest);
  // "libcuda.so.1" is the soname link, not a version.
  if (!version || version->size() < 2) return {};
  return std::string(rest);
}

GpuInventory inventory_from_nvidia_smi_xml(std::string_view xml, const std::string& origin) {
  GpuInventory inventory;
  inventory.availability.source = origin;
  auto report = parse_nvidia_smi_xml(xml);
  if (!report) {
    inventory.availability.reason = origin + ": " + report.error().message;
    return inventory;
  }
  inventory.availability.available = true;
  inventory.driver_version = report->driver_version.value_or("");
  inventory.cuda_driver_version = report->cuda_version.value_or("");
  if (report->attached_gpus) inventory.attached_gpus = static_cast<unsigned>(*report->attached_gpus);
  for (const NvidiaSmiGpu& smi : report->gpus) {
    GpuFacts gpu;
    gpu.index = static_cast<unsigned>(smi.index);
    gpu.name = smi.name;
    gpu.uuid = smi.uuid;
    gpu.pci_bus_id = smi.pci_bus_id;
    gpu.memory_total_mib = to_unsigned(smi.memory_total_mib);
    gpu.memory_used_mib = to_unsigned(smi.memory_used_mib);
    gpu.compute_capability = smi.compute_capability.value_or("");
    gpu.persistence_mode = smi.persistence_mode;
    gpu.mig_enabled = smi.mig_mode_current;
    gpu.ecc_enabled = smi.ecc_mode_current;
    gpu.ecc_uncorrected_volatile = to_unsigned(smi.ecc_errors.volatile_counts.uncorrectable);
    gpu.ecc_uncorrected_aggregate = to_unsigned(smi.ecc_errors.aggregate_counts.uncorrectable);
    gpu.ecc_corrected_volatile = to_unsigned(smi.ecc_errors.volatile_counts.correctable);
    if (auto n = to_unsigned(smi.retired_pages.single_bit)) gpu.retired_pages_single_bit = static_cast<unsigned>(*n);
    if (auto n = to_unsigned(smi.retired_pages.double_bit)) gpu.retired_pages_double_bit = static_cast<unsigned>(*n);
    gpu.retired_pages_pending = smi.retired_pages.pending;
    if (smi.remapped_rows.reported) {
      if (auto n = to_unsigned(smi.remapped_rows.correctable))
        gpu.remapped_rows_correctable = static_cast<unsigned>(*n);
      if (auto n = to_unsigned(smi.remapped_rows.uncorrectable))
        gpu.remapped_rows_uncorrectable = static_cast<unsigned>(*n);
      gpu.remapped_rows_pending = smi.remapped_rows.pending;
      gpu.remapped_rows_failure = smi.remapped_rows.failure;
    }
    if (smi.temperature_c) gpu.temperature_c = *smi.temperature_c;
    if (smi.temperature_slowdown_c) gpu.temperature_slowdown_c = *smi.temperature_slowdown_c;
    gpu.power_draw_w = smi.power_draw_w;
    gpu.power_limit_w = smi.power_limit_w;
    if (smi.clocks_event_reasons) gpu.throttle_reasons = *smi.clocks_event_reasons;
    if (smi.pcie.gen_current) gpu.pcie_gen_current = static_cast<unsigned>(*smi.pcie.gen_current);
    if (smi.pcie.gen_max) gpu.pcie_gen_max = static_cast<unsigned>(*smi.pcie.gen_max);
    if (smi.pcie.width_current) gpu.pcie_width_current = static_cast<unsigned>(*smi.pcie.width_current);
    if (smi.pcie.width_max) gpu.pcie_width_max = static_cast<unsigned>(*smi.pcie.width_max);
    if (smi.compute_process_count) gpu.process_count = static_cast<unsigned>(*smi.compute_process_count);
    if (smi.utilization_gpu_percent) gpu.utilization_percent = *smi.utilization_gpu_percent;
    if (smi.fabric.reported) gpu.fabric = fabric_from_nvidia_smi(smi.fabric);
    inventory.gpus.push_back(std::move(gpu));
  }
  return inventory;
}

KernelLog read_kernel_log(System& system, bool live) {
  KernelLog log;
  if (live) {
    if (auto kmsg = system.read_kernel_messages(); kmsg && !kmsg->empty()) {
      log.records = parse_kmsg(*kmsg).records;
      log.source = "/dev/kmsg";
      return log;
    }
    const system::CommandResult dmesg = system.run({"dmesg"}, std::chrono::milliseconds(3000));
    if (dmesg.exit_code == 0 && !dmesg.out.empty()) {
      log.text = dmesg.out;
      log.source = "dmesg";
      log.notes.emplace_back(k_dmesg_caveat);
      return log;
    }
  }
  std::vector<std::string> unreadable;
  for (const char* path : {"/var/log/kern.log", "/var/log/syslog", "/var/log/messages"}) {
    if (!system.exists(path)) continue;
    // The recent window: only the log's tail is read (system::FileKind::kernel_log), however large the file.
    auto contents = system.read_file(path, system::FileKind::kernel_log);
    if (!contents) {
      unreadable.push_back(path);
      continue;
    }
    log.text = std::move(*contents);
    log.source = path;
    log.notes.emplace_back(k_log_file_caveat);
    return log;
  }
  log.source = unreadable.empty() ? "unreadable: /dev/kmsg and dmesg are not allowed and no kernel log file exists"
                                  : "unreadable: " + util::join(unreadable, ", ") + " (needs root or the adm group)";
  return log;
}

void collect_link_counters_end(System& system, const CollectOptions& options, HostFacts& facts) {
  if (!facts.counters_start) return;
  facts.counters_end = read_counters(
      system, options,
      facts.counters_start->nvml ? std::nullopt : std::optional<std::string>(facts.counters_start->nvml_reason));
}

std::string KernelLog::described() const {
  return notes.empty() ? source : source + " (" + util::join(notes, "; ") + ")";
}

KernelLogScan kernel_log_events(const KernelLog& log) {
  if (log.records) return kernel_events_from_kmsg(*log.records);
  if (log.text) return parse_xid_events(*log.text);
  return {};
}

HostFacts collect_host_facts(System& system, const CollectOptions& options) {
  HostFacts facts;
  facts.live = options.live;
  collect_host(system, options, facts);
  collect_cloud(system, options, facts);
  collect_kernel_driver(system, facts);
  collect_driver_libraries(system, facts);
  collect_gpus(system, options, facts);
  collect_kernel_log(system, options, facts);
  if (options.live && options.libcuda) {
    facts.cuda_driver = call_within_deadline<CudaDriver>(
        options, "libcuda", [&](std::chrono::milliseconds limit) { return read_cuda_driver(system, limit); });
  } else if (options.live) {
    facts.cuda_driver.not_checked = "libcuda is not loaded in the prolog tier (NVML only)";
  }
  collect_toolkits(system, options, facts);
  collect_libraries(system, options, facts);
  collect_containers(system, options, facts);
  facts.rdma = read_rdma_devices(system, options.live);
  collect_fabric(system, options.live, options.timeout, facts);
  if (options.frameworks) {
    if (options.live) {
      facts.frameworks = probe_frameworks(system, options.python, options.framework_timeout, options.framework_matmul);
    } else {
      facts.frameworks = FrameworkProbe{};
      facts.frameworks->availability.reason =
          "Python is not run under --root (nothing is executed from an inspected tree)";
    }
  }
  return facts;
}

}  // namespace gpuenv::probe
