#include <algorithm>
#include <map>
#include <set>

#include "doctor/rules_detail.hpp"

namespace gpuenv::doctor::rules_detail {

// ---- Host ---------------------------------------------------------------------------------------

void check_host(const HostFacts& facts, const Thresholds& thresholds, Findings& out) {
  const probe::HostInfo& host = facts.host;
  if (host.os_id.empty()) {
    out.push_back(make("host.os", Status::skip, "os-release is not readable"));
  } else {
    std::string message = host.os_pretty_name.empty() ? host.os_id + " " + host.os_version_id : host.os_pretty_name;
    if (!host.kernel_release.empty()) message += ", kernel " + host.kernel_release;
    if (!host.architecture.empty()) message += ", " + host.architecture;
    out.push_back(make("host.os", Status::pass, message));
  }
  const unsigned gpus = has_gpus(facts) ? static_cast<unsigned>(facts.gpus.gpus.size()) : 0;
  if (gpus == 0 || !host.cpu_count) {
    out.push_back(
        make("host.vcpus_per_gpu", Status::skip, gpus == 0 ? "no GPUs to size against" : "CPU count unknown"));
  } else {
    const Threshold& t = thresholds.at("host.vcpus_per_gpu");
    const double ratio = static_cast<double>(*host.cpu_count) / gpus;
    const std::string message = std::to_string(*host.cpu_count) + " vCPUs for " + std::to_string(gpus) +
                                (gpus == 1 ? " GPU (" : " GPUs (") + number(ratio) + " per GPU)";
    if (ratio < *t.warn_below) {
      out.push_back(make("host.vcpus_per_gpu", Status::warn, message + ", below " + number(*t.warn_below) + " per GPU",
                         "use an instance type with more vCPUs per GPU, or expect data loading to bottleneck the GPUs",
                         t.source));
    } else {
      out.push_back(make("host.vcpus_per_gpu", Status::pass, message, {}, t.source));
    }
  }
  std::uint64_t gpu_mib = 0;
  for (const GpuFacts& gpu : facts.gpus.gpus) gpu_mib += gpu.memory_total_mib.value_or(0);
  if (gpu_mib == 0 || !host.memory_total_kib) {
    out.push_back(
        make("host.memory", Status::skip, gpu_mib == 0 ? "no GPU memory to size against" : "host memory unknown"));
  } else {
    const Threshold& t = thresholds.at("host.memory_per_gpu_memory");
    const double ram_gib = static_cast<double>(*host.memory_total_kib) / (1024.0 * 1024.0);
    const double gpu_gib = static_cast<double>(gpu_mib) / 1024.0;
    const std::string message = number(ram_gib, 0) + " GiB RAM for " + number(gpu_gib, 0) + " GiB of GPU memory (" +
                                number(ram_gib / gpu_gib, 2) + "x)";
    if (ram_gib < *t.warn_below * gpu_gib) {
      out.push_back(make("host.memory", Status::warn, message + ", below " + number(*t.warn_below) + "x",
                         "use an instance type with at least " + number(*t.warn_below * gpu_gib, 0) + " GiB of RAM",
                         t.source));
    } else {
      out.push_back(make("host.memory", Status::pass, message, {}, t.source));
    }
  }
  if (host.free_bytes.empty()) {
    out.push_back(make("host.disk_free", Status::skip, "free space unknown"));
  } else {
    const Threshold& t = thresholds.at("host.disk_free_gib");
    std::vector<std::string> low;
    std::vector<std::string> all;
    for (const auto& [path, bytes] : host.free_bytes) {
      const double gib = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
      all.push_back(path + " " + number(gib, 0) + " GiB free");
      if (gib < *t.warn_below) low.push_back(path + " has " + number(gib) + " GiB free");
    }
    if (!low.empty()) {
      out.push_back(make("host.disk_free", Status::warn,
                         util::join(low, "; ") + " (below " + number(*t.warn_below, 0) + " GiB)",
                         "free space or grow the volume before installing CUDA or pulling images", t.source));
    } else {
      out.push_back(make("host.disk_free", Status::pass, util::join(all, ", "), {}, t.source));
    }
  }
}

// ---- Kernel driver ------------------------------------------------------------------------------

namespace {

const char* k_nouveau_remedy =
    "blacklist nouveau: write \"blacklist nouveau\" and \"options nouveau modeset=0\" to "
    "/etc/modprobe.d/blacklist-nouveau.conf, run update-initramfs -u (dracut -f on RHEL), reboot";

}  // namespace

void check_kernel_driver(const HostFacts& facts, Findings& out) {
  const probe::KernelDriver& k = facts.kernel;
  if (k.module_loaded) {
    std::string message = "NVIDIA kernel module " +
                          (k.module_version.empty() ? std::string("(version unknown)") : k.module_version) + " loaded";
    if (k.open_module) message += *k.open_module ? " (open kernel module)" : " (proprietary kernel module)";
    out.push_back(make("driver.kernel_module", Status::pass, message));
  } else {
    std::string remedy =
        "install the NVIDIA driver for this kernel and run `modprobe nvidia` (check `dmesg | grep -i nvrm`)";
    if (k.nouveau_loaded) remedy = k_nouveau_remedy + std::string(", then install the NVIDIA driver");
    if (k.secure_boot.value_or(false))
      remedy =
          "Secure Boot is on: enroll the driver's signing key (mokutil --import) or use signed driver packages, or "
          "disable Secure Boot; then `modprobe nvidia`";
    out.push_back(make("driver.kernel_module", Status::fail,
                       "no NVIDIA kernel module is loaded" +
                           (k.modules_source.empty() ? std::string() : " (" + k.modules_source + ")"),
                       remedy));
  }
  if (k.nouveau_loaded) {
    out.push_back(
        make("driver.nouveau", k.module_loaded ? Status::warn : Status::fail,
             std::string("the nouveau driver is loaded") + (k.module_loaded ? " next to nvidia" : " and owns the GPUs"),
             k_nouveau_remedy));
  } else {
    out.push_back(make("driver.nouveau", Status::pass, "nouveau is not loaded"));
  }
  if (!k.module_loaded && k.secure_boot) {
    out.push_back(
        make("driver.secure_boot", *k.secure_boot ? Status::warn : Status::pass,
             *k.secure_boot ? "Secure Boot is enabled: the kernel refuses unsigned NVIDIA modules"
                            : "Secure Boot is disabled",
             *k.secure_boot ? "use signed driver packages or enroll a Machine Owner Key (mokutil --import)" : ""));
  }
  if (k.module_loaded && facts.live) {
    const bool control = std::find(k.device_nodes.begin(), k.device_nodes.end(), "nvidiactl") != k.device_nodes.end();
    if (!control) {
      out.push_back(make("driver.device_nodes", Status::warn, "/dev/nvidiactl is missing although the module is loaded",
                         "run `nvidia-modprobe` (or `nvidia-smi` once as root), or enable nvidia-persistenced"));
    } else {
      out.push_back(
          make("driver.device_nodes", Status::pass, "device nodes present: " + util::join(k.device_nodes, ", ")));
    }
  }
  for (const auto& event : facts.kernel_events) {
    using probe::KernelEventKind;
    if (event.kind == KernelEventKind::probe_not_called || event.kind == KernelEventKind::probe_failed ||
        event.kind == KernelEventKind::no_adapter_probed) {
      // The driver's fixed sentence rebuilt from the event, not copied from the log (docs/security.md).
      const std::string devices =
          event.device_count ? " for " + std::to_string(*event.device_count) + " device(s)" : std::string();
      const std::string said = event.kind == KernelEventKind::probe_not_called
                                   ? "The NVIDIA probe routine was not called" + devices
                               : event.kind == KernelEventKind::probe_failed
                                   ? "The NVIDIA probe routine failed" + devices
                                   : std::string("No NVIDIA graphics adapter probed");
      out.push_back(
          make("driver.probe", Status::fail, "kernel log: " + said,
               event.kind == KernelEventKind::probe_not_called
                   ? std::string(k_nouveau_remedy)
                   : "check that the GPU is supported by this driver branch and seated; see `dmesg | grep NVRM`"));
      break;
    }
  }
}

/// User-space driver libraries must match the loaded module: after an unattended upgrade they don't, and
/// every CUDA and NVML call fails until a reboot.
void check_library_mismatch(const HostFacts& facts, Findings& out) {
  const std::string& module = facts.kernel.module_version;
  std::vector<std::string> mismatched;
  std::set<std::string> versions;
  for (const probe::DriverLibrary& lib : facts.driver_libraries) {
    versions.insert(lib.version);
    if (!module.empty() && lib.version != module)
      mismatched.push_back(lib.name + " " + lib.version + " (" + lib.path + ")");
  }
  const bool nvml_says = util::contains(util::to_lower(facts.gpus.availability.reason), "version mismatch");
  if (!mismatched.empty() || (nvml_says && !module.empty())) {
    std::string message = "the loaded kernel module is " + module + " but ";
    message += mismatched.empty() ? "NVML reports a driver/library version mismatch"
                                  : "user-space libraries are " + util::join(mismatched, ", ");
    out.push_back(make("driver.library_mismatch", Status::fail, message,
                       "reboot (or unload and reload the module: stop GPU processes, `rmmod nvidia_uvm nvidia_drm "
                       "nvidia_modeset nvidia`, `modprobe nvidia`); "
                       "to stop it recurring, hold the driver packages out of unattended upgrades"));
  } else if (facts.driver_libraries.empty()) {
    out.push_back(
        make("driver.library_mismatch", Status::skip, "no libnvidia-ml or libcuda found in the library directories"));
  } else if (module.empty()) {
    out.push_back(make("driver.library_mismatch", Status::skip,
                       "user-space driver " + util::join({versions.begin(), versions.end()}, ", ") +
                           " found, but no loaded module to compare with"));
  } else {
    out.push_back(
        make("driver.library_mismatch", Status::pass, "user-space driver libraries match the kernel module " + module));
  }
}

// ---- Kernel log ---------------------------------------------------------------------------------

void check_kernel_log(const HostFacts& facts, Findings& out) {
  if (facts.kernel_log_source.empty() || util::starts_with(facts.kernel_log_source, "unreadable")) {
    out.push_back(make("xid.events", Status::skip,
                       "no kernel log could be read" +
                           (facts.kernel_log_source.empty() ? std::string() : ": " + facts.kernel_log_source),
                       "run doctor as root, or allow dmesg (sysctl kernel.dmesg_restrict=0), to see Xid events"));
    return;
  }
  // One finding line per (code, bus): "Xid 79 on 0000:3b:00 x2: GPU has fallen off the bus". The meaning comes
  // from gpuenv's Xid table, never from the log line (whose tail can carry a user's text: docs/security.md).
  std::map<std::pair<int, std::string>, unsigned> groups;
  for (const probe::KernelEvent& event : facts.kernel_events) {
    if (event.kind == probe::KernelEventKind::xid && event.xid) {
      ++groups[{*event.xid, event.pci_bus_id}];
    } else if (event.kind == probe::KernelEventKind::fallen_off_bus) {
      ++groups[{-1, event.pci_bus_id}];
    }
  }
  if (groups.empty()) {
    out.push_back(make("xid.events", Status::pass, "no Xid events in " + facts.kernel_log_source));
    return;
  }
  Status worst = Status::pass;
  std::optional<report::Action> action;  // the most disruptive node_action of the events that count
  const auto add_action = [&action](report::Action more) { action = std::max(action.value_or(more), more); };
  std::vector<std::string> lines;
  std::vector<std::string> remedies;
  std::string source;
  for (const auto& [key, count] : groups) {
    const auto& [code, bus] = key;
    std::string line = code < 0 ? "fallen off the bus" : "Xid " + std::to_string(code);
    if (!bus.empty()) line += " on " + bus;
    if (count > 1) line += " x" + std::to_string(count);
    Status status = Status::fail;
    std::string remedy = "drain the node and reset the GPU or reboot; open a hardware ticket if it recurs";
    if (code >= 0) {
      if (auto info = probe::xid_info(code)) {
        line += ": " + info->meaning;
        using probe::XidSeverity;
        status = info->severity == XidSeverity::critical || info->severity == XidSeverity::error ? Status::fail
                 : info->severity == XidSeverity::warning                                        ? Status::warn
                                                                                                 : Status::pass;
        if (!info->action.empty() && info->action != "-") remedy = "Xid " + std::to_string(code) + ": " + info->action;
        if (const auto node_action = report::parse_action(info->node_action); node_action && status != Status::pass)
          add_action(*node_action);
        source = info->source;
      } else {
        line += " (not in gpuenv's Xid table)";
        status = Status::warn;
        remedy = "look up Xid " + std::to_string(code) + " in NVIDIA's Xid catalog";
      }
    }
    if (code < 0) add_action(report::Action::reboot);  // what NVIDIA's catalog says for Xid 79 (RESTART_BM)
    worst = std::max(worst, status);
    lines.push_back(line);
    if (status != Status::pass && std::find(remedies.begin(), remedies.end(), remedy) == remedies.end())
      remedies.push_back(remedy);
  }
  out.push_back(make("xid.events", worst, util::join(lines, "; ") + " (" + facts.kernel_log_source + ")",
                     util::join(remedies, "; "), source));
  out.back().action = action;
}

/// GPUs the driver failed to initialise (RmInitAdapter): they are missing from NVML, so only the log names them.
void check_init_failures(const HostFacts& facts, Findings& out) {
  std::vector<std::string> buses;
  bool unnamed = false;
  for (const probe::KernelEvent& event : facts.kernel_events) {
    if (event.kind != probe::KernelEventKind::init_failed) continue;
    if (event.pci_bus_id.empty()) {
      unnamed = true;
    } else if (std::find(buses.begin(), buses.end(), event.pci_bus_id) == buses.end()) {
      buses.push_back(event.pci_bus_id);
    }
  }
  if (buses.empty() && !unnamed) return;
  std::string message = "the driver failed to initialise ";
  message += buses.empty() ? std::string("a GPU") : "the GPU at " + util::join(buses, ", ");
  if (unnamed && !buses.empty()) message += " (and one the log does not name)";
  out.push_back(make("gpu.init_failed", Status::fail,
                     message + ": RmInitAdapter failed (" + facts.kernel_log_source + ")",
                     "the GPU is missing from nvidia-smi: reset it or reboot; if it recurs, drain the node and open a "
                     "hardware ticket naming the PCI address"));
}

/// A file that was there but could not be read leaves a fact missing: say which, rather than judge without it.
void check_unreadable(const HostFacts& facts, Findings& out) {
  if (facts.unreadable.empty()) return;
  out.push_back(
      make("host.unreadable", Status::warn,
           "could not read " + util::join(facts.unreadable, ", ") +
               " (it existed when looked for: removed meanwhile, or no permission); facts from it are missing",
           "run doctor again; if it persists, run it as root or check the file's permissions"));
}

}  // namespace gpuenv::doctor::rules_detail
