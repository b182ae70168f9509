#include <algorithm>
#include <map>

#include "doctor/actions.hpp"
#include "doctor/rules_detail.hpp"
#include "probe/nvlink5.hpp"

namespace gpuenv::doctor::rules_detail {

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
                  "replace the GPU: open a hardware ticket", case_action("gpu.retired_pages", "table_full"));
      } else if (total > 0) {
        pages.note(gpu, std::to_string(total) + " retired pages");
      }
    }
    if (gpu.remapped_rows_uncorrectable || gpu.remapped_rows_pending || gpu.remapped_rows_failure) {
      remap.checked();
      if (gpu.remapped_rows_failure.value_or(false))
        remap.add(Status::fail, gpu, "a row remap failed",
                  "replace the GPU: open a hardware ticket (row-remap failure is NVIDIA's RMA criterion)",
                  case_action("gpu.row_remap", "failure"));
      if (gpu.remapped_rows_pending.value_or(false))
        remap.add(Status::fail, gpu, "a row remap is pending (applied at the next GPU reset)", reset);
      const unsigned unc = gpu.remapped_rows_uncorrectable.value_or(0);
      if (unc >= *remap_t.fail_at) {
        remap.add(Status::fail, gpu, std::to_string(unc) + " rows remapped for uncorrectable errors",
                  "replace the GPU: open a hardware ticket", case_action("gpu.row_remap", "limit"));
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

namespace {

/// "3, 7".
std::string link_list(const std::vector<unsigned>& links) {
  std::string out;
  for (unsigned link : links) out += (out.empty() ? "" : ", ") + std::to_string(link);
  return out;
}

}  // namespace

/// Each GPU's active NVLinks against the best GPU of the same model on this node. Azure's check fails on any
/// inactive link, which false-fails shapes wired with fewer links by design (H100 NVL: 12 of 18); comparing siblings
/// catches a link that went down without that false alarm. On an NVSwitch board (NVSwitch functions on PCI, or
/// NVLink5's switch-management bridges) every link of every GPU goes to a switch, as on the ND shapes Azure's check
/// runs on, so any inactive link fails there: a dead NVSwitch takes the same links from every GPU, which the sibling
/// comparison cannot see. A GPU in MIG mode is left out (DCGM's MonitorNVLinkStatus skips MIG too). Error counters
/// (cumulative since the driver loaded) are shown, not judged: one snapshot cannot tell a rate.
void check_nvlink(const HostFacts& facts, Findings& out) {
  const bool nvswitch_board = !facts.fabric.nvswitches.empty() || !facts.fabric.nvlink5_bridges.empty();
  std::map<std::string, std::size_t> best;  // most active links per model
  // A GPU in MIG mode reports its NVLinks down (DCGM's DcgmTopology.cpp ignores link state then): not compared.
  const auto in_mig = [](const GpuFacts& gpu) { return gpu.mig_enabled.value_or(false); };
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (gpu.nvlink && !in_mig(gpu)) best[gpu.name] = std::max(best[gpu.name], gpu.nvlink->active.size());
  }
  PerGpu links("gpu.nvlink",
               "Azure/azurehpc-health-checks customTests/azure_gpu_nvlink.nhc check_nvlink_status @ 0e0a1ac2, compared "
               "per model on this node");
  for (const GpuFacts& gpu : facts.gpus.gpus) {
    if (!gpu.nvlink || in_mig(gpu)) continue;
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
    } else if (nvswitch_board && !nv.inactive.empty() &&
               (!gpu.fabric || gpu.fabric->state == probe::GpuFabricInfo::State::completed ||
                gpu.fabric->state == probe::GpuFabricInfo::State::not_supported)) {
      // (A GPU the fabric manager has not registered yet has untrained links: fabric.state says that, not this.)
      links.add(Status::fail, gpu,
                state + " (down: link " + link_list(nv.inactive) +
                    ") on an NVSwitch board, where every NVLink goes to a switch (the same links down on every GPU "
                    "point at an NVSwitch)",
                "check `nvidia-smi nvlink --status` on every GPU, the fabric manager (`journalctl -u "
                "nvidia-fabricmanager`) and SXid lines in the kernel log; drain the node for a baseboard and "
                "NVSwitch check");
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
    // NVLink5 (Blackwell): the counters of probe/nvlink5.hpp's table, shown as the older ones are.
    std::vector<std::string> nvlink5;
    for (const probe::NvLink5Counter& counter : nv.nvlink5) {
      if (counter.value > 0)
        nvlink5.push_back(std::to_string(counter.value) + " " + probe::nvlink5_counter_name(counter.field));
    }
    if (!nvlink5.empty())
      links.note(gpu, state + "; NVLink5 counters since the driver loaded: " + util::join(nvlink5, ", "));
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

}  // namespace gpuenv::doctor::rules_detail
