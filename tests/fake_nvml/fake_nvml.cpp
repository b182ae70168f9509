// A fake libnvidia-ml.so.1 for tests: exports the NVML entry points gpuenv uses and answers them from
// the fixture file named by GPUENV_FAKE_NVML, so the real dlopen/NVML code path runs without a GPU.
//
// Fixture format: "key = value" lines. Top-level keys: init_result (an NVML return code),
// driver_version, nvml_version, cuda_driver_version (e.g. 12040), count_result, hang_seconds,
// abort_on_teardown_during_call (1: the library's teardown aborts while a hung call is still running in it, as a
// real driver library unmapped or destroyed under a caller would crash). GPUENV_FAKE_NVML_UNLOAD_LOG, when set,
// names a file the teardown appends the id of the thread that ran it to.
// Each "[gpu]" section starts a GPU; its keys are listed in parse_gpu_key below. The fixture is re-read at each
// nvmlInit_v2. A counter key with a "_rise" companion (ecc_corrected_volatile_rise = 3, remapped_rows_*_rise) reads
// its value the first time and value + rise afterwards, as errors raised between two reads would;
// remapped_rows_pending_later = 1 likewise sets the pending flag from the second read on. sm_clock_mhz and
// sm_clock_max_mhz answer nvmlDeviceGetClockInfo / nvmlDeviceGetMaxClockInfo (NVML_CLOCK_SM).
// Fabric and link counters (the block at the end, for doctor's fabric checks): fabric_state (0-3, nvml.h
// NVML_GPU_FABRIC_STATE_*), fabric_status (an NVML return code), fabric_clique, fabric_health_summary (0-3),
// fabric_max_version (2: nvmlDeviceGetGpuFabricInfoV refuses the v3 structure with
// NVML_ERROR_ARGUMENT_VERSION_MISMATCH as an R550 driver does; 1: it answers NVML_ERROR_FUNCTION_NOT_FOUND, so only the
// v1 call works); without fabric_state both calls answer "not supported". pcie_replays (+ pcie_replays_rise) answers
// nvmlDeviceGetPcieReplayCounter. nvlink_<replay|recovery|crc_flit|crc_data>_link<N> (+ _rise) set link N's error
// counters; these grow by _rise with each nvmlInit of the process after the first, as a real counter grows with time.
// nvlink_down = N with nvlink_down_from_session = S makes link N read inactive from the S-th nvmlInit on.
// For a resident reader (gpuenv watch) that keeps one nvmlInit: a counter's "_step" companion adds step x the number
// of earlier reads (a counter that grows at every read); reload_on_change = 1 re-reads the fixture at
// nvmlDeviceGetCount when its modification time changed, so a test can rewrite temperatures, utilisation, a lost GPU
// or the GPU count between two reads; hang_count_after = N with hang_count_seconds = S makes the
// nvmlDeviceGetCount after the Nth block S seconds (a GPU that hangs in the middle of a session, then recovers).
// gpuenv smoke's keys (issue 23; functions in the "smoke" section at the end): smoke_pids = 4321,8765 (compute
// processes, nvmlDeviceGetComputeRunningProcesses_v3), smoke_pids_later (more from the second read on),
// smoke_pids_self_later = 1 (the caller's own PID from the second read on, as after it made a context),
// smoke_pids_alias_later = 99 (that PID instead: this process seen from another PID namespace); smoke_pcie_replays
// (and _rise); smoke_nvlink_replay / _recovery / _crc_flit / _crc_data (link 0's counter, each with a _rise);
// smoke_nvlink_down_later = 5 (that link inactive from the second state read on); smoke_mig_instances = 3 (MIG
// instances of the GPU, with mig_mode = 1). NVLink5 (Blackwell): smoke_nvlink5 = 1 makes
// nvmlDeviceGetNvLinkErrorCounter answer "not supported" (nvml.h: those counters are "unsupported for Blackwell+") and
// nvmlDeviceGetFieldValues answer the NVML_FI_DEV_NVLINK_COUNT_* fields per link (scopeId): smoke_nvlink5_<name> (+
// _rise) on link 0, names symbol_errors (field 221), malformed (206), buffer_overrun (207), rcv_errors (208),
// remote_errors (209), general_errors (210), integrity_errors (211), recoveries (213), failed_recoveries (214),
// effective_errors (219); the bit error rates over all links (scopeId UINT_MAX) from smoke_nvlink5_effective_ber (raw,
// default 0xfff: NVML's zero, 15e-255) and smoke_nvlink5_symbol_ber (raw, default 73710 = 0x11fee: 15e-238 with bit 16
// set, the healthy Blackwell aggregate in DCGM's own test, modules/health/tests/DcgmHealthWatchTests.cpp). With
// smoke_nvlink5 = 1, nvlink5_<name>_link<N> (+ _rise) sets link N's own counter (same names), growing per nvmlInit
// session as the nvlink_*_link<N> keys do: distinct per link, so a reader that asked for link 0 everywhere is seen.
// smoke_nvlink5_old_counters = 1 (with smoke_nvlink5 = 1): a Blackwell driver that answers the older counters too (0
// unless set), as NVIDIA/nvidia-resiliency-ext#302 reports fields 161/162 answering on newer GB200 drivers.
// The NVLink ECC data error total (field 160, NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL, answered at scopeId 0
// only, as DCGM asks for it): 0 on smoke_nvlink5 GPUs unless set; smoke_nvlink5_ecc_errors (+ _rise: after the first
// read in a session, as the smoke_ counters) and nvlink_ecc_errors (+ _rise: per nvmlInit session, as doctor's link
// counters) set it, added together; either key makes a GPU without smoke_nvlink5 answer it too (an older GPU that
// answers 160, which gpuenv must not judge).

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

struct FakeGpu {
  std::map<std::string, std::string> values;
  std::string get(const std::string& key, const std::string& fallback = "") const {
    const auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  }
  unsigned long long number(const std::string& key, unsigned long long fallback = 0) const {
    const auto it = values.find(key);
    return it == values.end() ? fallback : std::strtoull(it->second.c_str(), nullptr, 0);
  }
  bool has(const std::string& key) const { return values.count(key) != 0; }
};

struct FakeState {
  std::map<std::string, std::string> top;
  std::vector<FakeGpu> gpus;
  int top_int(const std::string& key, int fallback) const {
    const auto it = top.find(key);
    return it == top.end() ? fallback : std::atoi(it->second.c_str());
  }
};

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

FakeState load_state() {
  return [] {
    FakeState s;
    const char* path = std::getenv("GPUENV_FAKE_NVML");
    if (path == nullptr) return s;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      line = trim(line);
      if (line.empty() || line[0] == '#') continue;
      if (line == "[gpu]") {
        s.gpus.emplace_back();
        continue;
      }
      const auto equals = line.find('=');
      if (equals == std::string::npos) continue;
      const std::string key = trim(line.substr(0, equals));
      const std::string value = trim(line.substr(equals + 1));
      if (s.gpus.empty()) {
        s.top[key] = value;
      } else {
        s.gpus.back().values[key] = value;
      }
    }
    return s;
  }();
}

FakeState& mutable_state() {
  static FakeState loaded = load_state();
  return loaded;
}
const FakeState& state() { return mutable_state(); }

// How often each (GPU, counter) was read since nvmlInit: "_rise" counters move after the first read.
std::mutex g_reads_mutex;
std::map<std::string, int> g_reads;
/// How often `key` of `gpu` was read before this read.
int earlier_reads(const FakeGpu& gpu, const std::string& key) {
  const std::lock_guard<std::mutex> lock(g_reads_mutex);
  return g_reads[std::to_string(reinterpret_cast<std::uintptr_t>(&gpu)) + key]++;
}
unsigned long long rising_counter(const FakeGpu& gpu, const std::string& key) {
  const int reads = earlier_reads(gpu, key);
  return gpu.number(key) + (reads > 0 ? gpu.number(key + "_rise") : 0) +
         gpu.number(key + "_step") * static_cast<unsigned long long>(reads);
}

// ---- fabric and link counters (doctor's fabric checks) ----------------------------------------------------------

// The nvmlInit sessions of this process so far (1 during the first). doctor reads the link counters in sessions of
// their own (the inventory, the start and the end of its run), and a real counter grows with time whoever reads it: a
// link counter with a "_rise" key grows by that much from one session to the next (the _rise counters above restart
// at each init instead).
std::atomic<long long> g_sessions{0};
unsigned long long rising_per_session(const FakeGpu& gpu, const std::string& key) {
  const long long later_sessions = std::max(0LL, g_sessions.load() - 1);
  return gpu.number(key) + static_cast<unsigned long long>(later_sessions) * gpu.number(key + "_rise");
}

/// Link `link`'s error counter `counter` (nvml.h nvmlNvLinkErrorCounter_t 0-3) from nvlink_<name>_link<N>, rising.
unsigned long long nvlink_counter(const FakeGpu& gpu, unsigned link, int counter) {
  static const char* const names[] = {"replay", "recovery", "crc_flit", "crc_data"};
  if (counter < 0 || counter > 3) return 0;
  const std::string key = std::string("nvlink_") + names[counter] + "_link" + std::to_string(link);
  return gpu.has(key) ? rising_per_session(gpu, key) : 0;
}

/// nvlink_down = N with nvlink_down_from_session = S: link N answers inactive from the S-th nvmlInit on.
bool link_is_down_now(const FakeGpu& gpu, unsigned link) {
  if (!gpu.has("nvlink_down") || gpu.number("nvlink_down") != link) return false;
  return g_sessions.load() >= static_cast<long long>(gpu.number("nvlink_down_from_session", 1));
}

// ------------------------------------------------------------------------------------------------------------------

const FakeGpu* gpu_of(void* device) {
  const auto index = reinterpret_cast<std::size_t>(device) - 1;
  return index < state().gpus.size() ? &state().gpus[index] : nullptr;
}

/// The library is unloaded when its last handle closes, which would restart the session count: a fixture whose
/// counters grow across sessions pins it for the process (a test case is a process of its own under CTest, and each
/// copy of the library counts apart). Other fixtures leave it unpinned: the teardown tests watch it unload.
bool counts_sessions(const FakeState& loaded) {
  for (const FakeGpu& gpu : loaded.gpus) {
    for (const auto& [key, value] : gpu.values) {
      const bool rising_link_counter =
          (key.rfind("nvlink_", 0) == 0 || key.rfind("nvlink5_", 0) == 0 || key.rfind("pcie_replays", 0) == 0) &&
          key.size() > 5 && key.compare(key.size() - 5, 5, "_rise") == 0;
      if (rising_link_counter || key == "nvlink_down_from_session") return true;
    }
  }
  return false;
}
void pin_library() {
  static const bool pinned = [] {
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&pin_library), &self) != 0 && self.dli_fname != nullptr)
      return dlopen(self.dli_fname, RTLD_LAZY | RTLD_NODELETE) != nullptr;
    return false;
  }();
  (void)pinned;
}

int copy_string(const std::string& value, char* out, unsigned length) {
  if (value.size() + 1 > length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::memcpy(out, value.c_str(), value.size() + 1);
  return 0;
}

/// Calls still running inside the library, and whether its teardown must then abort (set by nvmlInit).
std::atomic<int> g_calls_in_flight{0};
std::atomic<bool> g_abort_on_teardown_during_call{false};

/// Runs when the library is torn down: by dlclose, or by exit() for a library still loaded.
__attribute__((destructor)) void on_teardown() {
  if (const char* log = std::getenv("GPUENV_FAKE_NVML_UNLOAD_LOG")) {
    if (std::FILE* file = std::fopen(log, "a")) {
      std::fprintf(file, "%ld\n", static_cast<long>(::syscall(SYS_gettid)));
      std::fclose(file);
    }
  }
  if (g_calls_in_flight.load() > 0 && g_abort_on_teardown_during_call.load()) {
    std::fputs("fake NVML: torn down while a call is still running in it\n", stderr);
    std::abort();
  }
}

/// reload_on_change = 1: the fixture is re-read when its modification time changed since the last load.
void reload_if_changed() {
  static long long loaded_ns = -1;
  const char* path = std::getenv("GPUENV_FAKE_NVML");
  struct stat info {};
  if (path == nullptr || state().top_int("reload_on_change", 0) != 1 || ::stat(path, &info) != 0) return;
  const long long ns = static_cast<long long>(info.st_mtim.tv_sec) * 1000000000LL + info.st_mtim.tv_nsec;
  if (loaded_ns >= 0 && ns != loaded_ns) mutable_state() = load_state();
  loaded_ns = ns;
}

/// hang_count_after = N, hang_count_seconds = S: the call after the Nth blocks S seconds (once).
void hang_if_due() {
  static std::atomic<int> calls{0};
  const int after = state().top_int("hang_count_after", -1);
  const int seconds = state().top_int("hang_count_seconds", 0);
  if (after < 0 || ++calls != after + 1 || seconds <= 0) return;
  ++g_calls_in_flight;
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  --g_calls_in_flight;
}

/// 3 (NVML_ERROR_NOT_SUPPORTED) when the fixture leaves the key out.
constexpr int k_not_supported = 3;

// ------------------------------------------------------------------------------------------- gpuenv smoke (issue 23)

/// How often `key` of `gpu` was read so far (earlier_reads without counting this look).
int smoke_reads(const FakeGpu& gpu, const std::string& key) {
  const std::lock_guard<std::mutex> lock(g_reads_mutex);
  return g_reads[std::to_string(reinterpret_cast<std::uintptr_t>(&gpu)) + key];
}

/// smoke_nvlink_down_later: that link reads inactive from the second state read on (a link lost during the run).
bool smoke_link_down_later(const FakeGpu& gpu, unsigned link) {
  if (!gpu.has("smoke_nvlink_down_later") || gpu.number("smoke_nvlink_down_later") != link) return false;
  return earlier_reads(gpu, "smoke_nvlink_state" + std::to_string(link)) > 0;
}

/// smoke_nvlink_<counter> (link 0), rising by its _rise after the first read.
unsigned long long smoke_nvlink_counter(const FakeGpu& gpu, unsigned link, int counter) {
  static const char* const names[] = {"smoke_nvlink_replay", "smoke_nvlink_recovery", "smoke_nvlink_crc_flit",
                                      "smoke_nvlink_crc_data"};
  if (link != 0 || counter < 0 || counter > 3 || !gpu.has(names[counter])) return 0;
  return rising_counter(gpu, names[counter]);
}

/// NVLink5 field `field` of link `scope` (nvmlDeviceGetFieldValues): the value, or nullopt for "not supported".
std::optional<unsigned long long> smoke_nvlink5_field(const FakeGpu& gpu, unsigned field, unsigned scope) {
  static const std::pair<unsigned, const char*> counters[] = {
      {221, "symbol_errors"},     {206, "malformed"},       {207, "buffer_overrun"},   {208, "rcv_errors"},
      {209, "remote_errors"},     {210, "general_errors"},  {211, "integrity_errors"}, {213, "recoveries"},
      {214, "failed_recoveries"}, {219, "effective_errors"}};
  if (field == 160) {
    const bool set = gpu.has("smoke_nvlink5_ecc_errors") || gpu.has("nvlink_ecc_errors");
    if (scope != 0 || (!set && gpu.number("smoke_nvlink5") == 0)) return std::nullopt;
    return (gpu.has("smoke_nvlink5_ecc_errors") ? rising_counter(gpu, "smoke_nvlink5_ecc_errors") : 0ULL) +
           (gpu.has("nvlink_ecc_errors") ? rising_per_session(gpu, "nvlink_ecc_errors") : 0ULL);
  }
  if (gpu.number("smoke_nvlink5") == 0) return std::nullopt;
  constexpr unsigned all_links = 0xffffffffU;
  if (field == 220 || field == 222) {
    if (scope != all_links) return std::nullopt;
    return field == 220 ? gpu.number("smoke_nvlink5_effective_ber", 0xfff)
                        : gpu.number("smoke_nvlink5_symbol_ber", 73710);
  }
  for (const auto& [id, name] : counters) {
    if (id != field) continue;
    const std::string key = std::string("smoke_nvlink5_") + name;
    const unsigned long long smoke = scope == 0 && gpu.has(key) ? rising_counter(gpu, key) : 0ULL;
    // nvlink5_<name>_link<N>: link N's own counter, growing per nvmlInit session as doctor's link counters do.
    const std::string link_key = std::string("nvlink5_") + name + "_link" + std::to_string(scope);
    return smoke + (gpu.has(link_key) ? rising_per_session(gpu, link_key) : 0ULL);
  }
  return std::nullopt;
}

/// MIG instance handles are 0x10000 + GPU index * 64 + slot: "MIG-fake-<gpu>-<slot>".
std::optional<std::string> smoke_mig_handle(void* device) {
  const auto value = reinterpret_cast<std::size_t>(device);
  if (value < 0x10000) return std::nullopt;
  return "MIG-fake-" + std::to_string((value - 0x10000) / 64) + "-" + std::to_string((value - 0x10000) % 64);
}

}  // namespace

extern "C" {

struct nvmlPciInfo_t {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_sub_system_id;
  char bus_id[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};

int nvmlInit_v2() {
  ++g_sessions;
  mutable_state() = load_state();
  if (counts_sessions(state())) pin_library();
  {
    const std::lock_guard<std::mutex> lock(g_reads_mutex);
    g_reads.clear();
  }
  g_abort_on_teardown_during_call = state().top_int("abort_on_teardown_during_call", 0) == 1;
  if (const int hang = state().top_int("hang_seconds", 0); hang > 0) {
    ++g_calls_in_flight;
    std::this_thread::sleep_for(std::chrono::seconds(hang));
    --g_calls_in_flight;
  }
  return state().top_int("init_result", 0);
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int result) {
  switch (result) {
    case 4:
      return "Insufficient Permissions";
    case 9:
      return "Driver Not Loaded";
    case 18:
      return "RM has detected an NVML/RM version mismatch.";
    default:
      return "Unknown Error";
  }
}
int nvmlSystemGetDriverVersion(char* out, unsigned length) {
  return copy_string(state().top.count("driver_version") ? state().top.at("driver_version") : "", out, length);
}
int nvmlSystemGetNVMLVersion(char* out, unsigned length) {
  return copy_string(state().top.count("nvml_version") ? state().top.at("nvml_version") : "", out, length);
}
int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  *version = state().top_int("cuda_driver_version", 0);
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  reload_if_changed();
  hang_if_due();
  *count = static_cast<unsigned>(state().gpus.size());
  return state().top_int("count_result", 0);
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index >= state().gpus.size()) return 2;
  if (state().gpus[index].get("lost") == "1") return 15;  // NVML_ERROR_GPU_IS_LOST
  *device = reinterpret_cast<void*>(static_cast<std::size_t>(index) + 1);
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
  auto upper = [](std::string text) {
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return text;
  };
  for (std::size_t index = 0; index < state().gpus.size(); ++index) {
    if (upper(state().gpus[index].get("pci_bus_id")) == upper(bus_id)) {
      *device = reinterpret_cast<void*>(index + 1);
      return 0;
    }
  }
  return 6;  // NVML_ERROR_NOT_FOUND
}
int nvmlDeviceGetClockInfo(void* device, int type, unsigned* mhz) {
  const FakeGpu* gpu = gpu_of(device);
  if (type != 1 || !gpu->has("sm_clock_mhz")) return k_not_supported;
  *mhz = static_cast<unsigned>(gpu->number("sm_clock_mhz"));
  return 0;
}
int nvmlDeviceGetMaxClockInfo(void* device, int type, unsigned* mhz) {
  const FakeGpu* gpu = gpu_of(device);
  if (type != 1 || !gpu->has("sm_clock_max_mhz")) return k_not_supported;
  *mhz = static_cast<unsigned>(gpu->number("sm_clock_max_mhz"));
  return 0;
}
int nvmlDeviceGetName(void* device, char* out, unsigned length) {
  return copy_string(gpu_of(device)->get("name"), out, length);
}
int nvmlDeviceGetUUID(void* device, char* out, unsigned length) {
  if (const auto mig = smoke_mig_handle(device)) return copy_string(*mig, out, length);
  return copy_string(gpu_of(device)->get("uuid"), out, length);
}
int nvmlDeviceGetPciInfo_v3(void* device, nvmlPciInfo_t* pci) {
  std::memset(pci, 0, sizeof *pci);
  return copy_string(gpu_of(device)->get("pci_bus_id"), pci->bus_id, sizeof pci->bus_id);
}
int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* memory) {
  const FakeGpu* gpu = gpu_of(device);
  memory->total = gpu->number("memory_total_mib") * 1024 * 1024;
  memory->used = gpu->number("memory_used_mib") * 1024 * 1024;
  memory->free = memory->total - memory->used;
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(void* device, int* major, int* minor) {
  const std::string cc = gpu_of(device)->get("compute_capability", "0.0");
  *major = std::atoi(cc.c_str());
  *minor = std::atoi(cc.c_str() + cc.find('.') + 1);
  return 0;
}

#define FAKE_SCALAR(function, type, key)          \
  int function(void* device, type* value) {       \
    const FakeGpu* gpu = gpu_of(device);          \
    if (!gpu->has(key)) return k_not_supported;   \
    *value = static_cast<type>(gpu->number(key)); \
    return 0;                                     \
  }

FAKE_SCALAR(nvmlDeviceGetPersistenceMode, int, "persistence_mode")
FAKE_SCALAR(nvmlDeviceGetRetiredPagesPendingStatus, int, "retired_pages_pending")
FAKE_SCALAR(nvmlDeviceGetPowerUsage, unsigned, "power_mw")
FAKE_SCALAR(nvmlDeviceGetEnforcedPowerLimit, unsigned, "power_limit_mw")
FAKE_SCALAR(nvmlDeviceGetCurrentClocksEventReasons, unsigned long long, "throttle_mask")
FAKE_SCALAR(nvmlDeviceGetCurrPcieLinkGeneration, unsigned, "pcie_gen_current")
FAKE_SCALAR(nvmlDeviceGetMaxPcieLinkGeneration, unsigned, "pcie_gen_max")
FAKE_SCALAR(nvmlDeviceGetCurrPcieLinkWidth, unsigned, "pcie_width_current")
FAKE_SCALAR(nvmlDeviceGetMaxPcieLinkWidth, unsigned, "pcie_width_max")

int nvmlDeviceGetMigMode(void* device, unsigned* current, unsigned* pending) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("mig_mode")) return k_not_supported;
  *current = *pending = static_cast<unsigned>(gpu->number("mig_mode"));
  return 0;
}
int nvmlDeviceGetEccMode(void* device, int* current, int* pending) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("ecc_mode")) return k_not_supported;
  *current = *pending = static_cast<int>(gpu->number("ecc_mode"));
  return 0;
}
int nvmlDeviceGetTotalEccErrors(void* device, int error_type, int counter_type, unsigned long long* count) {
  const FakeGpu* gpu = gpu_of(device);
  const std::string key = std::string(error_type == 1 ? "ecc_uncorrected" : "ecc_corrected") +
                          (counter_type == 0 ? "_volatile" : "_aggregate");
  if (!gpu->has(key)) return k_not_supported;
  *count = rising_counter(*gpu, key);
  return 0;
}
int nvmlDeviceGetRetiredPages(void* device, int cause, unsigned* count, unsigned long long*) {
  const FakeGpu* gpu = gpu_of(device);
  const std::string key = cause == 0 ? "retired_pages_single_bit" : "retired_pages_double_bit";
  if (!gpu->has(key)) return k_not_supported;
  *count = static_cast<unsigned>(gpu->number(key));
  return 0;
}
int nvmlDeviceGetRemappedRows(void* device, unsigned* corrected, unsigned* uncorrected, unsigned* pending,
                              unsigned* failure) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("remapped_rows_uncorrectable")) return k_not_supported;
  *corrected = static_cast<unsigned>(rising_counter(*gpu, "remapped_rows_correctable"));
  *uncorrected = static_cast<unsigned>(rising_counter(*gpu, "remapped_rows_uncorrectable"));
  // remapped_rows_pending_later: not pending at the first read, pending from the second on.
  const bool later = gpu->number("remapped_rows_pending_later") != 0 && earlier_reads(*gpu, "pending") > 0;
  *pending = static_cast<unsigned>(gpu->number("remapped_rows_pending") != 0 || later);
  *failure = static_cast<unsigned>(gpu->number("remapped_rows_failure"));
  return 0;
}
int nvmlDeviceGetTemperature(void* device, int, unsigned* value) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("temperature_c")) return k_not_supported;
  *value = static_cast<unsigned>(gpu->number("temperature_c"));
  return 0;
}
int nvmlDeviceGetTemperatureThreshold(void* device, int, unsigned* value) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("temperature_slowdown_c")) return k_not_supported;
  *value = static_cast<unsigned>(gpu->number("temperature_slowdown_c"));
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* device, nvmlUtilization_t* utilization) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("utilization_percent")) return k_not_supported;
  utilization->gpu = static_cast<unsigned>(gpu->number("utilization_percent"));
  utilization->memory = 0;
  return 0;
}
// NVLink: "nvlinks = N" links numbered 0..N-1, "nvlink_inactive = 3,7" down; "nvlink_recovery_errors" on link 0.
int nvmlDeviceGetNvLinkState(void* device, unsigned link, int* active) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("nvlinks")) return k_not_supported;
  if (link >= gpu->number("nvlinks")) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  const std::string inactive = "," + gpu->get("nvlink_inactive") + ",";
  *active = inactive.find("," + std::to_string(link) + ",") == std::string::npos ? 1 : 0;
  if (*active == 1 && link_is_down_now(*gpu, link)) *active = 0;
  if (smoke_link_down_later(*gpu, link)) *active = 0;
  return 0;
}
int nvmlDeviceGetNvLinkErrorCounter(void* device, unsigned link, int counter, unsigned long long* value) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("nvlinks") || link >= gpu->number("nvlinks")) return k_not_supported;
  if (gpu->number("smoke_nvlink5") != 0 && gpu->number("smoke_nvlink5_old_counters") == 0)
    return k_not_supported;  // Blackwell: the NVLink5 fields instead
  *value = link == 0 && counter == 1 ? gpu->number("nvlink_recovery_errors") : 0;
  *value += nvlink_counter(*gpu, link, counter);
  *value += smoke_nvlink_counter(*gpu, link, counter);
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses(void* device, unsigned* count, void*) {
  *count = static_cast<unsigned>(gpu_of(device)->number("processes"));
  return *count == 0 ? 0 : 7;
}

// ---- fabric and link counters (doctor's fabric checks) ----------------------------------------------------------

// nvml.h nvmlGpuFabricInfo_t (v1) and nvmlGpuFabricInfo_v3_t (v2 ends before healthSummary).
struct nvmlGpuFabricInfo_t {
  unsigned char clusterUuid[16];
  int status;
  unsigned int cliqueId;
  unsigned char state;
};
struct nvmlGpuFabricInfoV_t {
  unsigned int version;
  unsigned char clusterUuid[16];
  int status;
  unsigned int cliqueId;
  unsigned char state;
  unsigned int healthMask;
  unsigned char healthSummary;
};

int nvmlDeviceGetGpuFabricInfoV(void* device, nvmlGpuFabricInfoV_t* info) {
  const FakeGpu* gpu = gpu_of(device);
  const unsigned max_version = static_cast<unsigned>(gpu->number("fabric_max_version", 3));
  if (max_version < 2) return 13;  // NVML_ERROR_FUNCTION_NOT_FOUND
  const unsigned version = info->version >> 24;
  const unsigned size = info->version & 0xffffff;
  const unsigned v2_size = offsetof(nvmlGpuFabricInfoV_t, healthSummary);
  if (version > max_version || (version == 3 && size != sizeof(nvmlGpuFabricInfoV_t)) ||
      (version == 2 && size != v2_size) || version < 2)
    return 25;  // NVML_ERROR_ARGUMENT_VERSION_MISMATCH
  if (!gpu->has("fabric_state")) return k_not_supported;
  std::memset(info->clusterUuid, 0, sizeof info->clusterUuid);
  info->clusterUuid[15] = static_cast<unsigned char>(gpu->number("fabric_clique"));
  info->status = static_cast<int>(gpu->number("fabric_status"));
  info->cliqueId = static_cast<unsigned>(gpu->number("fabric_clique"));
  info->state = static_cast<unsigned char>(gpu->number("fabric_state"));
  info->healthMask = 0;
  if (version == 3) info->healthSummary = static_cast<unsigned char>(gpu->number("fabric_health_summary"));
  return 0;
}
int nvmlDeviceGetGpuFabricInfo(void* device, nvmlGpuFabricInfo_t* info) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("fabric_state")) return k_not_supported;
  std::memset(info->clusterUuid, 0, sizeof info->clusterUuid);
  info->status = static_cast<int>(gpu->number("fabric_status"));
  info->cliqueId = static_cast<unsigned>(gpu->number("fabric_clique"));
  info->state = static_cast<unsigned char>(gpu->number("fabric_state"));
  return 0;
}

// ------------------------------------------------------------------------------------------- gpuenv smoke (issue 23)

struct SmokeProcessInfo {  // nvml.h nvmlProcessInfo_t (the _v2/_v3 calls)
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};

int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned* count, SmokeProcessInfo* infos) {
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu->has("smoke_pids")) return k_not_supported;
  std::vector<unsigned> pids;
  auto add = [&pids](const std::string& list) {
    for (std::size_t at = 0; at < list.size();) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      if (comma > at)
        pids.push_back(static_cast<unsigned>(std::strtoul(list.substr(at, comma - at).c_str(), nullptr, 0)));
      at = comma + 1;
    }
  };
  add(gpu->get("smoke_pids"));
  // One read of the list is a count query (no array) and, when there are processes, a second call that fills it:
  // "later" PIDs appear from the second count query on.
  const int queries = infos == nullptr ? earlier_reads(*gpu, "smoke_pids") + 1 : smoke_reads(*gpu, "smoke_pids");
  if (queries > 1) {
    add(gpu->get("smoke_pids_later"));
    if (gpu->number("smoke_pids_self_later") != 0) pids.push_back(static_cast<unsigned>(::getpid()));
    if (gpu->has("smoke_pids_alias_later"))
      pids.push_back(static_cast<unsigned>(gpu->number("smoke_pids_alias_later")));
  }
  if (infos == nullptr || *count < pids.size()) {
    *count = static_cast<unsigned>(pids.size());
    return pids.empty() ? 0 : 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  }
  for (std::size_t i = 0; i < pids.size(); ++i) infos[i] = SmokeProcessInfo{pids[i], 0, ~0u, ~0u};
  *count = static_cast<unsigned>(pids.size());
  return 0;
}

// smoke's smoke_pcie_replays grows per read (within one nvmlInit); doctor's pcie_replays per nvmlInit session.
int nvmlDeviceGetPcieReplayCounter(void* device, unsigned* value) {
  const FakeGpu* gpu = gpu_of(device);
  if (gpu->has("smoke_pcie_replays")) {
    *value = static_cast<unsigned>(rising_counter(*gpu, "smoke_pcie_replays"));
    return 0;
  }
  if (!gpu->has("pcie_replays")) return k_not_supported;
  *value = static_cast<unsigned>(rising_per_session(*gpu, "pcie_replays"));
  return 0;
}

// nvml.h nvmlFieldValue_t: fieldId, scopeId, timestamp, latencyUsec, valueType, nvmlReturn, then the value union.
struct nvmlFieldValue_t {
  unsigned field_id, scope_id;
  long long timestamp, latency_usec;
  int value_type, nvml_return;
  unsigned long long value;
};
// As NVML: success when any value was filled, each value with its own return code.
int nvmlDeviceGetFieldValues(void* device, int count, nvmlFieldValue_t* values) {
  const FakeGpu* gpu = gpu_of(device);
  if (gpu == nullptr || values == nullptr) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  bool any = false;
  for (int i = 0; i < count; ++i) {
    const std::optional<unsigned long long> value = smoke_nvlink5_field(*gpu, values[i].field_id, values[i].scope_id);
    values[i].nvml_return = value ? 0 : k_not_supported;
    values[i].value_type = 3;  // NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    values[i].value = value.value_or(0);
    any = any || value.has_value();
  }
  return any ? 0 : k_not_supported;
}

int nvmlDeviceGetMaxMigDeviceCount(void* device, unsigned* count) {
  *count = gpu_of(device)->has("smoke_mig_instances") ? 7 : 0;
  return 0;
}

int nvmlDeviceGetMigDeviceHandleByIndex(void* device, unsigned index, void** instance) {
  const FakeGpu* gpu = gpu_of(device);
  if (index >= gpu->number("smoke_mig_instances")) return 6;  // NVML_ERROR_NOT_FOUND
  const auto parent = reinterpret_cast<std::size_t>(device) - 1;
  *instance = reinterpret_cast<void*>(0x10000 + parent * 64 + index);
  return 0;
}

}  // extern "C"
