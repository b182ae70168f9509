#include "probe/nvml.hpp"

#include <atomic>
#include <cstring>
#include <memory>

#include "system/abandon.hpp"

namespace gpuenv::probe {
namespace {

// The subset of nvml.h that gpuenv uses, declared here so that no NVIDIA header or library is
// needed at build time. Layouts and signatures follow nvml.h (NVML API reference).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t k_success = 0;
constexpr nvmlReturn_t k_insufficient_size = 7;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlPciInfo_t {
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];
};

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

/// Function pointers resolved from the library; any may be null on an old driver.
struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*nvml_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*cuda_driver_version)(int*) = nullptr;
  nvmlReturn_t (*device_count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*memory_info)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*compute_capability)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*persistence_mode)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*total_ecc_errors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*retired_pages)(nvmlDevice_t, int, unsigned*, unsigned long long*) = nullptr;
  nvmlReturn_t (*retired_pages_pending)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*temperature_threshold)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*throttle_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*clock_info)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen_current)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width_current)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*running_processes)(nvmlDevice_t, unsigned*, void*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*nvlink_error_counter)(nvmlDevice_t, unsigned, int, unsigned long long*) = nullptr;
};

template <typename F>
void resolve(system::DynamicLibrary& library, F& target, const char* name) {
  target = reinterpret_cast<F>(library.symbol(name));
}

/// Resolves the versioned entry points first, as nvml.h's macros do, falling back to the originals.
NvmlApi resolve_api(system::DynamicLibrary& lib) {
  NvmlApi api;
  resolve(lib, api.init, "nvmlInit_v2");
  if (api.init == nullptr) resolve(lib, api.init, "nvmlInit");
  resolve(lib, api.shutdown, "nvmlShutdown");
  resolve(lib, api.error_string, "nvmlErrorString");
  resolve(lib, api.driver_version, "nvmlSystemGetDriverVersion");
  resolve(lib, api.nvml_version, "nvmlSystemGetNVMLVersion");
  resolve(lib, api.cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2");
  if (api.cuda_driver_version == nullptr) resolve(lib, api.cuda_driver_version, "nvmlSystemGetCudaDriverVersion");
  resolve(lib, api.device_count, "nvmlDeviceGetCount_v2");
  if (api.device_count == nullptr) resolve(lib, api.device_count, "nvmlDeviceGetCount");
  resolve(lib, api.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  if (api.handle_by_index == nullptr) resolve(lib, api.handle_by_index, "nvmlDeviceGetHandleByIndex");
  resolve(lib, api.name, "nvmlDeviceGetName");
  resolve(lib, api.uuid, "nvmlDeviceGetUUID");
  resolve(lib, api.pci_info, "nvmlDeviceGetPciInfo_v3");
  resolve(lib, api.memory_info, "nvmlDeviceGetMemoryInfo");
  resolve(lib, api.compute_capability, "nvmlDeviceGetCudaComputeCapability");
  resolve(lib, api.persistence_mode, "nvmlDeviceGetPersistenceMode");
  resolve(lib, api.mig_mode, "nvmlDeviceGetMigMode");
  resolve(lib, api.ecc_mode, "nvmlDeviceGetEccMode");
  resolve(lib, api.total_ecc_errors, "nvmlDeviceGetTotalEccErrors");
  resolve(lib, api.retired_pages, "nvmlDeviceGetRetiredPages");
  resolve(lib, api.retired_pages_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
  resolve(lib, api.remapped_rows, "nvmlDeviceGetRemappedRows");
  resolve(lib, api.temperature, "nvmlDeviceGetTemperature");
  resolve(lib, api.temperature_threshold, "nvmlDeviceGetTemperatureThreshold");
  resolve(lib, api.power_usage, "nvmlDeviceGetPowerUsage");
  resolve(lib, api.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  resolve(lib, api.utilization, "nvmlDeviceGetUtilizationRates");
  resolve(lib, api.throttle_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (api.throttle_reasons == nullptr) resolve(lib, api.throttle_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  resolve(lib, api.clock_info, "nvmlDeviceGetClockInfo");
  resolve(lib, api.pcie_gen_current, "nvmlDeviceGetCurrPcieLinkGeneration");
  resolve(lib, api.pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
  resolve(lib, api.pcie_width_current, "nvmlDeviceGetCurrPcieLinkWidth");
  resolve(lib, api.pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
  resolve(lib, api.running_processes, "nvmlDeviceGetComputeRunningProcesses");
  resolve(lib, api.nvlink_state, "nvmlDeviceGetNvLinkState");
  resolve(lib, api.nvlink_error_counter, "nvmlDeviceGetNvLinkErrorCounter");
  return api;
}

/// Calls `f(args..., &value)` when the symbol exists and returns the value on success.
template <typename T, typename F, typename... Args>
std::optional<T> query(F f, Args... args) {
  if (f == nullptr) return std::nullopt;
  T value{};
  if (f(args..., &value) != k_success) return std::nullopt;
  return value;
}

std::string query_string(nvmlReturn_t (*f)(nvmlDevice_t, char*, unsigned), nvmlDevice_t device) {
  if (f == nullptr) return {};
  char buffer[256] = {};
  if (f(device, buffer, sizeof buffer) != k_success) return {};
  return std::string(buffer, strnlen(buffer, sizeof buffer));
}

std::string error_text(const NvmlApi& api, nvmlReturn_t code) {
  if (api.error_string != nullptr) {
    if (const char* text = api.error_string(code)) return text;
  }
  return nvml_error_name(code);
}

// nvml.h: NVML_NVLINK_MAX_LINKS; nvmlNvLinkErrorCounter_t 0 replay, 1 recovery, 2 CRC flit, 3 CRC data;
// nvmlEnableState_t 1 = enabled (the link is active).
constexpr unsigned k_nvlink_max_links = 18;

/// The GPU's NVLinks: every link NVML answers for (a link number beyond the GPU's count, or a GPU without NVLink,
/// returns an error and is left out), with error counters summed over the active links.
std::optional<NvLinkFacts> read_nvlinks(const NvmlApi& api, nvmlDevice_t device) {
  if (api.nvlink_state == nullptr) return std::nullopt;
  NvLinkFacts links;
  auto add = [&](std::optional<std::uint64_t>& total, unsigned link, int counter) {
    if (api.nvlink_error_counter == nullptr) return;
    unsigned long long value = 0;
    if (api.nvlink_error_counter(device, link, counter, &value) == k_success) total = total.value_or(0) + value;
  };
  for (unsigned link = 0; link < k_nvlink_max_links; ++link) {
    int state = 0;
    if (api.nvlink_state(device, link, &state) != k_success) continue;
    (state == 1 ? links.active : links.inactive).push_back(link);
    if (state != 1) continue;
    add(links.replay_errors, link, 0);
    add(links.recovery_errors, link, 1);
    add(links.crc_errors, link, 2);
    add(links.crc_errors, link, 3);
  }
  if (links.active.empty() && links.inactive.empty()) return std::nullopt;
  return links;
}

// NVML enums used below (nvml.h): temperature sensor 0 = GPU; threshold 1 = slowdown;
// memory error type 1 = uncorrected, 0 = corrected; counter 0 = volatile, 1 = aggregate;
// page retirement cause 0 = multiple single-bit, 1 = double-bit.
GpuFacts read_device(const NvmlApi& api, unsigned index, nvmlDevice_t device) {
  GpuFacts gpu;
  gpu.index = index;
  gpu.name = query_string(api.name, device);
  gpu.uuid = query_string(api.uuid, device);
  if (auto pci = query<nvmlPciInfo_t>(api.pci_info, device))
    gpu.pci_bus_id = std::string(pci->bus_id, strnlen(pci->bus_id, sizeof pci->bus_id));
  if (auto memory = query<nvmlMemory_t>(api.memory_info, device)) {
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
      const nvmlReturn_t result = api.retired_pages(device, cause, &count, nullptr);
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
  if (auto u = query<nvmlUtilization_t>(api.utilization, device)) gpu.utilization_percent = u->gpu;
  if (auto mask = query<unsigned long long>(api.throttle_reasons, device))
    gpu.throttle_reasons = throttle_reason_names(*mask);
  gpu.sm_clock_mhz = query<unsigned>(api.clock_info, device, 1);  // nvmlClockType_t NVML_CLOCK_SM
  gpu.pcie_gen_current = query<unsigned>(api.pcie_gen_current, device);
  gpu.pcie_gen_max = query<unsigned>(api.pcie_gen_max, device);
  gpu.pcie_width_current = query<unsigned>(api.pcie_width_current, device);
  gpu.pcie_width_max = query<unsigned>(api.pcie_width_max, device);
  if (api.running_processes != nullptr) {
    unsigned count = 0;
    const nvmlReturn_t result = api.running_processes(device, &count, nullptr);
    if (result == k_success || result == k_insufficient_size) gpu.process_count = count;
  }
  gpu.nvlink = read_nvlinks(api, device);
  return gpu;
}

/// nvmlInit and the driver's versions; availability.reason says why not when the library or the init fails.
/// Returns whether NVML is initialised (and needs an nvmlShutdown).
bool init_nvml(const NvmlApi& api, const std::string& name, GpuInventory& inventory) {
  inventory.availability.source = "NVML (" + name + ")";
  if (api.init == nullptr || api.device_count == nullptr || api.handle_by_index == nullptr) {
    inventory.availability.reason = name + " does not export nvmlInit/nvmlDeviceGetCount";
    return false;
  }
  if (const nvmlReturn_t init = api.init(); init != k_success) {
    inventory.availability.reason =
        "nvmlInit failed: " + error_text(api, init) + " (NVML error " + std::to_string(init) + ")";
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
void read_gpus(const NvmlApi& api, GpuInventory& inventory) {
  unsigned count = 0;
  if (const nvmlReturn_t result = api.device_count(&count); result != k_success) {
    inventory.availability.reason = "nvmlDeviceGetCount failed: " + error_text(api, result);
    return;
  }
  inventory.attached_gpus = count;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (const nvmlReturn_t result = api.handle_by_index(i, &device); result != k_success) {
      GpuFacts lost;
      lost.index = i;
      lost.name = "(inaccessible)";
      lost.access_error = error_text(api, result);
      inventory.gpus.push_back(lost);
      continue;
    }
    inventory.gpus.push_back(read_device(api, i, device));
  }
  inventory.availability.available = true;
}

GpuInventory read_all(system::DynamicLibrary& library, const std::string& name) {
  GpuInventory inventory;
  const NvmlApi api = resolve_api(library);
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
  NvmlApi api;
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
  state->api = resolve_api(*state->library);
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

GpuInventory NvmlSession::read(std::chrono::milliseconds timeout) {
  GpuInventory failed;
  failed.availability.source = m_state->header.availability.source;
  if (hung()) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                          m_state->call_started);
    failed.availability.reason = "an NVML call has not returned for " + std::to_string(seconds.count()) +
                                 " s (a hung GPU or driver); NVML is read again once it returns";
    return failed;
  }
  auto inventory = call_in_session<GpuInventory>(
      m_state,
      [](State& s) {
        GpuInventory read = s.header;
        read.availability.reason.clear();
        read_gpus(s.api, read);
        return read;
      },
      timeout);
  if (!inventory) {
    failed.availability.reason =
        "NVML did not answer within " + std::to_string(timeout.count()) + " ms (a hung GPU or driver)";
    return failed;
  }
  return std::move(*inventory);
}

}  // namespace gpuenv::probe
