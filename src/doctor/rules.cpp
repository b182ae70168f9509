#include "doctor/rules.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "compat/derive.hpp"
#include "compat/rules.hpp"
#include "doctor/framework_rules.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::doctor {
namespace {

using probe::GpuFacts;
using probe::HostFacts;
using probe::NvLinkFacts;
using report::Finding;
using report::Status;
using util::Version;
using Findings = std::vector<Finding>;

Finding make(std::string id, Status status, std::string message, std::string remedy = {}, std::string source = {}) {
  return Finding{std::move(id), status, std::move(message), std::move(remedy), std::move(source)};
}

std::string number(double value, int decimals = 1) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(decimals);
  out << value;
  std::string text = out.str();
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

std::string gpu_label(const GpuFacts& gpu) {
  std::string label = "GPU " + std::to_string(gpu.index);
  if (!gpu.pci_bus_id.empty()) label += " (" + gpu.pci_bus_id + ")";
  return label;
}

/// Per-GPU problems folded into one finding per check, so eight healthy GPUs read as one line.
class PerGpu {
 public:
  PerGpu(std::string id, std::string source = {}) : m_id(std::move(id)), m_source(std::move(source)) {}
  void add(Status status, const GpuFacts& gpu, const std::string& problem, const std::string& remedy) {
    m_status = std::max(m_status, status);
    m_problems.push_back(gpu_label(gpu) + ": " + problem);
    if (!remedy.empty() && std::find(m_remedies.begin(), m_remedies.end(), remedy) == m_remedies.end())
      m_remedies.push_back(remedy);
  }
  void note(const GpuFacts& gpu, const std::string& text) { m_notes.push_back(gpu_label(gpu) + ": " + text); }
  void checked() { ++m_checked; }
  /// Pushes the finding, or a skip with `skip_reason` when no GPU reported the fact.
  void finish(Findings& out, const std::string& ok_message, const std::string& skip_reason) {
    if (!m_problems.empty()) {
      out.push_back(make(m_id, m_status, util::join(m_problems, "; "), util::join(m_remedies, "; "), m_source));
    } else if (m_checked == 0) {
      out.push_back(make(m_id, Status::skip, skip_reason));
    } else {
      std::string message = std::to_string(m_checked) + (m_checked == 1 ? " GPU: " : " GPUs: ") + ok_message;
      if (!m_notes.empty()) message += " (" + util::join(m_notes, "; ") + ")";
      out.push_back(make(m_id, Status::pass, message, {}, m_source));
    }
  }

 private:
  std::string m_id;
  std::string m_source;
  Status m_status = Status::pass;
  std::vector<std::string> m_problems;
  std::vector<std::string> m_remedies;
  std::vector<std::string> m_notes;
  unsigned m_checked = 0;
};

bool has_gpus(const HostFacts& facts) { return facts.gpus.availability.available && !facts.gpus.gpus.empty(); }

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

const char* k_nouveau_remedy =
    "blacklist nouveau: write \"blacklist nouveau\" and \"options nouveau modeset=0\" to "
    "/etc/modprobe.d/blacklist-nouveau.conf, run update-initramfs -u (dracut -f on RHEL), reboot";

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
      out.push_back(
          make("driver.probe", Status::fail, "kernel log: " + event.message,
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

// ---- GPUs ---------------------------------------------------------------------------------------

void check_gpu_count(const HostFacts& facts, const Expectations& expect, Findings& out) {
  const probe::GpuInventory& inv = facts.gpus;
  if (!inv.availability.available) {
    if (!facts.kernel.module_loaded && !facts.kernel.modules_source.empty()) {
      out.push_back(
          make("gpu.count", Status::skip, "no NVIDIA driver, so no GPUs to query (" + inv.availability.reason + ")"));
    } else if (!facts.live) {
      out.push_back(make("gpu.count", Status::skip, inv.availability.reason));
    } else {
      out.push_back(make("gpu.count", Status::fail, "GPUs cannot be queried: " + inv.availability.reason,
                         "run `nvidia-smi` to see the driver's own error; a driver/library mismatch needs a reboot"));
    }
    return;
  }
  const auto count = static_cast<unsigned>(inv.gpus.size());
  std::map<std::string, unsigned> names;
  std::vector<std::string> lost;
  for (const GpuFacts& gpu : inv.gpus) {
    ++names[gpu.name];
    if (!gpu.access_error.empty()) lost.push_back(gpu_label(gpu) + " (" + gpu.access_error + ")");
  }
  std::vector<std::string> described;
  for (const auto& [name, n] : names) described.push_back(std::to_string(n) + "x " + name);
  const std::string seen = std::to_string(count) + " GPU" + (count == 1 ? "" : "s") +
                           (described.empty() ? "" : ": " + util::join(described, ", "));
  if (!lost.empty()) {
    out.push_back(make("gpu.count", Status::fail, seen + "; inaccessible: " + util::join(lost, ", "),
                       "drain the node and reset the GPU or reboot; a GPU that stays lost has usually fallen off the "
                       "bus: open a hardware ticket"));
  } else if (expect.gpu_count && count != *expect.gpu_count) {
    out.push_back(make("gpu.count", Status::fail, seen + "; expected " + std::to_string(*expect.gpu_count),
                       "a missing GPU has usually fallen off the bus (see xid findings): reset it or drain the node "
                       "and open a hardware ticket"));
  } else if (!expect.gpu_count && expect.instance != nullptr && count != expect.instance->gpus) {
    out.push_back(make("gpu.count", Status::fail,
                       seen + "; " + expect.instance->instance_type + " should have " + expect.instance->describe(),
                       "a missing GPU has usually fallen off the bus (see xid findings): reset it or drain the node "
                       "and open a hardware ticket with the provider",
                       expect.instance->source));
  } else if (count == 0) {
    out.push_back(make("gpu.count", Status::fail, "the driver sees no GPUs",
                       "check `lspci | grep -i nvidia` and the kernel log"));
  } else if (inv.attached_gpus && *inv.attached_gpus != count) {
    out.push_back(make("gpu.count", Status::warn,
                       seen + "; the report header says " + std::to_string(*inv.attached_gpus) + " attached",
                       "compare with `nvidia-smi -L`"));
  } else {
    out.push_back(make("gpu.count", Status::pass, seen + " (" + inv.availability.source + ")"));
  }
}

void check_memory_errors(const HostFacts& facts, const Thresholds& thresholds, Findings& out) {
  const Threshold& ecc_t = thresholds.at("gpu.ecc_uncorrected_volatile");
  const Threshold& pages_t = thresholds.at("gpu.retired_pages");
  const Threshold& remap_t = thresholds.at("gpu.row_remap_uncorrectable");
  PerGpu ecc("gpu.ecc", ecc_t.source), pages("gpu.retired_pages", pages_t.source),
      remap("gpu.row_remap", remap_t.source);
  const std::string reset = "drain the node, reset the GPU (`nvidia-smi -r -i <index>`) or reboot, then rerun doctor";
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (gpu.ecc_enabled || gpu.ecc_uncorrected_volatile) {
      ecc.checked();
      if (gpu.ecc_enabled == false)
        ecc.add(Status::warn, gpu, "ECC is disabled", "enable ECC (`nvidia-smi -e 1`) and reboot");
      if (gpu.ecc_uncorrected_volatile && *gpu.ecc_uncorrected_volatile >= *ecc_t.fail_at) {
        ecc.add(Status::fail, gpu,
                std::to_string(*gpu.ecc_uncorrected_volatile) + " uncorrectable ECC errors since the last driver load",
                reset);
      }
    }
    if (gpu.retired_pages_single_bit || gpu.retired_pages_double_bit || gpu.retired_pages_pending) {
      pages.checked();
      const unsigned total = gpu.retired_pages_single_bit.value_or(0) + gpu.retired_pages_double_bit.value_or(0);
      if (gpu.retired_pages_pending.value_or(false))
        pages.add(Status::fail, gpu, "a page retirement is pending (takes effect at the next reset)", reset);
      if (total >= *pages_t.fail_at) {
        pages.add(Status::fail, gpu, std::to_string(total) + " retired pages (the table holds 64)",
                  "replace the GPU: open a hardware ticket");
      } else if (total > 0) {
        pages.note(gpu, std::to_string(total) + " retired pages");
      }
    }
    if (gpu.remapped_rows_uncorrectable || gpu.remapped_rows_pending || gpu.remapped_rows_failure) {
      remap.checked();
      if (gpu.remapped_rows_failure.value_or(false))
        remap.add(Status::fail, gpu, "a row remap failed",
                  "replace the GPU: open a hardware ticket (row-remap failure is NVIDIA's RMA criterion)");
      if (gpu.remapped_rows_pending.value_or(false))
        remap.add(Status::fail, gpu, "a row remap is pending (applied at the next GPU reset)", reset);
      const unsigned unc = gpu.remapped_rows_uncorrectable.value_or(0);
      if (unc >= *remap_t.fail_at) {
        remap.add(Status::fail, gpu, std::to_string(unc) + " rows remapped for uncorrectable errors",
                  "replace the GPU: open a hardware ticket");
      } else if (unc > 0) {
        remap.note(gpu, std::to_string(unc) + " rows remapped for uncorrectable errors");
      }
    }
  }
  ecc.finish(out, "ECC on, no uncorrectable errors", "no GPU reports ECC (consumer GPUs have none)");
  pages.finish(out, "no pending page retirement",
               "no GPU reports page retirement (Ampere and later remap rows instead)");
  remap.finish(out, "no pending or failed row remap",
               "no GPU reports row remapping (before Ampere, pages are retired instead)");
}

void check_thermals_and_clocks(const HostFacts& facts, const Thresholds& thresholds, Findings& out) {
  const Threshold& temp_t = thresholds.at("gpu.temperature_c");
  PerGpu temperature("gpu.temperature", temp_t.source), throttle("gpu.throttle");
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (gpu.temperature_c) {
      temperature.checked();
      const double t = *gpu.temperature_c;
      if (gpu.temperature_slowdown_c && t >= *gpu.temperature_slowdown_c) {
        temperature.add(
            Status::fail, gpu,
            number(t, 0) + " C, at or above its slowdown threshold " + number(*gpu.temperature_slowdown_c, 0) + " C",
            "check the airflow and fans of this GPU and the chassis");
      } else if (t >= *temp_t.warn_at) {
        temperature.add(Status::warn, gpu, number(t, 0) + " C (warning at " + number(*temp_t.warn_at, 0) + " C)",
                        "check the airflow and fans of this GPU and the chassis");
      }
    }
    if (gpu.temperature_c || !gpu.throttle_reasons.empty()) throttle.checked();
    for (const std::string& reason : gpu.throttle_reasons) {
      const auto it = thresholds.throttle_reasons.find(reason);
      if (it == thresholds.throttle_reasons.end()) continue;  // sw_power_cap, sync_boost: normal under load
      throttle.add(it->second.status_on, gpu, reason + " active: " + it->second.meaning,
                   "check cooling and power delivery (PSU, power brake cable); `nvidia-smi -q -d PERFORMANCE` shows "
                   "the reason counters");
    }
  }
  temperature.finish(out, "below " + number(*temp_t.warn_at, 0) + " C", "no GPU reports its temperature");
  throttle.finish(out, "no hardware or thermal slowdown active", "no GPU reports clock-event reasons");
}

void check_pcie(const HostFacts& facts, const Thresholds& thresholds, Findings& out) {
  const Threshold& busy_t = thresholds.at("gpu.pcie_busy_utilization_percent");
  PerGpu link("gpu.pcie_link", busy_t.source);
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (!gpu.pcie_gen_current || !gpu.pcie_gen_max || !gpu.pcie_width_current || !gpu.pcie_width_max) continue;
    link.checked();
    const bool gen_down = *gpu.pcie_gen_current < *gpu.pcie_gen_max;
    const bool width_down = *gpu.pcie_width_current < *gpu.pcie_width_max;
    if (!gen_down && !width_down) continue;
    const std::string state = "Gen" + std::to_string(*gpu.pcie_gen_current) + " x" +
                              std::to_string(*gpu.pcie_width_current) + " of Gen" + std::to_string(*gpu.pcie_gen_max) +
                              " x" + std::to_string(*gpu.pcie_width_max);
    const bool busy = gpu.utilization_percent.value_or(0) >= *busy_t.warn_at || gpu.process_count.value_or(0) > 0;
    if (!busy) {
      link.note(gpu, state + " while idle (idle GPUs train their link down; measure under load with `gpuenv smoke`)");
    } else if (width_down) {
      link.add(Status::fail, gpu, state + " under load: the link trained to fewer lanes",
               "reseat the GPU or riser, check the slot; host<->device bandwidth is cut in proportion");
    } else {
      link.add(Status::warn, gpu, state + " under load",
               "check the BIOS PCIe speed setting and the riser; confirm with `gpuenv smoke` bandwidth");
    }
  }
  link.finish(out, "PCIe links at their maximum generation and width", "no GPU reports its PCIe link");
}

/// "3, 7".
std::string link_list(const std::vector<unsigned>& links) {
  std::string out;
  for (unsigned link : links) out += (out.empty() ? "" : ", ") + std::to_string(link);
  return out;
}

/// Each GPU's active NVLinks against the best GPU of the same model on this node. Azure's check fails on any
/// inactive link, which false-fails shapes wired with fewer links by design (H100 NVL: 12 of 18); comparing siblings
/// catches a link that went down without that false alarm. Error counters (cumulative since the driver loaded) are
/// shown, not judged: one snapshot cannot tell a rate.
void check_nvlink(const HostFacts& facts, Findings& out) {
  std::map<std::string, std::size_t> best;  // most active links per model
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (gpu.nvlink) best[gpu.name] = std::max(best[gpu.name], gpu.nvlink->active.size());
  }
  PerGpu links("gpu.nvlink", "aznhc check_nvlink_status (health-thresholds.md 6b), compared per model on this node");
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (!gpu.nvlink) continue;
    links.checked();
    const NvLinkFacts& nv = *gpu.nvlink;
    const std::size_t total = nv.active.size() + nv.inactive.size();
    const std::string state = std::to_string(nv.active.size()) + " of " + std::to_string(total) + " NVLinks active";
    if (nv.active.size() < best[gpu.name]) {
      links.add(Status::fail, gpu,
                state + " (down: link " + link_list(nv.inactive) + ") while another " + gpu.name + " here has " +
                    std::to_string(best[gpu.name]),
                "check `nvidia-smi nvlink --status` and `nvidia-smi nvlink -e`; reseat the NVLink bridge (PCIe "
                "cards) or drain the node for a baseboard and NVSwitch check (SXM); a down link cuts peer bandwidth");
    } else if (nv.active.empty()) {
      links.note(gpu, "no NVLink active (no bridge fitted, or the NVLink fabric is down)");
    }
    const std::uint64_t errors =
        nv.replay_errors.value_or(0) + nv.recovery_errors.value_or(0) + nv.crc_errors.value_or(0);
    if (errors > 0) {
      links.note(gpu, state + "; since the driver loaded: " + std::to_string(nv.replay_errors.value_or(0)) +
                          " replay, " + std::to_string(nv.recovery_errors.value_or(0)) + " recovery, " +
                          std::to_string(nv.crc_errors.value_or(0)) + " CRC errors");
    }
  }
  links.finish(out, "every NVLink of its model up", "no GPU reports NVLink (PCIe-only GPUs, or an old driver)");
}

void check_gpu_state(const HostFacts& facts, Findings& out) {
  PerGpu persistence("gpu.persistence_mode"), processes("gpu.processes");
  std::vector<std::string> mig;
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (gpu.persistence_mode) {
      persistence.checked();
      if (!*gpu.persistence_mode) {
        persistence.add(Status::warn, gpu, "persistence mode is off (each CUDA start re-initialises the GPU)",
                        "enable nvidia-persistenced (`systemctl enable --now nvidia-persistenced`)");
      }
    }
    if (gpu.process_count) {
      processes.checked();
      if (*gpu.process_count > 0) {
        processes.add(Status::warn, gpu, std::to_string(*gpu.process_count) + " compute process(es) already running",
                      "check `nvidia-smi` for stray jobs before scheduling work here");
      }
    }
    if (gpu.mig_enabled.value_or(false)) mig.push_back(gpu_label(gpu));
  }
  persistence.finish(out, "persistence mode on", "no GPU reports persistence mode");
  processes.finish(out, "no compute processes running", "no GPU reports its processes");
  if (!mig.empty()) {
    out.push_back(make("gpu.mig", Status::warn,
                       "MIG mode is enabled on " + util::join(mig, ", ") + ": CUDA sees MIG instances, not whole GPUs",
                       "if whole GPUs are wanted: `nvidia-smi -i <index> -mig 0` and reset the GPU"));
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
  // One finding line per (code, bus): "Xid 79 on 0000:3b:00 x2: GPU has fallen off the bus".
  struct Group {
    unsigned count = 0;
    std::string message;
  };
  std::map<std::pair<int, std::string>, Group> groups;
  for (const probe::KernelEvent& event : facts.kernel_events) {
    if (event.kind == probe::KernelEventKind::xid && event.xid) {
      auto& group = groups[{*event.xid, event.pci_bus_id}];
      ++group.count;
      group.message = event.message;
    } else if (event.kind == probe::KernelEventKind::fallen_off_bus) {
      auto& group = groups[{-1, event.pci_bus_id}];
      ++group.count;
      group.message = "GPU has fallen off the bus";
    }
  }
  if (groups.empty()) {
    out.push_back(make("xid.events", Status::pass, "no Xid events in " + facts.kernel_log_source));
    return;
  }
  Status worst = Status::pass;
  std::vector<std::string> lines;
  std::vector<std::string> remedies;
  std::string source;
  for (const auto& [key, group] : groups) {
    const auto& [code, bus] = key;
    std::string line = code < 0 ? "fallen off the bus" : "Xid " + std::to_string(code);
    if (!bus.empty()) line += " on " + bus;
    if (group.count > 1) line += " x" + std::to_string(group.count);
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
        source = info->source;
      } else {
        line += ": " + group.message + " (not in gpuenv's Xid table)";
        status = Status::warn;
        remedy = "look up Xid " + std::to_string(code) + " in NVIDIA's Xid catalog";
      }
    }
    worst = std::max(worst, status);
    lines.push_back(line);
    if (status != Status::pass && std::find(remedies.begin(), remedies.end(), remedy) == remedies.end())
      remedies.push_back(remedy);
  }
  out.push_back(make("xid.events", worst, util::join(lines, "; ") + " (" + facts.kernel_log_source + ")",
                     util::join(remedies, "; "), source));
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

// ---- CUDA driver and toolkits -------------------------------------------------------------------

void check_cuda_driver(const HostFacts& facts, Findings& out) {
  const probe::CudaDriver& cuda = facts.cuda_driver;
  if (!facts.live) {
    out.push_back(make("cuda.driver", Status::skip,
                       "not loaded under --root (nothing is executed or loaded from an inspected tree)"));
    return;
  }
  if (!cuda.availability.available) {
    const bool no_driver = !facts.kernel.module_loaded;
    out.push_back(
        make("cuda.driver", no_driver ? Status::skip : Status::fail,
             no_driver ? "libcuda not checked: no NVIDIA driver"
                       : "libcuda.so.1 cannot be loaded: " + cuda.availability.reason,
             no_driver ? "" : "install the driver's CUDA user-space library (libnvidia-compute / nvidia-driver-cuda)"));
    return;
  }
  if (cuda.init_result && *cuda.init_result != 0) {
    out.push_back(make("cuda.driver", Status::fail,
                       "cuInit failed: " + cuda.init_error + " (CUresult " + std::to_string(*cuda.init_result) + ")",
                       *cuda.init_result == 100
                           ? "no CUDA-capable device is visible: check CUDA_VISIBLE_DEVICES and the GPU count"
                           : "see the driver/library and Xid findings; a reboot clears most initialisation failures"));
    return;
  }
  out.push_back(make("cuda.driver", Status::pass,
                     "cuInit succeeded; the driver supports CUDA up to " + cuda.driver_cuda_version));
}

/// The highest CUDA version the node's driver runs, from libcuda or NVML.
std::optional<Version> driver_cuda(const HostFacts& facts) {
  if (auto v = Version::parse(facts.cuda_driver.driver_cuda_version)) return v;
  return Version::parse(facts.gpus.cuda_driver_version);
}

void check_toolkits(const HostFacts& facts, const compat::KnowledgeBase& kb, Findings& out) {
  if (facts.toolkits.empty()) {
    out.push_back(make("toolkit.installed", Status::skip,
                       "no CUDA toolkit under /usr/local (containers and pip wheels bring their own CUDA runtime)"));
    return;
  }
  std::vector<std::string> found;
  for (const probe::CudaToolkit& tk : facts.toolkits)
    found.push_back(tk.version + " at " + tk.root + (tk.has_nvcc ? "" : " (no nvcc)"));
  out.push_back(make("toolkit.installed", Status::pass, "CUDA toolkit " + util::join(found, ", ")));

  const bool any_on_path =
      std::any_of(facts.toolkits.begin(), facts.toolkits.end(), [](const auto& tk) { return tk.on_path; });
  const probe::CudaToolkit& newest = facts.toolkits.back();
  if (!facts.live) {
    out.push_back(make("toolkit.path", Status::skip,
                       "PATH is not judged under --root (this process's environment is not the tree's)"));
  } else if (!any_on_path && newest.has_nvcc) {
    out.push_back(make("toolkit.path", Status::warn,
                       "CUDA " + newest.version + " is installed but its nvcc is not on PATH",
                       "add `export PATH=" + newest.root + "/bin:$PATH` and `export LD_LIBRARY_PATH=" + newest.root +
                           "/lib64:$LD_LIBRARY_PATH` to the login environment (e.g. /etc/profile.d/cuda.sh)"));
  } else if (any_on_path) {
    std::string which;
    for (const auto& tk : facts.toolkits) {
      if (tk.on_path) which = tk.version;
    }
    out.push_back(make("toolkit.path", Status::pass, "nvcc of CUDA " + which + " is on PATH"));
  }

  const auto cuda = driver_cuda(facts);
  const auto driver =
      Version::parse(facts.kernel.module_version.empty() ? facts.gpus.driver_version : facts.kernel.module_version);
  for (const probe::CudaToolkit& tk : facts.toolkits) {
    const auto version = Version::parse(tk.version);
    if (!version) continue;
    if (!driver) {
      out.push_back(
          make("toolkit.driver_support", Status::skip, "CUDA " + tk.version + ": no driver to judge it against"));
      continue;
    }
    const compat::CudaRelease* release = kb.cuda_release(version->truncated(3));
    const std::optional<Version> required = release ? release->driver_min : kb.driver_for_minor(*version);
    compat::DriverJudgement judged =
        compat::judge_driver(*driver, "driver " + driver->str(), version->truncated(3), required, kb);
    if (judged.status == Status::pass && cuda && version->truncated(2) > cuda->truncated(2)) {
      judged = {Status::warn,
                "toolkit CUDA " + tk.version + " is newer than the CUDA " + cuda->str() + " the driver reports",
                "upgrade the driver"};
    }
    out.push_back(make("toolkit.driver_support", judged.status, "toolkit CUDA " + tk.version + ": " + judged.message,
                       judged.remedy, release ? release->provenance.source : std::string()));
  }
}

void check_libraries(const HostFacts& facts, Findings& out) {
  if (!facts.cudnn) {
    out.push_back(make("cudnn.installed", Status::skip,
                       "cuDNN is not installed on the host (framework wheels and cuDNN images bring their own)"));
  } else {
    const probe::Library& cudnn = *facts.cudnn;
    const std::string version = cudnn.version.empty() ? cudnn.runtime_version : cudnn.version;
    std::string message = "cuDNN " + version + (cudnn.header.empty() ? "" : " (" + cudnn.header + ")");
    if (!cudnn.runtime_version.empty() && !cudnn.version.empty() && cudnn.runtime_version != cudnn.version) {
      out.push_back(make("cudnn.installed", Status::warn,
                         "cuDNN header says " + cudnn.version + " but the library reports " + cudnn.runtime_version,
                         "remove the stale copy so header and library come from one cuDNN release"));
    } else {
      out.push_back(make("cudnn.installed", Status::pass, message));
    }
    if (!cudnn.built_for_cuda.empty() && !facts.toolkits.empty()) {
      const auto toolkit = Version::parse(facts.toolkits.back().version);
      const auto built = Version::parse(cudnn.built_for_cuda);
      if (toolkit && built && toolkit->major() != built->major()) {
        out.push_back(make("cudnn.cuda_major", Status::fail,
                           "cuDNN " + version + " was built for CUDA " + cudnn.built_for_cuda +
                               " but the toolkit is CUDA " + facts.toolkits.back().version,
                           "install the cuDNN package for CUDA " + std::to_string(toolkit->major()) +
                               " (e.g. libcudnn9-cuda-" + std::to_string(toolkit->major()) + ")"));
      } else if (toolkit && built) {
        out.push_back(make("cudnn.cuda_major", Status::pass,
                           "cuDNN was built for CUDA " + cudnn.built_for_cuda + ", matching the toolkit"));
      }
    }
  }
  if (facts.nccl)
    out.push_back(
        make("nccl.installed", Status::pass,
             "NCCL " + facts.nccl->version + (facts.nccl->header.empty() ? "" : " (" + facts.nccl->header + ")")));
}

// ---- Containers ---------------------------------------------------------------------------------

void check_containers(const HostFacts& facts, Findings& out) {
  const probe::ContainerRuntime& c = facts.containers;
  const bool engine = c.docker_installed || c.containerd_installed;
  if (!c.nvidia_ctk && !c.nvidia_container_runtime) {
    out.push_back(make(
        "container.toolkit", engine ? Status::warn : Status::skip,
        engine
            ? "a container engine is installed but the NVIDIA Container Toolkit is not: containers cannot see the GPUs"
            : "no container engine and no NVIDIA Container Toolkit",
        engine ? "install nvidia-container-toolkit from NVIDIA's repository, then `nvidia-ctk runtime configure`"
               : ""));
    return;
  }
  out.push_back(make("container.toolkit", Status::pass,
                     "NVIDIA Container Toolkit present" + (c.nvidia_ctk ? " (" + *c.nvidia_ctk + ")" : std::string())));
  if (c.docker_installed) {
    out.push_back(make(
        "container.docker_runtime", c.docker_nvidia_runtime ? Status::pass : Status::warn,
        c.docker_nvidia_runtime ? "Docker is configured with the nvidia runtime"
                                : "Docker's /etc/docker/daemon.json has no nvidia runtime",
        c.docker_nvidia_runtime ? "" : "`nvidia-ctk runtime configure --runtime=docker && systemctl restart docker`"));
  }
  // Docker CE installs containerd as its own backend; only a containerd used directly (Kubernetes) needs the runtime.
  if (c.containerd_installed && !c.docker_installed) {
    out.push_back(make("container.containerd_runtime", c.containerd_nvidia_runtime ? Status::pass : Status::warn,
                       c.containerd_nvidia_runtime ? "containerd is configured with the nvidia runtime"
                                                   : "containerd's config has no nvidia runtime",
                       c.containerd_nvidia_runtime
                           ? ""
                           : "`nvidia-ctk runtime configure --runtime=containerd && systemctl restart containerd`"));
  }
}

// ---- Profile conformance ------------------------------------------------------------------------

/// The os-release ID of a host that runs the profile's OS: UBI images are built from RHEL, Rocky Linux calls
/// itself "rocky".
std::string os_release_id(const std::string& distro) {
  if (distro == "rockylinux") return "rocky";
  if (distro == "ubi") return "rhel";
  return distro;
}

/// The profile's OS against the node's (os-release). Only a warning: the profile's container image carries its own
/// OS, so a mismatch matters only for what is installed on the host (toolkit, cuDNN, packages).
void check_profile_os(const HostFacts& facts, const profile::Profile& p, Findings& out) {
  if (p.os_distro.empty() || facts.host.os_id.empty()) return;
  const std::string wanted = p.os_distro + " " + p.os_version;
  const std::string node = facts.host.os_id + " " + facts.host.os_version_id;
  const auto want_version = Version::parse(p.os_version);
  const auto node_version = Version::parse(facts.host.os_version_id);
  // "9" covers VERSION_ID "9.4"; "22.04" must be "22.04".
  const bool same = os_release_id(p.os_distro) == facts.host.os_id && want_version && node_version &&
                    node_version->starts_with(*want_version);
  if (same) {
    out.push_back(make("profile.os", Status::pass, "the node runs " + node + ", as profile " + p.name + " targets"));
    return;
  }
  out.push_back(make("profile.os", Status::warn,
                     "profile " + p.name + " targets " + wanted + "; this node runs " + node,
                     "fine for the profile's container image (`gpuenv dockerfile " + p.name +
                         "`); for host installs pick a profile for " + node + " or reimage the node"));
}

void check_profile_conformance(const HostFacts& facts, const compat::KnowledgeBase& kb, const profile::Profile& p,
                               Findings& out) {
  // The profile itself must be coherent: the same rules as `gpuenv profile check`.
  for (Finding finding : compat::check_profile(p, kb)) {
    if (finding.status == Status::pass) continue;
    finding.id = "profile." + finding.id;
    out.push_back(std::move(finding));
  }
  check_profile_os(facts, p, out);
  const compat::DriverFloor floor = compat::driver_floor(p, kb);
  const auto driver =
      Version::parse(facts.kernel.module_version.empty() ? facts.gpus.driver_version : facts.kernel.module_version);
  if (floor.version && driver) {
    const auto cuda = Version::parse(p.cuda_version);
    compat::DriverJudgement judged =
        cuda ? compat::judge_driver(*driver, "driver " + driver->str(), *cuda, floor.version, kb)
             : compat::DriverJudgement{*driver >= *floor.version ? Status::pass : Status::fail, "", ""};
    out.push_back(make("profile.driver", judged.status, "profile " + p.name + ": " + judged.message, judged.remedy));
  } else if (floor.version) {
    out.push_back(make("profile.driver", Status::fail,
                       "profile " + p.name + " needs driver >= " + floor.version->str() + "; no driver is loaded",
                       "install driver branch " + std::to_string(floor.version->major()) + " or newer"));
  }
  if (!p.driver_modules.empty() && facts.kernel.open_module) {
    const bool open = *facts.kernel.open_module;
    if ((p.driver_modules == "open") != open) {
      out.push_back(make("profile.driver_modules", Status::warn,
                         "profile " + p.name + " wants " + p.driver_modules + " kernel modules; the loaded module is " +
                             (open ? "open" : "proprietary"),
                         "install the " + p.driver_modules + " kernel module flavour of the driver"));
    }
  }
  if (!p.cuda_version.empty()) {
    const auto wanted = Version::parse(p.cuda_version);
    const auto match =
        std::find_if(facts.toolkits.begin(), facts.toolkits.end(), [&wanted](const probe::CudaToolkit& tk) {
          const auto v = Version::parse(tk.version);
          return v && wanted && v->truncated(3) == wanted->truncated(3);
        });
    if (match != facts.toolkits.end()) {
      out.push_back(
          make("profile.cuda_toolkit", Status::pass, "CUDA " + p.cuda_version + " is installed at " + match->root));
    } else {
      std::vector<std::string> have;
      for (const auto& tk : facts.toolkits) have.push_back(tk.version);
      out.push_back(
          make("profile.cuda_toolkit", Status::fail,
               "profile " + p.name + " wants CUDA " + p.cuda_version + "; the node has " +
                   (have.empty() ? "no toolkit" : util::join(have, ", ")),
               "install CUDA " + p.cuda_version + " (or use the profile's container image instead of a host toolkit)"));
    }
  }
  if (!p.cudnn_version.empty()) {
    const auto wanted = Version::parse(p.cudnn_version);
    const auto have =
        facts.cudnn ? Version::parse(facts.cudnn->version.empty() ? facts.cudnn->runtime_version : facts.cudnn->version)
                    : std::nullopt;
    if (have && wanted && have->starts_with(*wanted)) {
      out.push_back(
          make("profile.cudnn", Status::pass, "cuDNN " + have->str() + " satisfies the profile's " + p.cudnn_version));
    } else {
      out.push_back(make("profile.cudnn", Status::fail,
                         "profile " + p.name + " wants cuDNN " + p.cudnn_version + "; the node has " +
                             (have ? "cuDNN " + have->str() : "none"),
                         "install cuDNN " + p.cudnn_version + " for CUDA " + p.cuda_version));
    }
  }
  // Every GPU on the node must be one the profile targets, and one its CUDA can run.
  std::vector<std::string> targets = p.gpu_compute_capabilities;
  for (const std::string& model : p.gpu_models) {
    if (const compat::GpuModel* gpu = kb.gpu(model)) targets.push_back(gpu->compute_capability);
  }
  // NVML reports the compute capability; an nvidia-smi report does not, so the product name is looked up in the
  // knowledge base's GPU table.
  std::set<std::string> node_ccs;
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (!gpu.compute_capability.empty()) {
      node_ccs.insert(gpu.compute_capability);
    } else if (const compat::GpuModel* model = kb.gpu(gpu.name)) {
      node_ccs.insert(model->compute_capability);
    }
  }
  if (!node_ccs.empty()) {
    profile::Profile with_node_gpus = p;
    with_node_gpus.gpu_models.clear();
    with_node_gpus.gpu_compute_capabilities.assign(node_ccs.begin(), node_ccs.end());
    for (Finding finding : compat::check_profile(with_node_gpus, kb)) {
      if (finding.id != "gpu.cuda_support" && finding.id != "pytorch.compute_capability") continue;
      finding.id = "profile.node_" + finding.id.substr(finding.id.find('.') + 1);
      out.push_back(std::move(finding));
    }
    if (!targets.empty()) {
      for (const std::string& cc : node_ccs) {
        if (std::find(targets.begin(), targets.end(), cc) == targets.end()) {
          out.push_back(make("profile.gpu_targets", Status::fail,
                             "the node's GPUs have compute capability " + cc + ", which profile " + p.name +
                                 " does not target (" + util::join(targets, ", ") + ")",
                             "add \"" + cc + "\" to gpu.compute_capabilities, or run this profile on other nodes"));
        }
      }
    }
  }
}

}  // namespace

std::vector<Finding> evaluate(const HostFacts& facts, const Thresholds& thresholds, const compat::KnowledgeBase& kb,
                              const Expectations& expectations) {
  Findings out;
  out.push_back(cloud_finding(facts, expectations.instance));
  check_host(facts, thresholds, out);
  check_kernel_driver(facts, out);
  check_library_mismatch(facts, out);
  check_gpu_count(facts, expectations, out);
  if (expectations.instance != nullptr) check_instance(facts, *expectations.instance, out);
  if (has_gpus(facts)) {
    check_memory_errors(facts, thresholds, out);
    check_thermals_and_clocks(facts, thresholds, out);
    check_pcie(facts, thresholds, out);
    check_nvlink(facts, out);
    check_gpu_state(facts, out);
  }
  check_kernel_log(facts, out);
  check_init_failures(facts, out);
  check_cuda_driver(facts, out);
  check_toolkits(facts, kb, out);
  check_libraries(facts, out);
  check_containers(facts, out);
  check_frameworks(facts, out);
  if (expectations.profile != nullptr) check_profile_conformance(facts, kb, *expectations.profile, out);
  return out;
}

}  // namespace gpuenv::doctor
