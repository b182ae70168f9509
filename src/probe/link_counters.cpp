#include "probe/link_counters.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "probe/nvlink5.hpp"
#include "probe/nvml_api.hpp"
#include "probe/rdma.hpp"
#include "system/abandon.hpp"
#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

using nvml::Api;
using nvml::Device;
using nvml::k_success;

}  // namespace

GpuLinkCounters nvml::read_link_counters(const Api& api, unsigned index, Device device) {
  GpuLinkCounters gpu;
  gpu.index = index;
  gpu.uuid = nvml::query_string(api.uuid, device);
  if (auto pci = nvml::query<nvml::PciInfo>(api.pci_info, device))
    gpu.pci_bus_id = std::string(pci->bus_id, strnlen(pci->bus_id, sizeof pci->bus_id));
  if (auto replays = nvml::query<unsigned>(api.pcie_replay_counter, device)) gpu.pcie_replays = *replays;
  gpu.pcie_gen = nvml::query<unsigned>(api.pcie_gen_current, device);
  gpu.pcie_width = nvml::query<unsigned>(api.pcie_width_current, device);
  if (api.nvlink_state == nullptr) return gpu;
  for (unsigned link = 0; link < nvml::k_nvlink_max_links; ++link) {
    int state = 0;
    if (api.nvlink_state(device, link, &state) != k_success) continue;
    NvLinkCounters counters;
    counters.link = link;
    counters.active = state == 1;  // nvmlEnableState_t NVML_FEATURE_ENABLED
    nvml::read_nvlink_errors(nvml::nvlink_error_calls(api), device, link, counters);
    gpu.nvlinks.push_back(counters);
  }
  // The rates over all links whenever the GPU has a link (not only when a link gave NVLink5 counters): NVML answers
  // NOT_SUPPORTED before NVLink5, which leaves them unknown.
  if (!gpu.nvlinks.empty()) {
    const nvml::NvLink5Rates rates = nvml::read_nvlink5_rates(nvml::nvlink_error_calls(api), device);
    gpu.nvlink5_effective_ber = rates.effective_ber;
    gpu.nvlink5_symbol_ber = rates.symbol_ber;
    gpu.nvlink5_ecc_errors = rates.ecc_errors;
  }
  return gpu;
}

namespace {

/// The GPU half of a snapshot, on the caller's (abandonable) thread.
LinkCounterSnapshot read_gpus(system::DynamicLibrary& library, const std::string& name) {
  LinkCounterSnapshot snapshot;
  const Api api = nvml::resolve(library);
  if (api.init == nullptr || api.device_count == nullptr || api.handle_by_index == nullptr) {
    snapshot.nvml_reason = name + " does not export nvmlInit/nvmlDeviceGetCount";
    return snapshot;
  }
  if (const nvml::Return init = api.init(); init != k_success) {
    snapshot.nvml_reason = "nvmlInit failed: " + nvml::error_text(api, init);
    return snapshot;
  }
  unsigned count = 0;
  if (const nvml::Return result = api.device_count(&count); result != k_success) {
    snapshot.nvml_reason = "nvmlDeviceGetCount failed: " + nvml::error_text(api, result);
  } else {
    for (unsigned i = 0; i < count; ++i) {
      Device device = nullptr;
      if (api.handle_by_index(i, &device) == k_success)
        snapshot.gpus.push_back(nvml::read_link_counters(api, i, device));
    }
    snapshot.nvml = true;
  }
  if (api.shutdown != nullptr) api.shutdown();
  return snapshot;
}

std::optional<std::uint64_t> read_counter(system::System& system, const std::string& path) {
  auto text = system.read_file(path, system::FileKind::host_text);
  if (!text) return std::nullopt;
  const auto value = util::parse_int(util::trim(*text));
  if (!value || *value < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*value);
}

std::vector<PortCounters> read_ports(system::System& system) {
  std::vector<PortCounters> ports;
  for (const auto& [device, port] : list_rdma_ports(system)) {
    const std::string base = "/sys/class/infiniband/" + device + "/ports/" + std::to_string(port) + "/counters/";
    PortCounters counters;
    counters.device = device;
    counters.port = port;
    counters.link_downed = read_counter(system, base + "link_downed");
    counters.link_error_recovery = read_counter(system, base + "link_error_recovery");
    counters.symbol_error = read_counter(system, base + "symbol_error");
    counters.port_rcv_errors = read_counter(system, base + "port_rcv_errors");
    ports.push_back(counters);
  }
  return ports;
}

CounterGrowth growth(const std::optional<std::uint64_t>& before, const std::optional<std::uint64_t>& after) {
  if (!before || !after) return std::nullopt;
  return *after >= *before ? *after - *before : *after;  // reset in between: everything since the reset is new
}

CounterGrowth sum(const CounterGrowth& a, const CounterGrowth& b) {
  if (!a && !b) return std::nullopt;
  return a.value_or(0) + b.value_or(0);
}

const GpuLinkCounters* matching_gpu(const LinkCounterSnapshot& snapshot, const GpuLinkCounters& gpu) {
  for (const GpuLinkCounters& other : snapshot.gpus) {
    if (!gpu.uuid.empty() ? other.uuid == gpu.uuid : other.index == gpu.index) return &other;
  }
  return nullptr;
}

GpuLinkGrowth gpu_growth(const GpuLinkCounters& before, const GpuLinkCounters& after) {
  GpuLinkGrowth out;
  out.index = after.index;
  out.pci_bus_id = after.pci_bus_id;
  out.pcie_replays = growth(before.pcie_replays, after.pcie_replays);
  out.pcie_gen = after.pcie_gen;
  out.pcie_width = after.pcie_width;
  out.nvlink5_effective_ber = after.nvlink5_effective_ber;
  out.nvlink5_symbol_ber = after.nvlink5_symbol_ber;
  out.nvlink5_ecc_errors = nvlink_ecc_growth(before.nvlink5_ecc_errors, after.nvlink5_ecc_errors);
  for (const NvLinkCounters& link : after.nvlinks) {
    NvLinkGrowth g;
    g.link = link.link;
    g.active_after = link.active;
    for (const NvLinkCounters& earlier : before.nvlinks) {
      if (earlier.link != link.link) continue;
      g.active_before = earlier.active;
      g.replay = growth(earlier.replay, link.replay);
      g.recovery = growth(earlier.recovery, link.recovery);
      g.crc = sum(growth(earlier.crc_flit, link.crc_flit), growth(earlier.crc_data, link.crc_data));
      g.nvlink5 = nvlink5_growth(earlier.nvlink5, link.nvlink5);
    }
    out.nvlinks.push_back(g);
  }
  return out;
}

}  // namespace

LinkCounterSnapshot read_link_counters(system::System& system, const LinkCounterOptions& options) {
  LinkCounterSnapshot snapshot;
  if (options.nvml_library.empty()) {
    snapshot.nvml_reason = "NVML was not asked for";
  } else if (auto loaded = system.load_library(options.nvml_library); !loaded) {
    snapshot.nvml_reason = "cannot load " + options.nvml_library + ": " + loaded.error().message;
  } else {
    auto read = system::call_abandonable<LinkCounterSnapshot>(
        std::shared_ptr<system::DynamicLibrary>(std::move(*loaded)),
        [name = options.nvml_library](system::DynamicLibrary& library) { return read_gpus(library, name); },
        options.timeout);
    if (read) {
      snapshot = std::move(*read);
    } else {
      snapshot.nvml_reason =
          "NVML did not answer within " + std::to_string(options.timeout.count()) + " ms (a hung GPU or driver)";
    }
  }
  snapshot.ports = read_ports(system);
  snapshot.taken_ms = std::chrono::duration_cast<std::chrono::milliseconds>(system.now().time_since_epoch()).count();
  return snapshot;
}

LinkCounterGrowth link_counter_growth(const LinkCounterSnapshot& before, const LinkCounterSnapshot& after) {
  LinkCounterGrowth out;
  out.seconds = after.taken_ms > before.taken_ms ? static_cast<double>(after.taken_ms - before.taken_ms) / 1000 : 0;
  for (const GpuLinkCounters& gpu : after.gpus) {
    if (const GpuLinkCounters* earlier = matching_gpu(before, gpu)) out.gpus.push_back(gpu_growth(*earlier, gpu));
  }
  for (const PortCounters& port : after.ports) {
    for (const PortCounters& earlier : before.ports) {
      if (earlier.device != port.device || earlier.port != port.port) continue;
      out.ports.push_back({port.device, port.port, growth(earlier.link_downed, port.link_downed),
                           growth(earlier.link_error_recovery, port.link_error_recovery),
                           growth(earlier.symbol_error, port.symbol_error),
                           growth(earlier.port_rcv_errors, port.port_rcv_errors)});
    }
  }
  return out;
}

}  // namespace gpuenv::probe
