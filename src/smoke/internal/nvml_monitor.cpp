#include "smoke/internal/nvml_monitor.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <future>
#include <limits>
#include <string_view>
#include <thread>

#include "probe/nvml.hpp"
#include "probe/nvml_api.hpp"
#include "system/abandon.hpp"
#include "util/strings.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

using NvmlDevice = probe::nvml::Device;
using NvmlReturn = probe::nvml::Return;

namespace {

constexpr int nvml_success = 0;
constexpr int nvml_insufficient_size = 7;  // retired pages: the count is set, the address array was too small
constexpr int nvml_clock_sm = 1;           // nvmlClockType_t NVML_CLOCK_SM
constexpr int nvml_memory_error_corrected = 0, nvml_memory_error_uncorrected = 1;
constexpr int nvml_volatile_ecc = 0;
constexpr int nvml_double_bit_ecc_retirement = 1;  // nvmlPageRetirementCause_t
constexpr int nvml_invalid_argument = 2;
/// nvml.h: NVML_NVLINK_MAX_LINKS (18 in older headers, 36 in NVML 13); a link past the GPU's last answers
/// NVML_ERROR_INVALID_ARGUMENT.
constexpr unsigned nvlink_max_links = 36;
/// nvml.h nvmlProcessInfo_t (the _v2/_v3 calls) and nvmlProcessInfo_v1_t (the unversioned call): pid first.
struct ProcessInfoV2 {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};
struct ProcessInfoV1 {
  unsigned pid;
  unsigned long long used_gpu_memory;
};
/// Reasons that mean the GPU slowed for heat or a hardware signal (nvml.h nvmlClocksEventReason*): HW slowdown,
/// SW thermal, HW thermal, HW power brake. A power cap (0x4) under a full GEMM is the GPU working as configured.
constexpr unsigned long long throttled_reasons = 0x8 | 0x20 | 0x40 | 0x80;

/// "0000:1b:00.0" (or any domain width and case) -> "00000000:1B:00.0", NVML's own form.
std::string nvml_bus_id(const std::string& id) {
  const auto colon = id.find(':');
  if (colon == std::string::npos) return id;
  const std::optional<unsigned long long> domain = util::parse_unsigned(id.substr(0, colon), 0xffffffff, 16);
  if (!domain) return id;
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%08llX", *domain);
  std::string rest = id.substr(colon);
  std::transform(rest.begin(), rest.end(), rest.begin(), [](unsigned char c) { return std::toupper(c); });
  return prefix + rest;
}

std::string mhz(unsigned value) { return std::to_string(value) + " MHz"; }

}  // namespace

std::shared_ptr<NvmlMonitor> NvmlMonitor::open(system::System& system, const std::string& library) {
  if (library.empty()) return nullptr;
  auto loaded = system.load_library(library);
  if (!loaded) return nullptr;
  std::shared_ptr<NvmlMonitor> monitor(new NvmlMonitor());
  monitor->m_library = std::move(*loaded);
  monitor->m_api = std::make_unique<probe::nvml::Api>(probe::nvml::resolve(*monitor->m_library));
  const probe::nvml::Api& api = *monitor->m_api;
  // The three calls the monitor cannot do without, by the names it has always required (not the unversioned init).
  const bool usable = api.init != nullptr && std::string_view(api.init_name) == "nvmlInit_v2" &&
                      api.shutdown != nullptr && api.handle_by_pci_bus_id != nullptr;
  if (!usable) return nullptr;
  // nvmlInit on a wedged driver can block: give it a deadline, and leave the thread (it co-owns the monitor) if it
  // misses it.
  auto done = std::make_shared<std::promise<NvmlReturn>>();
  std::future<NvmlReturn> result = done->get_future();
  std::thread([monitor, done] { done->set_value(monitor->m_api->init()); }).detach();
  const bool finished = result.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!finished) system::note_abandoned_work();  // a thread is still inside NVML: cli must leave with _Exit
  if (!finished || result.get() != nvml_success) {
    monitor->m_api->shutdown = nullptr;  // not initialised: nothing to shut down
    return nullptr;
  }
  return monitor;
}

NvmlMonitor::~NvmlMonitor() {
  if (m_api && m_api->shutdown != nullptr) m_api->shutdown();
}

NvmlDevice NvmlMonitor::handle(const std::string& pci_bus_id) const {
  NvmlDevice device = nullptr;
  // NVML wants its own form of the bus id ("00000000:1B:00.0"); cuDeviceGetPCIBusId may give "0000:1b:00.0".
  for (const std::string& id : {pci_bus_id, nvml_bus_id(pci_bus_id)}) {
    if (m_api->handle_by_pci_bus_id(id.c_str(), &device) == nvml_success) return device;
  }
  return nullptr;
}

std::optional<ClockSample> NvmlMonitor::clocks(const std::string& pci_bus_id) const {
  NvmlDevice device = handle(pci_bus_id);
  if (device == nullptr || m_api->clock_info == nullptr) return std::nullopt;
  ClockSample sample;
  if (m_api->clock_info(device, nvml_clock_sm, &sample.sm_mhz) != nvml_success) return std::nullopt;
  unsigned max = 0;
  if (m_api->max_clock_info != nullptr && m_api->max_clock_info(device, nvml_clock_sm, &max) == nvml_success)
    sample.sm_max_mhz = max;
  if (m_api->throttle_reasons != nullptr && m_api->throttle_reasons(device, &sample.reasons) != nvml_success)
    sample.reasons = 0;
  return sample;
}

MemoryErrorCounters NvmlMonitor::memory_errors(const std::string& pci_bus_id) const {
  MemoryErrorCounters out;
  NvmlDevice device = handle(pci_bus_id);
  if (device == nullptr) return out;
  if (m_api->total_ecc_errors != nullptr) {
    unsigned long long count = 0;
    if (m_api->total_ecc_errors(device, nvml_memory_error_corrected, nvml_volatile_ecc, &count) == nvml_success)
      out.ecc_corrected = count;
    if (m_api->total_ecc_errors(device, nvml_memory_error_uncorrected, nvml_volatile_ecc, &count) == nvml_success)
      out.ecc_uncorrected = count;
  }
  if (m_api->remapped_rows != nullptr) {
    unsigned correctable = 0, uncorrectable = 0, pending = 0, failure = 0;
    if (m_api->remapped_rows(device, &correctable, &uncorrectable, &pending, &failure) == nvml_success) {
      out.remapped_correctable = correctable;
      out.remapped_uncorrectable = uncorrectable;
      out.remap_pending = pending != 0;
      out.remap_failure = failure != 0;
    }
  }
  if (m_api->retired_pages != nullptr) {
    unsigned count = 0;  // with no address array NVML only counts
    const NvmlReturn result = m_api->retired_pages(device, nvml_double_bit_ecc_retirement, &count, nullptr);
    if (result == nvml_success || result == nvml_insufficient_size) out.retired_pages_double_bit = count;
  }
  return out;
}

namespace {

/// The PIDs of nvmlProcessInfo structures of type `Info` (count first asked with 0: NVML_ERROR_INSUFFICIENT_SIZE and
/// the count, or success and none).
template <typename Info>
std::optional<std::vector<unsigned>> process_ids(NvmlReturn (*call)(NvmlDevice, unsigned*, void*), NvmlDevice device) {
  if (call == nullptr) return std::nullopt;
  unsigned count = 0;
  NvmlReturn result = call(device, &count, nullptr);
  if (result == nvml_success) return std::vector<unsigned>{};
  if (result != nvml_insufficient_size) return std::nullopt;
  std::vector<Info> infos(count + 8);  // "allocate more space ... in case new compute processes are spawned" (nvml.h)
  count = static_cast<unsigned>(infos.size());
  result = call(device, &count, infos.data());
  if (result != nvml_success) return std::nullopt;
  std::vector<unsigned> pids;
  for (unsigned i = 0; i < count && i < infos.size(); ++i) pids.push_back(infos[i].pid);
  return pids;
}

}  // namespace

GpuUsage NvmlMonitor::usage(const std::string& pci_bus_id) const {
  GpuUsage out;
  NvmlDevice device = handle(pci_bus_id);
  if (device == nullptr) return out;
  out.pids = m_api->running_processes_v2 != nullptr ? process_ids<ProcessInfoV2>(m_api->running_processes_v2, device)
                                                    : process_ids<ProcessInfoV1>(m_api->running_processes, device);
  probe::nvml::Utilization rates{};
  if (m_api->utilization != nullptr && m_api->utilization(device, &rates) == nvml_success) out.utilization = rates.gpu;
  return out;
}

FabricCounters NvmlMonitor::fabric_counters(const std::string& pci_bus_id) const {
  FabricCounters out;
  NvmlDevice device = handle(pci_bus_id);
  if (device == nullptr) return out;
  unsigned replays = 0;
  if (m_api->pcie_replay_counter != nullptr && m_api->pcie_replay_counter(device, &replays) == nvml_success)
    out.pcie_replays = replays;
  if (m_api->nvlink_state == nullptr) return out;
  const probe::nvml::NvLinkErrorCalls calls = probe::nvml::nvlink_error_calls(*m_api);
  for (unsigned link = 0; link < nvlink_max_links; ++link) {
    int active = 0;
    const NvmlReturn state = m_api->nvlink_state(device, link, &active);
    if (state == nvml_invalid_argument) break;  // past the GPU's last link
    if (state != nvml_success) continue;        // not supported on this link (or no NVLink at all)
    NvLinkCounters counters;
    counters.link = link;
    counters.active = active != 0;
    // probe's reader: the older counters and the NVML_FI_DEV_NVLINK_COUNT_* fields of probe's table, each as answered.
    probe::NvLinkCounters read;
    probe::nvml::read_nvlink_errors(calls, device, link, read);
    counters.replay = read.replay;
    counters.recovery = read.recovery;
    counters.crc_flit = read.crc_flit;
    counters.crc_data = read.crc_data;
    counters.nvlink5 = std::move(read.nvlink5);
    out.nvlinks.push_back(counters);
  }
  // The rates whenever the GPU has a link, as smoke read them before probe's reader (NOT_SUPPORTED before NVLink5).
  if (!out.nvlinks.empty()) {
    const probe::nvml::NvLink5Rates rates = probe::nvml::read_nvlink5_rates(calls, device);
    out.nvlink5_effective_ber = rates.effective_ber;
    out.nvlink5_symbol_ber = rates.symbol_ber;
    out.nvlink5_ecc_errors = rates.ecc_errors;
  }
  return out;
}

MigInstances NvmlMonitor::mig_instances(const std::string& pci_bus_id) const {
  MigInstances out;
  NvmlDevice device = handle(pci_bus_id);
  if (device == nullptr || m_api->mig_mode == nullptr) return out;
  unsigned current = 0, pending = 0;
  if (m_api->mig_mode(device, &current, &pending) != nvml_success || current == 0) return out;
  out.enabled = true;
  unsigned slots = 0;
  if (m_api->max_mig_devices == nullptr || m_api->mig_device == nullptr ||
      m_api->max_mig_devices(device, &slots) != nvml_success)
    return out;
  for (unsigned index = 0; index < slots; ++index) {
    NvmlDevice instance = nullptr;
    const NvmlReturn found = m_api->mig_device(device, index, &instance);
    if (found != nvml_success) continue;  // NVML_ERROR_NOT_FOUND: an empty slot
    char uuid[96] = {};
    if (m_api->uuid != nullptr && m_api->uuid(instance, uuid, sizeof uuid - 1) == nvml_success) {
      out.uuids.emplace_back(uuid);
    } else {
      out.uuids.emplace_back("(instance " + std::to_string(index) + ")");
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ clock sampler

ClockSampler::ClockSampler(std::shared_ptr<const NvmlMonitor> nvml, std::string pci_bus_id,
                           std::chrono::milliseconds interval, std::shared_ptr<const std::atomic<int>> in_flight)
    : m_shared(std::make_shared<Shared>()) {
  // Everything by value: a thread left inside NVML after stop() keeps what it reads alive.
  std::thread([nvml = std::move(nvml), id = std::move(pci_bus_id), interval, shared = m_shared,
               in_flight = std::move(in_flight)] {
    auto busy = [&] { return in_flight == nullptr || in_flight->load() > 0; };
    std::unique_lock<std::mutex> lock(shared->mutex);
    while (!shared->stop) {
      lock.unlock();
      // NVML's clock is the one at the read: busy before and after means the GPU had work queued throughout it (a
      // read that straddles the end of a GEMM is not counted: the clock may already be dropping to idle).
      const bool busy_before = busy();
      std::optional<ClockSample> sample = nvml->clocks(id);
      if (sample) sample->under_load = busy_before && busy();
      lock.lock();
      if (sample) shared->samples.push_back(*sample);
      shared->wake.wait_for(lock, interval, [&] { return shared->stop; });
    }
    shared->done = true;
    shared->wake.notify_all();
  }).detach();
}

ClockSampler::~ClockSampler() { stop(); }

std::vector<ClockSample> ClockSampler::stop() {
  std::unique_lock<std::mutex> lock(m_shared->mutex);
  m_shared->stop = true;
  m_shared->wake.notify_all();
  // A sampler still inside an NVML call after a second is left running: cli must then leave with _Exit.
  if (!m_shared->wake.wait_for(lock, std::chrono::seconds(1), [&] { return m_shared->done; }))
    system::note_abandoned_work();
  return m_shared->samples;
}

// ------------------------------------------------------------------------------------------------ judgements

Finding judge_clocks(const std::vector<ClockSample>& samples, int max_mhz) {
  const std::string driver_max = max_mhz > 0 ? "max SM clock " + mhz(static_cast<unsigned>(max_mhz)) : "";
  // At idle every GPU shows idle clocks and no thermal reason: only samples taken while GEMMs ran say anything.
  const auto loaded = static_cast<std::size_t>(
      std::count_if(samples.begin(), samples.end(), [](const ClockSample& sample) { return sample.under_load; }));
  if (loaded == 0) {
    const std::string why = samples.empty() ? "NVML not available or does not know this GPU"
                                            : "none of " + std::to_string(samples.size()) +
                                                  " NVML samples was taken while a matmul ran (windows shorter than "
                                                  "the 20 ms sampling interval)";
    return Finding{
        "smoke.clocks",
        Status::skip,
        "SM clock during the matmuls unknown (" + why + ")" + (driver_max.empty() ? std::string() : "; " + driver_max),
        {},
        {}};
  }
  std::vector<unsigned> clocks;
  unsigned long long reasons = 0;
  unsigned max = max_mhz > 0 ? static_cast<unsigned>(max_mhz) : 0;  // 0: unknown
  for (const ClockSample& sample : samples) {
    if (!sample.under_load) continue;
    clocks.push_back(sample.sm_mhz);
    reasons |= sample.reasons;
    if (sample.sm_max_mhz) max = *sample.sm_max_mhz;
  }
  std::sort(clocks.begin(), clocks.end());
  const unsigned median = clocks[clocks.size() / 2];
  std::string message = "SM clock during the matmuls: " + mhz(median) + " (median of " + std::to_string(clocks.size()) +
                        " samples under load, of " + std::to_string(samples.size()) + " taken; lowest " +
                        mhz(clocks.front()) + ")" + (max > 0 ? ", max " + mhz(max) : std::string());
  const std::vector<std::string> names = probe::throttle_reason_names(reasons);
  if (!names.empty()) message += "; clocks-event reasons: " + util::join(names, ", ");
  if ((reasons & throttled_reasons) != 0) {
    return Finding{"smoke.clocks",
                   Status::warn,
                   "the GPU was throttled during the matmuls: " + message,
                   "check cooling (fans, airflow, inlet temperature) and power delivery: `nvidia-smi -q -d "
                   "PERFORMANCE,TEMPERATURE,POWER`; the matmul rates above were measured at these clocks",
                   {}};
  }
  return Finding{"smoke.clocks", Status::pass, message, {}, {}};
}

Finding judge_memory_errors(const MemoryErrorCounters& before, const MemoryErrorCounters& after) {
  if (!before.any() || !after.any()) {
    return Finding{"smoke.memory_errors",
                   Status::skip,
                   "ECC and row-remap counters not readable through NVML (not available, or ECC off): errors the "
                   "memory test provoked would only show as wrong words",
                   {},
                   {}};
  }
  std::vector<std::string> failing, warning;
  auto rose = [](const auto& a, const auto& b) { return a && b && *b > *a; };
  auto delta = [](const auto& a, const auto& b) { return std::to_string(*b - *a); };
  if (rose(before.ecc_uncorrected, after.ecc_uncorrected))
    failing.push_back(delta(before.ecc_uncorrected, after.ecc_uncorrected) + " uncorrectable ECC error(s)");
  if (rose(before.remapped_uncorrectable, after.remapped_uncorrectable))
    failing.push_back(delta(before.remapped_uncorrectable, after.remapped_uncorrectable) +
                      " row(s) remapped for uncorrectable errors");
  if (rose(before.retired_pages_double_bit, after.retired_pages_double_bit))
    failing.push_back(delta(before.retired_pages_double_bit, after.retired_pages_double_bit) +
                      " page(s) retired for double-bit errors");
  if (after.remap_failure.value_or(false) && !before.remap_failure.value_or(false))
    failing.push_back("a row remap failed");
  // Corrected errors are reported, not judged: DCGM has no corrected-error limit (DCGM_LIMIT_MAX_SBE_RATE is "a dummy
  // value until a real one is determined", common/DcgmGPUHardwareLimits.h) and aznhc fails only above 20,000,000
  // (check_gpu_ecc), so a handful during a memory test on a healthy GPU must not make it DEGRADED.
  std::string corrected;
  if (rose(before.ecc_corrected, after.ecc_corrected))
    corrected = delta(before.ecc_corrected, after.ecc_corrected) +
                " corrected ECC error(s), not judged (no anchor tool fails a GPU on a few corrected errors)";
  if (rose(before.remapped_correctable, after.remapped_correctable))
    warning.push_back(delta(before.remapped_correctable, after.remapped_correctable) +
                      " row(s) remapped for correctable errors");
  if (after.remap_pending.value_or(false) && !before.remap_pending.value_or(false))
    warning.push_back("a row remap is pending (applied at the next GPU reset)");
  const std::string corrected_note = corrected.empty() ? std::string() : "; " + corrected;
  if (!failing.empty()) {
    failing.insert(failing.end(), warning.begin(), warning.end());
    return Finding{"smoke.memory_errors",
                   Status::fail,
                   "during the memory test the GPU reported " + util::join(failing, ", ") + corrected_note,
                   "drain the node; reset the GPU to apply pending remaps, and replace it if errors persist or a "
                   "remap failed (`nvidia-smi -q -d ECC,ROW_REMAPPER`, `gpuenv doctor`)",
                   {}};
  }
  if (!warning.empty()) {
    return Finding{"smoke.memory_errors",
                   Status::warn,
                   "during the memory test the GPU reported " + util::join(warning, ", ") + corrected_note,
                   "watch the counters (`nvidia-smi -q -d ECC,ROW_REMAPPER`); reset the GPU to apply a pending remap",
                   {}};
  }
  if (!corrected.empty()) {
    return Finding{"smoke.memory_errors",
                   Status::pass,
                   "during the memory test the GPU reported " + corrected +
                       " (DCGM's corrected-error limit is a placeholder, aznhc fails above 20,000,000); no "
                       "uncorrectable errors, remaps or retirements",
                   {},
                   {}};
  }
  return Finding{
      "smoke.memory_errors", Status::pass, "ECC and row-remap counters unchanged by the memory test", {}, {}};
}

}  // namespace gpuenv::smoke
