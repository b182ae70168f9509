#include "probe/nvml.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "probe/nvml_api.hpp"
#include "system/abandon.hpp"

namespace gpuenv::probe {
namespace {

using nvml::Api;
using nvml::Device;
using nvml::k_insufficient_size;
using nvml::k_success;
using nvml::query;
using nvml::query_string;

/// The GPU's NVLinks: every link NVML answers for (a link number beyond the GPU's count, or a GPU without NVLink,
/// returns an error and is left out), with error counters summed over the active links (nvmlEnableState_t 1 = enabled:
/// the link is active); NVLink5's counters summed per field (probe/nvlink5.hpp).
std::optional<NvLinkFacts> read_nvlinks(const Api& api, Device device) {
  if (api.nvlink_state == nullptr) return std::nullopt;
  NvLinkFacts links;
  const auto add = [](std::optional<std::uint64_t>& total, const std::optional<std::uint64_t>& value) {
    if (value) total = total.value_or(0) + *value;
  };
  for (unsigned link = 0; link < nvml::k_nvlink_max_links; ++link) {
    int state = 0;
    if (api.nvlink_state(device, link, &state) != k_success) continue;
    (state == 1 ? links.active : links.inactive).push_back(link);
    if (state != 1) continue;
    NvLinkCounters counters;
    nvml::read_nvlink_errors(nvml::nvlink_error_calls(api), device, link, counters);
    add(links.replay_errors, counters.replay);
    add(links.recovery_errors, counters.recovery);
    add(links.crc_errors, counters.crc_flit);
    add(links.crc_errors, counters.crc_data);
    for (const NvLink5Counter& counter : counters.nvlink5) {
      const auto known = std::find_if(links.nvlink5.begin(), links.nvlink5.end(),
                                      [&](const NvLink5Counter& total) { return total.field == counter.field; });
      if (known == links.nvlink5.end()) {
        links.nvlink5.push_back(counter);
      } else {
        known->value += counter.value;
      }
    }
  }
  if (links.active.empty() && links.inactive.empty()) return std::nullopt;
  return links;
}

/// "dc6e40c4-d722-4357-9ba6-5291dd461278" from nvml.h's 16-byte clusterUuid.
std::string uuid_text(const unsigned char (&bytes)[16]) {
  static const char* const hex = "0123456789abcdef";
  std::string text;
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += hex[bytes[i] >> 4];
    text += hex[bytes[i] & 0xf];
  }
  return text;
}

/// The fields every version of nvmlGpuFabricInfo shares.
GpuFabricInfo fabric_info(const Api& api, unsigned char state, nvml::Return status, unsigned clique,
                          const unsigned char (&uuid)[16], std::string source) {
  GpuFabricInfo info;
  info.state = state <= 3 ? static_cast<GpuFabricInfo::State>(state) : GpuFabricInfo::State::not_supported;
  info.status_ok = status == k_success;
  info.status = info.status_ok ? "Success" : nvml::error_text(api, status);
  info.clique_id = clique;
  info.cluster_uuid = uuid_text(uuid);
  info.source = std::move(source);
  return info;
}

/// The GPU's NVLink fabric registration: nvmlDeviceGetGpuFabricInfoV with the v3 structure (health summary), v2 on a
/// driver that refuses v3 (NVML_ERROR_ARGUMENT_VERSION_MISMATCH), else the v1 call. NVML_ERROR_NOT_SUPPORTED (before
/// Hopper, or a GPU outside any NVLink fabric) is reported as the state "Not Supported"; nullopt when neither call
/// exists or the call fails otherwise.
std::optional<GpuFabricInfo> read_fabric_info(const Api& api, Device device) {
  const auto unsupported = [](std::string source) {
    GpuFabricInfo info;
    info.source = std::move(source);
    return info;
  };
  if (api.gpu_fabric_info_v != nullptr) {
    nvml::GpuFabricInfoV3 v{};
    v.version = nvml::fabric_info_v3;
    nvml::Return result = api.gpu_fabric_info_v(device, &v);
    if (result == nvml::k_argument_version_mismatch) {
      v = {};
      v.version = nvml::fabric_info_v2;
      result = api.gpu_fabric_info_v(device, &v);
    }
    if (result == nvml::k_not_supported) return unsupported("nvmlDeviceGetGpuFabricInfoV");
    if (result == k_success) {
      GpuFabricInfo info =
          fabric_info(api, v.state, v.status, v.clique_id, v.cluster_uuid, "nvmlDeviceGetGpuFabricInfoV");
      // nvml.h NVML_GPU_FABRIC_HEALTH_SUMMARY_*: 0 not supported, 1 healthy, 2 unhealthy, 3 limited capacity.
      static const char* const summaries[] = {"", "Healthy", "Unhealthy", "Limited Capacity"};
      if ((v.version >> 24) >= 3 && v.health_summary <= 3) info.health_summary = summaries[v.health_summary];
      return info;
    }
  }
  if (api.gpu_fabric_info != nullptr) {
    nvml::GpuFabricInfoV1 v{};
    const nvml::Return result = api.gpu_fabric_info(device, &v);
    if (result == nvml::k_not_supported) return unsupported("nvmlDeviceGetGpuFabricInfo");
    if (result == k_success)
      return fabric_info(api, v.state, v.status, v.clique_id, v.cluster_uuid, "nvmlDeviceGetGpuFabricInfo");
  }
  return std::nullopt;
}

// NVML enums used below (nvml.h): temperature sensor 0 = GPU; threshold 1 = slowdown;
// memory error type 1 = uncorrected, 0 = corrected; counter 0 = volatile, 1 = aggregate;
// page retirement cause 0 = multiple single-bit, 1 = double-bit.
GpuFacts read_device(const Api& api, unsigned index, Device device) {
  GpuFacts gpu;
  gpu.index = index;
  gpu.name = query_string(api.name, device);
  gpu.uuid = query_string(api.uuid, device);
  if (auto pci = query<nvml::PciInfo>(api.pci_info, device))
    gpu.pci_bus_id = std::string(pci->bus_id, strnlen(pci->bus_id, sizeof pci->bus_id));
  if (auto memory = query<nvml::Memory>(api.memory_info, device)) {
    gpu.memory_total_mib = memory->total / (1024 * 1024);
    gpu.memory_used_mib = memory->used / (1024 * 1024);
  }
  if (api.compute_capability != nullptr) {
    int major = 0;
    int minor = 0;
    if (api.compute_capability(device, &major, &minor) == k_success)
      gpu.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  }
  if (auto mode = query<int>(api.persistence_mode, device)) gpu.persistence_mode = *mode == 1;
  if (api.mig_mode != nullptr) {
    unsigned current = 0;
    unsigned pending = 0;
    if (api.mig_mode(device, &current, &pending) == k_success) gpu.mig_enabled = current == 1;
  }
  if (api.ecc_mode != nullptr) {
    int current = 0;
    int pending = 0;
    if (api.ecc_mode(device, &current, &pending) == k_success) gpu.ecc_enabled = current == 1;
  }
  gpu.ecc_uncorrected_volatile = query<unsigned long long>(api.total_ecc_errors, device, 1, 0);
  gpu.ecc_uncorrected_aggregate = query<unsigned long long>(api.total_ecc_errors, device, 1, 1);
  gpu.ecc_corrected_volatile = query<unsigned long long>(api.total_ecc_errors, device, 0, 0);
  if (api.retired_pages != nullptr) {
    for (int cause : {0, 1}) {
      unsigned count = 0;
      // A zero-sized buffer asks only for the count.
      const nvml::Return result = api.retired_pages(device, cause, &count, nullptr);
      if (result == k_success || result == k_insufficient_size) {
        (cause == 0 ? gpu.retired_pages_single_bit : gpu.retired_pages_double_bit) = count;
      }
    }
  }
  if (auto pending = query<int>(api.retired_pages_pending, device)) gpu.retired_pages_pending = *pending == 1;
  if (api.remapped_rows != nullptr) {
    unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
    if (api.remapped_rows(device, &corrected, &uncorrected, &pending, &failure) == k_success) {
      gpu.remapped_rows_correctable = corrected;
      gpu.remapped_rows_uncorrectable = uncorrected;
      gpu.remapped_rows_pending = pending != 0;
      gpu.remapped_rows_failure = failure != 0;
    }
  }
  if (auto t = query<unsigned>(api.temperature, device, 0)) gpu.temperature_c = *t;
  if (auto t = query<unsigned>(api.temperature_threshold, device, 1)) gpu.temperature_slowdown_c = *t;
  if (auto p = query<unsigned>(api.power_usage, device)) gpu.power_draw_w = *p / 1000.0;
  if (auto p = query<unsigned>(api.power_limit, device)) gpu.power_limit_w = *p / 1000.0;
  if (auto u = query<nvml::Utilization>(api.utilization, device)) gpu.utilization_percent = u->gpu;
  if (auto mask = query<unsigned long long>(api.throttle_reasons, device))
    gpu.throttle_reasons = throttle_reason_names(*mask);
  gpu.sm_clock_mhz = query<unsigned>(api.clock_info, device, 1);  // nvmlClockType_t NVML_CLOCK_SM
  gpu.pcie_gen_current = query<unsigned>(api.pcie_gen_current, device);
  gpu.pcie_gen_max = query<unsigned>(api.pcie_gen_max, device);
  gpu.pcie_width_current = query<unsigned>(api.pcie_width_current, device);
  gpu.pcie_width_max = query<unsigned>(api.pcie_width_max, device);
  if (api.running_processes != nullptr) {
    unsigned count = 0;
    const nvml::Return result = api.running_processes(device, &count, nullptr);
    if (result == k_success || result == k_insufficient_size) gpu.process_count = count;
  }
  gpu.nvlink = read_nvlinks(api, device);
  gpu.fabric = read_fabric_info(api, device);
  return gpu;
}

/// nvmlInit and the driver's versions; availability.reason says why not when the library or the init fails.
/// Returns whether NVML is initialised (and needs an nvmlShutdown).
bool init_nvml(const Api& api, const std::string& name, GpuInventory& inventory) {
  inventory.availability.source = "NVML (" + name + ")";
  if (api.init == nullptr || api.device_count == nullptr || api.handle_by_index == nullptr) {
    inventory.availability.reason = name + " does not export nvmlInit/nvmlDeviceGetCount";
    return false;
  }
  if (const nvml::Return init = api.init(); init != k_success) {
    inventory.availability.reason =
        "nvmlInit failed: " + nvml::error_text(api, init) + " (NVML error " + std::to_string(init) + ")";
    return false;
  }
  char buffer[96] = {};
  if (api.driver_version != nullptr && api.driver_version(buffer, sizeof buffer) == k_success)
    inventory.driver_version = buffer;
  std::memset(buffer, 0, sizeof buffer);
  if (api.nvml_version != nullptr && api.nvml_version(buffer, sizeof buffer) == k_success)
    inventory.nvml_version = buffer;
  if (auto cuda = query<int>(api.cuda_driver_version)) {
    inventory.cuda_driver_version = std::to_string(*cuda / 1000) + "." + std::to_string((*cuda % 1000) / 10);
  }
  return true;
}

/// Every GPU of an initialised NVML into `inventory` (a GPU whose handle fails is listed with its error).
void read_gpus(const Api& api, GpuInventory& inventory) {
  unsigned count = 0;
  if (const nvml::Return result = api.device_count(&count); result != k_success) {
    inventory.availability.reason = "nvmlDeviceGetCount failed: " + nvml::error_text(api, result);
    return;
  }
  inventory.attached_gpus = count;
  for (unsigned i = 0; i < count; ++i) {
    Device device = nullptr;
    if (const nvml::Return result = api.handle_by_index(i, &device); result != k_success) {
      GpuFacts lost;
      lost.index = i;
      lost.name = "(inaccessible)";
      lost.access_error = nvml::error_text(api, result);
      inventory.gpus.push_back(lost);
      continue;
    }
    inventory.gpus.push_back(read_device(api, i, device));
  }
  inventory.availability.available = true;
}

GpuInventory read_all(system::DynamicLibrary& library, const std::string& name) {
  GpuInventory inventory;
  const Api api = nvml::resolve(library);
  if (!init_nvml(api, name, inventory)) return inventory;
  read_gpus(api, inventory);
  if (api.shutdown != nullptr) api.shutdown();
  return inventory;
}

}  // namespace

std::string nvml_error_name(int code) {
  switch (code) {
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 6:
      return "Not Found";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 12:
      return "NVML Shared Library Not Found";
    case 14:
      return "Corrupted infoROM";
    case 15:
      return "GPU is lost";
    case 16:
      return "GPU requires restart";
    case 18:
      return "RM has detected an NVML/RM version mismatch";
    case 999:
      return "Unknown Error";
    default:
      return "NVML error " + std::to_string(code);
  }
}

std::vector<std::string> throttle_reason_names(unsigned long long mask) {
  // nvml.h nvmlClocksEventReason* bits; 0x1 (idle) and 0x2 (application clocks) are not problems.
  static const std::pair<unsigned long long, const char*> bits[] = {
      {0x4, "sw_power_cap"},         {0x8, "hw_slowdown"},          {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"}, {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},
  };
  std::vector<std::string> names;
  for (const auto& [bit, name] : bits) {
    if ((mask & bit) != 0) names.emplace_back(name);
  }
  return names;
}

GpuInventory read_nvml(system::System& system, const std::string& library, std::chrono::milliseconds timeout) {
  GpuInventory failed;
  failed.availability.source = "NVML (" + library + ")";
  auto loaded = system.load_library(library);
  if (!loaded) {
    failed.availability.reason = "cannot load " + library + ": " + loaded.error().message;
    return failed;
  }
  // NVML calls can hang on a sick GPU: run them on a thread that is abandoned at the timeout (system/abandon.hpp).
  auto inventory = system::call_abandonable<GpuInventory>(
      std::shared_ptr<system::DynamicLibrary>(std::move(*loaded)),
      [library](system::DynamicLibrary& handle) { return read_all(handle, library); }, timeout);
  if (!inventory) {
    failed.availability.reason =
        "NVML did not answer within " + std::to_string(timeout.count()) + " ms (a hung GPU or driver)";
    return failed;
  }
  return std::move(*inventory);
}

// ------------------------------------------------------------------------------------------------ session

/// What a session's calls share with the threads they run on: an abandoned call keeps it (and NVML) alive.
struct NvmlSession::State {
  std::shared_ptr<system::DynamicLibrary> library;
  std::string name;
  Api api;
  GpuInventory header;  ///< the driver's versions, read at nvmlInit
  bool initialised = false;
  std::atomic<bool> in_call{false};
  std::chrono::steady_clock::time_point call_started{};

  ~State() {
    if (initialised && api.shutdown != nullptr) api.shutdown();
  }
};

namespace {

/// Runs `work(state)` on an abandonable thread; nullopt when it misses `limit` (the state then stays marked in_call
/// until the thread returns).
template <typename T, typename Work>
std::optional<T> call_in_session(const std::shared_ptr<NvmlSession::State>& state, Work work,
                                 std::chrono::milliseconds limit) {
  state->in_call = true;
  state->call_started = std::chrono::steady_clock::now();
  return system::call_abandonable<T>(
      state->library,
      [state, work = std::move(work)](system::DynamicLibrary&) {
        T result = work(*state);
        state->in_call = false;
        return result;
      },
      limit);
}

}  // namespace

std::unique_ptr<NvmlSession> NvmlSession::open(system::System& system, const std::string& library,
                                               std::chrono::milliseconds timeout, Availability& why_not) {
  why_not = Availability{false, "NVML (" + library + ")", ""};
  auto loaded = system.load_library(library);
  if (!loaded) {
    why_not.reason = "cannot load " + library + ": " + loaded.error().message;
    return nullptr;
  }
  auto state = std::make_shared<State>();
  state->library = std::shared_ptr<system::DynamicLibrary>(std::move(*loaded));
  state->name = library;
  state->api = nvml::resolve(*state->library);
  const auto initialised = call_in_session<bool>(
      state, [](State& s) { return s.initialised = init_nvml(s.api, s.name, s.header); }, timeout);
  if (!initialised) {
    why_not.reason = "nvmlInit did not return within " + std::to_string(timeout.count()) + " ms (a hung GPU or driver)";
    return nullptr;
  }
  if (!*initialised) {
    why_not.reason = state->header.availability.reason;
    return nullptr;
  }
  return std::unique_ptr<NvmlSession>(new NvmlSession(std::move(state)));
}

NvmlSession::~NvmlSession() = default;

bool NvmlSession::hung() const { return m_state->in_call.load(); }

GpuInventory NvmlSession::read(std::chrono::milliseconds timeout, std::vector<GpuLinkCounters>* links) {
  GpuInventory failed;
  failed.availability.source = m_state->header.availability.source;
  if (hung()) {
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - m_state->call_started);
    failed.availability.reason = "an NVML call has not returned for " + std::to_string(seconds.count()) +
                                 " s (a hung GPU or driver); NVML is read again once it returns";
    return failed;
  }
  using Reading = std::pair<GpuInventory, std::vector<GpuLinkCounters>>;
  auto reading = call_in_session<Reading>(
      m_state,
      [want_links = links != nullptr](State& s) {
        Reading read{s.header, {}};
        read.first.availability.reason.clear();
        read_gpus(s.api, read.first);
        if (!want_links || !read.first.availability.available) return read;
        // The link counters of the same moment, as link_counters.cpp reads them for doctor (per NVLink, PCIe).
        for (const GpuFacts& gpu : read.first.gpus) {
          Device device = nullptr;
          if (gpu.access_error.empty() && s.api.handle_by_index(gpu.index, &device) == k_success)
            read.second.push_back(nvml::read_link_counters(s.api, gpu.index, device));
        }
        return read;
      },
      timeout);
  if (!reading) {
    failed.availability.reason =
        "NVML did not answer within " + std::to_string(timeout.count()) + " ms (a hung GPU or driver)";
    return failed;
  }
  if (links != nullptr) *links = std::move(reading->second);
  return std::move(reading->first);
}

}  // namespace gpuenv::probe
