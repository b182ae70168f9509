#include "watch/sample.hpp"

#include <array>
#include <string_view>
#include <utility>

#include "probe/nvlink5.hpp"

namespace gpuenv::watch {
namespace {

constexpr std::array<std::pair<std::string_view, unsigned>, 6> k_throttle_bits = {{
    {"sw_power_cap", k_sw_power_cap},
    {"hw_slowdown", k_hw_slowdown},
    {"sync_boost", k_sync_boost},
    {"sw_thermal_slowdown", k_sw_thermal_slowdown},
    {"hw_thermal_slowdown", k_hw_thermal_slowdown},
    {"hw_power_brake_slowdown", k_hw_power_brake_slowdown},
}};

template <typename T>
std::optional<double> as_double(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

/// `total` plus `value` (unknown plus unknown stays unknown).
void add_to_sum(std::optional<std::uint64_t>& total, const std::optional<std::uint64_t>& value) {
  if (value) total = total.value_or(0) + *value;
}

GpuSample sample_gpu(const probe::GpuFacts& gpu) {
  GpuSample out;
  out.index = gpu.index;
  out.uuid = gpu.uuid;
  out.pci_bus_id = gpu.pci_bus_id;
  out.name = gpu.name;
  out.access_error = gpu.access_error;
  out.utilization_percent = gpu.utilization_percent;
  out.memory_used_mib = as_double(gpu.memory_used_mib);
  out.memory_total_mib = as_double(gpu.memory_total_mib);
  out.temperature_c = gpu.temperature_c;
  out.power_w = gpu.power_draw_w;
  out.sm_clock_mhz = as_double(gpu.sm_clock_mhz);
  out.throttle = throttle_bits(gpu.throttle_reasons);
  out.processes = gpu.process_count;
  out.ecc_corrected = gpu.ecc_corrected_volatile;
  out.ecc_uncorrected = gpu.ecc_uncorrected_volatile;
  out.remapped_correctable = gpu.remapped_rows_correctable;
  out.remapped_uncorrectable = gpu.remapped_rows_uncorrectable;
  out.remap_pending = gpu.remapped_rows_pending.value_or(false);
  out.remap_failure = gpu.remapped_rows_failure.value_or(false);
  if (gpu.fabric && gpu.fabric->state != probe::GpuFabricInfo::State::not_supported) out.fabric = gpu.fabric;
  if (gpu.nvlink) {
    out.nvlink_replay = gpu.nvlink->replay_errors;
    out.nvlink_recovery = gpu.nvlink->recovery_errors;
    out.nvlink_crc = gpu.nvlink->crc_errors;
    out.nvlink_inactive = static_cast<unsigned>(gpu.nvlink->inactive.size());
  }
  return out;
}

}  // namespace

unsigned throttle_bits(const std::vector<std::string>& names) {
  unsigned bits = 0;
  for (const std::string& name : names) {
    for (const auto& [known, bit] : k_throttle_bits) {
      if (name == known) bits |= bit;
    }
  }
  return bits;
}

std::vector<std::string> throttle_names(unsigned bits) {
  std::vector<std::string> names;
  for (const auto& [name, bit] : k_throttle_bits) {
    if ((bits & bit) != 0) names.emplace_back(name);
  }
  return names;
}

std::string gpu_key(const GpuSample& gpu) { return gpu.uuid.empty() ? "index-" + std::to_string(gpu.index) : gpu.uuid; }

NodeSample sample_from_inventory(const probe::GpuInventory& inventory, const std::vector<probe::GpuLinkCounters>& links,
                                 std::int64_t time_ms) {
  NodeSample sample;
  sample.time_ms = time_ms;
  sample.nvml = inventory.availability.available;
  sample.nvml_reason = inventory.availability.reason;
  sample.attached_gpus = inventory.attached_gpus;
  for (const probe::GpuFacts& gpu : inventory.gpus) {
    GpuSample out = sample_gpu(gpu);
    for (const probe::GpuLinkCounters& counters : links) {
      if (counters.index != gpu.index) continue;
      out.pcie_replays = counters.pcie_replays;
      for (const probe::NvLinkCounters& link : counters.nvlinks) {
        if (!link.active) continue;
        out.nvlink_links.push_back(link);  // the links NVML's sums are over
        // NVLink5: summed here over the same links, in the two judgements of probe's table.
        add_to_sum(out.nvlink5_errors, probe::nvlink5_sum(link.nvlink5, false));
        add_to_sum(out.nvlink5_warnings, probe::nvlink5_sum(link.nvlink5, true));
      }
      out.nvlink5_effective_ber = counters.nvlink5_effective_ber;
      out.nvlink5_symbol_ber = counters.nvlink5_symbol_ber;
      out.nvlink5_ecc_errors = counters.nvlink5_ecc_errors;
    }
    sample.gpus.push_back(std::move(out));
  }
  return sample;
}

}  // namespace gpuenv::watch
