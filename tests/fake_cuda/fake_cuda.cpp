// A fake libcuda.so.1 (and libcublas) for tests: exports the driver API and cuBLAS entry points gpuenv smoke uses
// and answers them from the key=value file named by GPUENV_FAKE_CUDA (re-read at every cuInit), so the real
// dlopen/driver-API path runs without a GPU. "Device" memory is host memory; kernels and GEMMs are emulated on the
// CPU (small sizes only). The same library serves as GPUENV_CUBLAS_LIBRARY.
//
// Keys: init_result, driver_version (e.g. 12080), device_count, name, pci_bus_id (device N > 0 gets N as the bus
// number's last digit unless mig_shared_bus = 1: MIG instances of one GPU all report its bus id), cc_major, cc_minor,
// module_load_result, module_load_results (comma-separated: the result of each cuModuleLoadData since cuInit in turn,
// the last one repeating; e.g. "222,0": the first image tried is refused, the next loads), alloc_result,
// alloc_fail_after (allocations that succeed before alloc_result applies), launch_result, launch_hang_seconds,
// elapsed_ms (every event interval), emulate_kernels (0: launches do nothing), corrupt_dtoh (1: flip one word of every
// device->host copy), free_memory (bytes cuMemGetInfo reports), memtest_flip_word (index of a word the memtest writer
// gets wrong), peer_access (0: no peer access), corrupt_peer (1: flip one word of every peer copy),
// cublas_create_result, cublas_gemm_result, cublas_major, cublas_wrong (1: cuBLAS GEMMs add 1 to C[0][0]),
// peer_enable_result (cuCtxEnablePeerAccess's result), legacy_async (1: the legacy-stream calls cuMemsetD32_v2 and
// cuMemcpyHtoD_v2 take effect only after the next stream or event synchronisation, as a real GPU may order them after
// work on a non-blocking stream), exit_waits_for_hang (1: the library's teardown at exit waits for a hung launch, as
// libcuda's may), alias_allocations_of (bytes: every allocation of exactly this size maps the same memory at a new
// address, as a faulty address line would alias two regions), gemm_fault_launch (n: the n-th GEMM launch since cuInit,
// counting from 1, gets one element wrong: a sporadic fault), alloc_max_bytes (larger allocations fail: out of memory),
// l2_bytes (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE; default 0), wmma_elapsed_ms (the event interval that follows a launch of
// smoke_hgemm_wmma or smoke_bf16gemm_wmma instead of elapsed_ms, so our tensor kernel can run slower than cuBLAS),
// elapsed_ms_gpu<N> (elapsed_ms for the events of device N: the copies on that GPU's stream are slower or faster),
// spin_timeouts (n: the first n smoke_spin_wait launches since cuInit time out, recording it in their timed-out word,
// as a host that released them more than 2 s late), host_get_device_pointer_result (cuMemHostGetDevicePointer_v2's
// result; 0: it returns a device alias that differs from the host address, as it may on a real GPU; the fake's
// kernels translate it back).
// fake_cuda_live_allocations() and fake_cuda_live_contexts() let tests check that everything was released;
// fake_cuda_alloc_host_cpus() how many CPUs the thread of the last cuMemAllocHost could run on;
// fake_cuda_spin_launches() how often smoke_spin_wait was launched, fake_cuda_spin_mapped_launches() how many of those
// got device aliases from cuMemHostGetDevicePointer_v2 of memory cuMemHostAlloc mapped (DEVICEMAP) for both flag words;
// fake_cuda_fill_words_launches() and fake_cuda_check_words_launches() count smoke_fill_words and smoke_check_words
// launches. peer_hang_seconds (every cuMemcpyPeerAsync blocks that long: a copy stuck on a dead link), event_sleep (1:
// cuEventSynchronize sleeps elapsed_ms, so the host clock sees the time the events report), event_sleep_serial (1:
// those sleeps take turns across all GPUs, as GPUs whose copies drift apart would each run alone), gemm_sleep_ms (every
// GEMM launch, kernel or cuBLAS, also takes this long on the host: a launch in flight lasts at least that).
// fake_cuda_peak_concurrent_gemms() the most GEMM launches sleeping gemm_sleep_ms at once (GPUs in parallel).
// fake_cuda_gemm_launches() counts the GEMMs (our kernels and cuBLAS) launched since the library loaded.
// peer_connection_limit (n: cuCtxEnablePeerAccess returns CUDA_ERROR_TOO_MANY_PEERS (711) when the current or the peer
// device would then have more than n peer connections, as "each device can support a system-wide maximum of eight peer
// connections" on systems without NVSwitch, CUDA C++ Programming Guide); cuCtxDisablePeerAccess ends a connection (705
// when it was not enabled); fake_cuda_peer_connections() counts the connections still enabled,
// fake_cuda_peak_peer_connections() the most one device had at once since cuInit. peer_sleep_ms (each cuMemcpyPeerAsync
// lasts that long on the host): fake_cuda_parallel_peer_copies() counts peer copies started while another pair's was in
// flight, fake_cuda_peer_gpu_conflicts() those started while another pair sharing a GPU with them was in flight.
// Per GPU (issue 23 items 11 and 14; a key with "_gpu<N>" applies to calls made with device N's context current):
// ctx_release_hang_seconds (cuDevicePrimaryCtxRelease blocks that long); launch_hang_seconds_gpu<N>; launch_hang_kernel
// (a name prefix: only those launches hang, so a test can hang a GEMM rather than the fill kernel that runs first);
// hang_holds_driver_lock (1: while a launch hangs, every other kernel launch and allocation waits for it, as an
// abandoned thread inside the driver holds its lock); retain_delay_ms_gpu<N> (cuDevicePrimaryCtxRetain of device N
// takes that long); alloc_host_fail_after_gpu<N> (cuMemAllocHost fails with out of memory once N allocations of device
// N succeeded); fault_kernel_gpu<N> = name with fault_kernel_after_gpu<N> = k (the launches of that kernel on device N
// after the k-th return fault_result, default 700 CUDA_ERROR_ILLEGAL_ADDRESS). host_link_shared (1: the GPUs share one
// host link: a pinned or pageable host<->device copy of 64 KiB or more queued while another GPU's such copies are in
// flight (until that GPU's next synchronisation) makes the event interval it ends that many times longer;
// fake_cuda_host_copy_overlaps() counts such copies); pcie_speed_file (a sysfs current_link_speed file the fake
// rewrites: pcie_speed_busy from a host copy until the next synchronisation, pcie_speed_idle after it, as an idle link
// trains down). host_gbs, device_gbs, peer_gbs (GB/s: an event interval that ends after copies is their bytes at these
// rates, host<->device, device<->device and smoke_stream_copy, peer; cuEventSynchronize with event_sleep sleeps it: the
// bench's model of copy time), gemm_memoize (1: a GEMM launched again on the same operands copies its first result
// instead of computing it on the CPU again), model_only (a comma-separated list of kernel names, and "memset": those
// kernels, and memsets of 16 KiB and more, are not emulated: their results read "all right"; the bench's GPU work
// then costs no CPU time, its data is never wrong), model_copies_from_bytes (N: stream-ordered copies of N bytes and
// more move no data; synchronous readbacks still do).
// stream_elapsed_ms (the event interval that ends with a launch of smoke_stream_copy, instead of elapsed_ms: the SM
// stream copy's own timing), corrupt_stream (1: every smoke_stream_copy gets one word wrong). Every event remembers the
// kernel launched last on its thread when it was recorded, and an interval is timed by the kernel that ended it. The
// copy-pattern kernels smoke_fill_words / smoke_check_words and smoke_compare_words are emulated like the memtest's.
// memtest_flip_word flips bit 2 of that word after the fill; memtest_flip_fill (n) limits it to the n-th
// smoke_fill_pattern launch since cuInit, counting from 1 (e.g. 2 with one chunk: the moving inversions pass).
// stream_stall_seconds (N: the streams never finish, as a collective stalled by an error: cuStreamQuery answers
// CUDA_ERROR_NOT_READY, cuStreamSynchronize blocks N seconds).

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "fake_cuda/fake_state.hpp"

namespace fake_cuda {

std::map<std::string, std::string>& config() {
  // Never destroyed: a step thread smoke abandoned (a hang, the run's budget) may still call in while the process
  // exits, after static destructors ran (ASan: heap-use-after-free in cuLaunchKernel at exit).
  static auto* values = new std::map<std::string, std::string>();
  return *values;
}

void load_config() {
  config().clear();
  const char* path = std::getenv("GPUENV_FAKE_CUDA");
  if (path == nullptr) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto equals = line.find('=');
    if (line.empty() || line[0] == '#' || equals == std::string::npos) continue;
    auto trim = [](std::string text) {
      const auto begin = text.find_first_not_of(" \t\r");
      const auto end = text.find_last_not_of(" \t\r");
      return begin == std::string::npos ? std::string() : text.substr(begin, end - begin + 1);
    };
    config()[trim(line.substr(0, equals))] = trim(line.substr(equals + 1));
  }
}

/// Whether `what` (a kernel name, "memset") is only modelled, not emulated (model_only).
bool modelled(const std::string& what);
/// Whether a stream-ordered copy of `bytes` moves no data (model_copies_from_bytes).
bool copy_modelled(std::size_t bytes);

long long number(const std::string& key, long long fallback) {
  const auto it = config().find(key);
  return it == config().end() ? fallback : std::strtoll(it->second.c_str(), nullptr, 0);
}

std::string text(const std::string& key, const std::string& fallback);

/// `key` for the device whose context this thread made current ("<key>_gpu<N>"), else `key`.
long long gpu_number(const std::string& key, long long fallback);

bool modelled(const std::string& what) {
  const std::string list = "," + text("model_only", "") + ",";
  return list.find("," + what + ",") != std::string::npos;
}

bool copy_modelled(std::size_t bytes) {
  const long long from = number("model_copies_from_bytes", 0);
  return from > 0 && bytes >= static_cast<std::size_t>(from);
}

std::string text(const std::string& key, const std::string& fallback) {
  const auto it = config().find(key);
  return it == config().end() ? fallback : it->second;
}

thread_local int t_current_device = 0;
long long gpu_number(const std::string& key, long long fallback) {
  return number(key + "_gpu" + std::to_string(t_current_device), number(key, fallback));
}

std::atomic<int> g_gemms_sleeping{0};
std::atomic<int> g_peak_gemms_sleeping{0};
void gemm_sleep() {
  const long long ms = number("gemm_sleep_ms", 0);
  if (ms <= 0) return;
  const int now = ++g_gemms_sleeping;
  for (int peak = g_peak_gemms_sleeping; now > peak && !g_peak_gemms_sleeping.compare_exchange_weak(peak, now);) {
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  --g_gemms_sleeping;
}

// peer_sleep_ms: each cuMemcpyPeerAsync lasts that long on the host; the copies in flight, by their two contexts.
std::mutex g_peer_copies_mutex;
// The containers below are never destroyed (references to leaked objects): a step thread smoke abandoned (a hang,
// the run's budget) may still call in while the process exits, after static destructors would have run.
std::vector<std::pair<void*, void*>>& g_peer_copies = *new std::vector<std::pair<void*, void*>>();
std::atomic<int> g_parallel_peer_copies{0};
std::atomic<int> g_peer_gpu_conflicts{0};

/// One peer copy in flight for peer_sleep_ms (none when it is not set): counts the other pairs' copies it overlaps.
class PeerCopyInFlight {
 public:
  PeerCopyInFlight(void* destination, void* source) : m_copy{destination, source} {
    const long long ms = number("peer_sleep_ms", 0);
    if (ms <= 0) return;
    m_counted = true;
    {
      const std::lock_guard<std::mutex> lock(g_peer_copies_mutex);
      const auto same_pair = [this](const std::pair<void*, void*>& other) {
        return std::minmax(other.first, other.second) == std::minmax(m_copy.first, m_copy.second);
      };
      const auto shares_gpu = [this](const std::pair<void*, void*>& other) {
        return other.first == m_copy.first || other.first == m_copy.second || other.second == m_copy.first ||
               other.second == m_copy.second;
      };
      bool other_pair = false, conflict = false;
      for (const auto& copy : g_peer_copies) {
        if (same_pair(copy)) continue;  // the pair's own two directions at once: the bidirectional copy
        other_pair = true;
        conflict = conflict || shares_gpu(copy);
      }
      if (other_pair) ++g_parallel_peer_copies;
      if (conflict) ++g_peer_gpu_conflicts;
      g_peer_copies.push_back(m_copy);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  ~PeerCopyInFlight() {
    if (!m_counted) return;
    const std::lock_guard<std::mutex> lock(g_peer_copies_mutex);
    g_peer_copies.erase(std::find(g_peer_copies.begin(), g_peer_copies.end(), m_copy));
  }
  PeerCopyInFlight(const PeerCopyInFlight&) = delete;
  PeerCopyInFlight& operator=(const PeerCopyInFlight&) = delete;

 private:
  std::pair<void*, void*> m_copy;
  bool m_counted = false;
};

int g_allocations = 0;
int g_gemm_launches = 0;
int g_fill_launches = 0;
// The last kernel this thread launched (a step's launches and its events share its thread); each event records it.
thread_local std::string t_last_kernel;
int g_module_loads = 0;
// alias_allocations_of: one memfd backs every allocation of that size; each gets its own mapping (address).
int g_alias_fd = -1;
std::size_t g_alias_bytes = 0;
std::map<unsigned long long, std::size_t>& g_mappings =
    *new std::map<unsigned long long, std::size_t>();  // mmap'ed allocations, unmapped on free
std::atomic<int> g_live_allocations{0};                // device and pinned host memory not yet freed
// The live malloc'ed allocations, in a registry that is never destroyed. Memory smoke leaves allocated on a GPU it
// abandoned (a hung step's buffers are never freed: its thread may still use them) belongs to the driver, which frees
// it with the context or at exit; it is no leak of the process, so LeakSanitizer must find it reachable even after
// the abandoned thread ended and dropped the last pointer to it (a test process that runs on long enough: the asan
// preset runs a test file's tests in one process). Leaks of smoke's own are counted by g_live_allocations.
std::mutex& g_heap_mutex = *new std::mutex;
std::set<void*>& g_heap_allocations = *new std::set<void*>;

void* heap_allocate(std::size_t bytes) {
  void* pointer = std::malloc(bytes);
  const std::lock_guard<std::mutex> lock(g_heap_mutex);
  g_heap_allocations.insert(pointer);
  return pointer;
}
void heap_free(void* pointer) {
  {
    const std::lock_guard<std::mutex> lock(g_heap_mutex);
    g_heap_allocations.erase(pointer);
  }
  std::free(pointer);
}
std::atomic<int> g_live_contexts{0};             // primary contexts retained and not released
std::atomic<int> g_alloc_host_cpus{0};           // CPUs the last cuMemAllocHost caller could run on
std::atomic<int> g_spin_launches{0};             // smoke_spin_wait launches (copies queued behind it)
std::atomic<int> g_fill_words_launches{0};       // smoke_fill_words launches (buffers written by the GPU)
std::atomic<int> g_check_words_launches{0};      // smoke_check_words launches (copies verified by the GPU)
std::atomic<int> g_spin_mapped_launches{0};      // ... with both words addressed by device aliases
std::atomic<int> g_spin_launches_since_init{0};  // for spin_timeouts
// Peer access: (current device, peer device) pairs enabled, and the most connections one device had at once.
std::mutex g_peer_mutex;
std::vector<std::pair<int, int>>& g_peer_connections = *new std::vector<std::pair<int, int>>();
int g_peak_peer_connections = 0;

// cuMemHostAlloc DEVICEMAP allocations (host address -> bytes) and the device aliases handed out for them: an alias is
// the host address plus this offset (a non-canonical address: using it on the host crashes, as it should).
constexpr unsigned long long device_alias_offset = 1ull << 56;
std::mutex g_mapped_mutex;
std::map<unsigned long long, std::size_t>& g_mapped_host =
    *new std::map<unsigned long long, std::size_t>();  // DEVICEMAP allocations
std::map<unsigned long long, std::size_t>& g_aliases =
    *new std::map<unsigned long long, std::size_t>();  // alias base -> bytes

/// The host address behind device alias `address` of mapped host memory, or nullptr when it is not one.
void* host_of_alias(unsigned long long address) {
  const std::lock_guard<std::mutex> lock(g_mapped_mutex);
  auto it = g_aliases.upper_bound(address);
  if (it == g_aliases.begin()) return nullptr;
  --it;
  if (address >= it->first + it->second) return nullptr;
  return reinterpret_cast<void*>(address - device_alias_offset);
}

// Primary contexts (one per device ordinal), the device of the calling thread's current context, and events, each
// remembering the device whose context was current when it was created (elapsed_ms_gpu<N>).
int g_contexts[16];
std::mutex g_per_gpu_mutex;
std::map<std::string, long long>& g_per_gpu_calls =
    *new std::map<std::string, long long>();  // "<what><device>" -> calls since cuInit
/// How many times `what` was called on this thread's device before (counted since cuInit).
long long calls_before(const std::string& what) {
  const std::lock_guard<std::mutex> lock(g_per_gpu_mutex);
  return g_per_gpu_calls[what + std::to_string(t_current_device)]++;
}
struct FakeEvent {
  int device;
  std::string kernel;   ///< the last kernel launched on the recording thread when the event was recorded
  int overlap = 1;      ///< host_link_shared: the most GPUs with host copies in flight since the previous event
  double copy_ms = -1;  ///< host_gbs & co: the copies' time since the previous event (negative: none)
};
// host_gbs & co: bytes this thread queued since its last event.
thread_local double t_host_bytes = 0, t_device_bytes = 0, t_peer_bytes = 0;
/// The time the copies since this thread's last event take at host_gbs / device_gbs / peer_gbs, or -1 (none set).
double copies_ms() {
  double ms = -1;
  for (const auto& [bytes, key] : {std::pair{t_host_bytes, "host_gbs"}, std::pair{t_device_bytes, "device_gbs"},
                                   std::pair{t_peer_bytes, "peer_gbs"}}) {
    const double rate = std::strtod(text(key, "0").c_str(), nullptr);
    if (rate > 0 && bytes > 0) ms = std::max(ms, 0.0) + bytes / rate / 1e6;
  }
  t_host_bytes = t_device_bytes = t_peer_bytes = 0;
  return ms;
}
// host_link_shared: the GPUs with bulk host copies in flight, and what this thread's copies saw since its last event.
std::mutex g_host_link_mutex;
std::set<int>& g_host_copies_in_flight = *new std::set<int>();
std::atomic<int> g_host_copy_overlaps{0};
thread_local int t_overlap = 1;
/// A host<->device copy of `bytes` queued by this thread's device.
void host_copy_queued(std::size_t bytes) {
  t_host_bytes += static_cast<double>(bytes);
  if (bytes < 65536) return;  // control words (counters), not bulk data
  if (const std::string file = text("pcie_speed_file", ""); !file.empty())
    std::ofstream(file) << text("pcie_speed_busy", "32.0 GT/s PCIe") << "\n";
  if (number("host_link_shared", 0) == 0) return;
  const std::lock_guard<std::mutex> lock(g_host_link_mutex);
  g_host_copies_in_flight.insert(t_current_device);
  const int active = static_cast<int>(g_host_copies_in_flight.size());
  if (active > 1) ++g_host_copy_overlaps;
  t_overlap = std::max(t_overlap, active);
}
/// This thread's device synchronised: its queued host copies are done.
void host_copies_done() {
  if (const std::string file = text("pcie_speed_file", ""); !file.empty())
    std::ofstream(file) << text("pcie_speed_idle", "2.5 GT/s PCIe") << "\n";
  const std::lock_guard<std::mutex> lock(g_host_link_mutex);
  g_host_copies_in_flight.erase(t_current_device);
}
std::mutex g_events_mutex;
std::deque<FakeEvent>& g_events = *new std::deque<FakeEvent>();  // never shrinks: a handful per run
std::atomic<int> g_all_gemm_launches{0};                         // GEMM launches (kernels and cuBLAS), never reset
std::mutex g_event_sleep_mutex;                                  // event_sleep_serial: one sleeping GPU at a time

// A launch that hangs holds this, and so does the library's teardown at exit (exit_waits_for_hang).
std::mutex g_hang_mutex;
std::atomic<bool> g_exit_waits_for_hang{false};
struct Teardown {
  ~Teardown() {
    if (g_exit_waits_for_hang) const std::lock_guard<std::mutex> wait(g_hang_mutex);
  }
} g_teardown;

// legacy_async: legacy-stream work deferred until the next synchronisation.
std::mutex g_legacy_mutex;
std::vector<std::function<void()>>& g_legacy_pending = *new std::vector<std::function<void()>>();
void run_legacy_pending() {
  const std::lock_guard<std::mutex> lock(g_legacy_mutex);
  for (auto& work : g_legacy_pending) work();
  g_legacy_pending.clear();
}
/// Runs `work` now, or after the next synchronisation when legacy_async is set.
void legacy(std::function<void()> work) {
  if (number("legacy_async", 0) == 0) return work();
  const std::lock_guard<std::mutex> lock(g_legacy_mutex);
  g_legacy_pending.push_back(std::move(work));
}

struct FakeFunction {
  const char* name;
};
FakeFunction g_functions[] = {{"smoke_sgemm"},         {"smoke_hgemm_wmma"},    {"smoke_bf16gemm_wmma"},
                              {"smoke_fill_pattern"},  {"smoke_check_pattern"}, {"smoke_move_inversion"},
                              {"smoke_spin_wait"},     {"smoke_fill_words"},    {"smoke_check_words"},
                              {"smoke_compare_words"}, {"smoke_stream_copy"}};

float half_to_float(unsigned short bits) {
  const unsigned sign = (bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  unsigned out = 0;
  if (exponent == 0) {
    float value = static_cast<float>(mantissa) / 16777216.0f;
    return sign != 0 ? -value : value;
  }
  out = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  float value;
  std::memcpy(&value, &out, 4);
  return value;
}

// The copy pattern of src/smoke/internal/verify.cpp (the library under test is not linked into its own fake).
unsigned pattern_word(unsigned long long index, unsigned seed) {
  unsigned long long x = index * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<unsigned>(x);
}

float bf16_to_float(unsigned short bits) {
  const unsigned out = static_cast<unsigned>(bits) << 16;
  float value;
  std::memcpy(&value, &out, 4);
  return value;
}

template <typename Load>
void gemm(const void* a, const void* b, float* c, int m, int n, int k, Load load) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0;
      for (int p = 0; p < k; ++p) sum += load(a, i * k + p) * load(b, p * n + j);
      c[i * n + j] = sum;
    }
  }
}

}  // namespace fake_cuda

using namespace fake_cuda;

extern "C" {

int fake_cuda_live_allocations() { return g_live_allocations; }
int fake_cuda_live_contexts() { return g_live_contexts; }
int fake_cuda_alloc_host_cpus() { return g_alloc_host_cpus; }
int fake_cuda_spin_launches() { return g_spin_launches; }
int fake_cuda_spin_mapped_launches() { return g_spin_mapped_launches; }
int fake_cuda_fill_words_launches() { return g_fill_words_launches; }
int fake_cuda_check_words_launches() { return g_check_words_launches; }
int fake_cuda_gemm_launches() { return g_all_gemm_launches; }
int fake_cuda_host_copy_overlaps() { return g_host_copy_overlaps; }
/// The most GEMM launches sleeping gemm_sleep_ms at once (GPUs running their matmuls in parallel), since load.
int fake_cuda_peak_concurrent_gemms() { return g_peak_gemms_sleeping; }
/// Peer copies that started while another pair's copy was in flight (pairs of a round copying at the same time).
int fake_cuda_parallel_peer_copies() { return g_parallel_peer_copies; }
/// Peer copies that started while a copy of another pair with one of the same GPUs was in flight (never in rounds of
/// disjoint pairs).
int fake_cuda_peer_gpu_conflicts() { return g_peer_gpu_conflicts; }
int fake_cuda_peer_connections() {
  const std::lock_guard<std::mutex> lock(g_peer_mutex);
  return static_cast<int>(g_peer_connections.size());
}
int fake_cuda_peak_peer_connections() {
  const std::lock_guard<std::mutex> lock(g_peer_mutex);
  return g_peak_peer_connections;
}

int cuDriverGetVersion(int* version) {
  load_config();
  *version = static_cast<int>(number("driver_version", 12080));
  return 0;
}
int cuInit(unsigned) {
  load_config();
  g_allocations = 0;
  g_gemm_launches = 0;
  g_fill_launches = 0;
  g_module_loads = 0;
  g_spin_launches_since_init = 0;
  {
    const std::lock_guard<std::mutex> lock(g_peer_mutex);
    g_peer_connections.clear();
    g_peak_peer_connections = 0;
  }
  {
    const std::lock_guard<std::mutex> lock(g_per_gpu_mutex);
    g_per_gpu_calls.clear();
  }
  g_exit_waits_for_hang = number("exit_waits_for_hang", 0) != 0;
  return static_cast<int>(number("init_result", 0));
}
int cuGetErrorName(int result, const char** name) {
  switch (result) {
    case 2:
      *name = "CUDA_ERROR_OUT_OF_MEMORY";
      return 0;
    case 100:
      *name = "CUDA_ERROR_NO_DEVICE";
      return 0;
    case 719:
      *name = "CUDA_ERROR_LAUNCH_FAILED";
      return 0;
    default:
      return 1;  // unknown: gpuenv falls back to its own table
  }
}
int cuGetErrorString(int result, const char** text) {
  if (result == 719) {
    *text = "unspecified launch failure";
    return 0;
  }
  return 1;
}
int cuDeviceGetCount(int* count) {
  *count = static_cast<int>(number("device_count", 1));
  return 0;
}
int cuDeviceGet(int* device, int ordinal) {
  *device = ordinal;
  return 0;
}
int cuDeviceGetName(char* name, int length, int) {
  std::strncpy(name, text("name", "NVIDIA H100 80GB HBM3").c_str(), static_cast<std::size_t>(length));
  return 0;
}
int cuDeviceGetAttribute(int* value, int attribute, int) {
  switch (attribute) {
    case 75:
      *value = static_cast<int>(number("cc_major", 9));
      return 0;
    case 76:
      *value = static_cast<int>(number("cc_minor", 0));
      return 0;
    case 16:
      *value = 132;
      return 0;
    case 13:
      *value = 1980000;
      return 0;
    case 36:
      *value = 2619000;
      return 0;
    case 37:
      *value = 5120;
      return 0;
    case 38:  // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
      *value = static_cast<int>(number("l2_bytes", 0));
      return 0;
    default:
      *value = 0;
      return 1;
  }
}
int cuDeviceTotalMem_v2(std::size_t* bytes, int) {
  *bytes = 85899345920ull;
  return 0;
}
int cuDeviceGetPCIBusId(char* bus, int length, int device) {
  std::string id = text("pci_bus_id", "00000000:1B:00.0");
  if (device > 0 && device < 10 && number("mig_shared_bus", 0) == 0)
    id[id.size() - 3] = static_cast<char>('0' + device);
  std::strncpy(bus, id.c_str(), static_cast<std::size_t>(length));
  return 0;
}
int cuDevicePrimaryCtxRetain(void** context, int device) {
  if (const long long delay = number("retain_delay_ms_gpu" + std::to_string(device), 0); delay > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  *context = &g_contexts[device % 16];
  ++g_live_contexts;
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int) {
  // ctx_release_hang_seconds: the release blocks that long (a context that cannot be torn down on a wedged GPU).
  if (const long long hang = number("ctx_release_hang_seconds", 0); hang > 0)
    std::this_thread::sleep_for(std::chrono::seconds(hang));
  --g_live_contexts;
  return 0;
}
int cuCtxSetCurrent(void* context) {
  const auto* slot = static_cast<int*>(context);
  if (slot >= g_contexts && slot < g_contexts + 16) t_current_device = static_cast<int>(slot - g_contexts);
  return 0;
}
int cuCtxSynchronize() { return 0; }
int cuModuleLoadData(void** module, const void* image) {
  static int dummy;
  *module = &dummy;
  if (image == nullptr) return 1;
  const std::string results = text("module_load_results", "");
  if (results.empty()) return static_cast<int>(number("module_load_result", 0));
  std::vector<int> sequence;
  for (std::size_t begin = 0; begin <= results.size();) {
    const std::size_t comma = std::min(results.find(',', begin), results.size());
    sequence.push_back(std::atoi(results.substr(begin, comma - begin).c_str()));
    begin = comma + 1;
  }
  const int call = g_module_loads++;
  return sequence[std::min<std::size_t>(static_cast<std::size_t>(call), sequence.size() - 1)];
}
int cuModuleUnload(void*) { return 0; }
int cuModuleGetFunction(void** function, void*, const char* name) {
  for (FakeFunction& candidate : g_functions) {
    if (std::strcmp(candidate.name, name) == 0) {
      *function = &candidate;
      return 0;
    }
  }
  return 500;  // CUDA_ERROR_NOT_FOUND
}
int cuLaunchKernel(void* function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                   void** params, void**) {
  // The copy timing's spin kernel: the fake runs work at enqueue time, so there is nothing to hold; launch_result and
  // launch_hang_seconds model the compute kernels and leave it alone.
  const std::string name = static_cast<FakeFunction*>(function)->name;
  t_last_kernel = name;
  if (name == "smoke_fill_words") ++g_fill_words_launches;
  if (name == "smoke_check_words") ++g_check_words_launches;
  if (name == "smoke_spin_wait") {
    ++g_spin_launches;
    const auto release = *static_cast<unsigned long long*>(params[0]);
    const auto timed_out = *static_cast<unsigned long long*>(params[1]);
    void* timed_out_host = host_of_alias(timed_out);
    if (host_of_alias(release) != nullptr && timed_out_host != nullptr) ++g_spin_mapped_launches;
    if (timed_out_host == nullptr) timed_out_host = reinterpret_cast<void*>(timed_out);  // a host pointer (UVA)
    if (g_spin_launches_since_init++ < number("spin_timeouts", 0)) *static_cast<volatile unsigned*>(timed_out_host) = 1;
    return 0;
  }
  if (const long long hang = gpu_number("launch_hang_seconds", 0);
      hang > 0 && name.rfind(text("launch_hang_kernel", ""), 0) == 0) {
    const std::lock_guard<std::mutex> hung(g_hang_mutex);
    std::this_thread::sleep_for(std::chrono::seconds(hang));
  } else if (number("hang_holds_driver_lock", 0) != 0) {
    const std::lock_guard<std::mutex> driver(g_hang_mutex);  // waits while another thread's launch hangs
  }
  if (text("fault_kernel_gpu" + std::to_string(t_current_device), "") == name &&
      calls_before("fault:" + name) >= gpu_number("fault_kernel_after", 0))
    return static_cast<int>(number("fault_result", 700));
  if (const int result = static_cast<int>(number("launch_result", 0)); result != 0) return result;
  if (number("emulate_kernels", 1) == 0) return 0;
  if (modelled(name)) {  // no data, but the stream copy's bytes still set its modelled time (device_gbs)
    if (name == "smoke_stream_copy")
      t_device_bytes += static_cast<double>(*static_cast<unsigned long long*>(params[2]) * 16);
    return 0;
  }
  if (name == "smoke_fill_words") {  // word i = pattern_word(i, seed)
    auto* words = *static_cast<unsigned**>(params[0]);
    const auto count = *static_cast<unsigned long long*>(params[1]);
    const auto seed = *static_cast<unsigned*>(params[2]);
    for (unsigned long long i = 0; i < count; ++i) words[i] = pattern_word(i, seed);
    return 0;
  }
  if (name == "smoke_check_words" || name == "smoke_compare_words") {
    // As the kernels: result[0] += wrong words, result[1] = min((lowest wrong index << 32) | the word read there).
    const auto* words = *static_cast<const unsigned**>(params[0]);
    const bool against_pattern = name == "smoke_check_words";
    const auto* expected = against_pattern ? nullptr : *static_cast<const unsigned**>(params[1]);
    const auto count = *static_cast<unsigned long long*>(params[against_pattern ? 1 : 2]);
    const auto seed = against_pattern ? *static_cast<unsigned*>(params[2]) : 0u;
    auto* result = *static_cast<unsigned long long**>(params[3]);
    for (unsigned long long i = 0; i < count; ++i) {
      const unsigned want = against_pattern ? pattern_word(i, seed) : expected[i];
      if (words[i] != want) {
        ++result[0];
        result[1] = std::min(result[1], (i << 32) | words[i]);
      }
    }
    return 0;
  }
  if (name == "smoke_stream_copy") {  // 16-byte vectors in -> out; corrupt_stream flips one word of every launch
    const void* in = *static_cast<void**>(params[0]);
    void* out = *static_cast<void**>(params[1]);
    const auto vectors = *static_cast<unsigned long long*>(params[2]);
    std::memcpy(out, in, vectors * 16);
    t_device_bytes += static_cast<double>(vectors * 16);
    if (number("corrupt_stream", 0) != 0 && vectors > 0) static_cast<unsigned*>(out)[2] ^= 0x20u;
    return 0;
  }
  if (name == "smoke_fill_pattern" || name == "smoke_check_pattern" || name == "smoke_move_inversion") {
    auto* words = *static_cast<unsigned**>(params[0]);
    const auto count = *static_cast<unsigned long long*>(params[1]);
    const auto seed = *static_cast<unsigned*>(params[2]);
    const auto invert = *static_cast<unsigned*>(params[3]);
    const auto mode = *static_cast<unsigned*>(params[name == "smoke_fill_pattern" ? 4 : 5]);
    const unsigned long long base = reinterpret_cast<unsigned long long>(words) / 4;  // absolute word address
    auto expected = [&](unsigned long long i) {
      const unsigned long long address = base + i;
      return (mode == 0 ? pattern_word(address, seed) : 1u << static_cast<unsigned>((address + seed) & 31u)) ^ invert;
    };
    if (name == "smoke_fill_pattern") {
      for (unsigned long long i = 0; i < count; ++i) words[i] = expected(i);
      const long long flip = number("memtest_flip_word", -1);
      const long long only = number("memtest_flip_fill", 0);
      ++g_fill_launches;
      if (flip >= 0 && static_cast<unsigned long long>(flip) < count && (only == 0 || only == g_fill_launches))
        words[flip] ^= 0x4u;
      return 0;
    }
    // As memtest_kernels.cuh memtest_report: result[0] += wrong words, result[1] = min(result[1], (lowest wrong index
    // << 32) | the word read there), the word read before a moving inversion overwrites it.
    auto* result = *static_cast<unsigned long long**>(params[4]);
    for (unsigned long long i = 0; i < count; ++i) {
      const unsigned want = expected(i);
      if (words[i] != want) {
        ++result[0];
        result[1] = std::min(result[1], (i << 32) | words[i]);
      }
      if (name == "smoke_move_inversion") words[i] = ~want;
    }
    return 0;
  }
  const void* a = *static_cast<void**>(params[0]);
  const void* b = *static_cast<void**>(params[1]);
  float* c = *static_cast<float**>(params[2]);
  const int m = *static_cast<int*>(params[3]), n = *static_cast<int*>(params[4]), k = *static_cast<int*>(params[5]);
  // gemm_memoize: the same operands again: the first result, copied (the bench's GEMMs cost no CPU time).
  static std::mutex memo_mutex;
  static auto& memo = *new std::map<std::tuple<std::uint64_t, std::uint64_t, int, std::string>,
                                    std::vector<float>>();  // never destroyed, as config()
  const bool memoize = number("gemm_memoize", 0) != 0;
  auto values = [&name](const void* p, std::size_t count) {  // row-major m x k and k x n, packed
    if (name == "smoke_sgemm")
      return operand_hash(p, count, [](const void* q, int i) { return static_cast<const float*>(q)[i]; });
    return operand_hash(
        p, count, [](const void* q, int i) { return static_cast<float>(static_cast<const unsigned short*>(q)[i]); });
  };
  const auto key = memoize ? std::tuple{values(a, static_cast<std::size_t>(m) * k),
                                        values(b, static_cast<std::size_t>(k) * n), m, name}
                           : std::tuple<std::uint64_t, std::uint64_t, int, std::string>{};
  bool memoized = false;
  if (memoize) {
    const std::lock_guard<std::mutex> lock(memo_mutex);
    if (const auto it = memo.find(key); it != memo.end() && it->second.size() == static_cast<std::size_t>(m) * n) {
      std::memcpy(c, it->second.data(), it->second.size() * 4);
      memoized = true;
    }
  }
  if (!memoized && name == "smoke_sgemm")
    gemm(a, b, c, m, n, k, [](const void* p, int i) { return static_cast<const float*>(p)[i]; });
  if (!memoized && name == "smoke_hgemm_wmma")
    gemm(a, b, c, m, n, k,
         [](const void* p, int i) { return half_to_float(static_cast<const unsigned short*>(p)[i]); });
  if (!memoized && name == "smoke_bf16gemm_wmma")
    gemm(a, b, c, m, n, k,
         [](const void* p, int i) { return bf16_to_float(static_cast<const unsigned short*>(p)[i]); });
  if (!memoized && memoize) {
    const std::lock_guard<std::mutex> lock(memo_mutex);
    memo[key].assign(c, c + static_cast<std::size_t>(m) * n);
  }
  ++g_all_gemm_launches;
  gemm_sleep();
  if (++g_gemm_launches == number("gemm_fault_launch", -1)) c[(m / 2) * n + n / 3] += 0.5f;
  return 0;
}
int cuMemAlloc_v2(unsigned long long* pointer, std::size_t bytes) {
  const long long result = number("alloc_result", 0);
  if (result != 0 && g_allocations >= number("alloc_fail_after", 0)) return static_cast<int>(result);
  if (const long long limit = number("alloc_max_bytes", 0); limit > 0 && bytes > static_cast<std::size_t>(limit))
    return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  ++g_allocations;
  ++g_live_allocations;
  if (const auto alias = static_cast<std::size_t>(number("alias_allocations_of", 0)); alias != 0 && bytes == alias) {
    if (g_alias_fd < 0 || g_alias_bytes != bytes) {
      if (g_alias_fd >= 0) ::close(g_alias_fd);
      g_alias_fd = ::memfd_create("fake-cuda-alias", 0);
      g_alias_bytes = bytes;
      if (g_alias_fd < 0 || ::ftruncate(g_alias_fd, static_cast<off_t>(bytes)) != 0) return 2;
    }
    void* mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, g_alias_fd, 0);
    if (mapped == MAP_FAILED) return 2;
    *pointer = reinterpret_cast<unsigned long long>(mapped);
    g_mappings[*pointer] = bytes;
    return 0;
  }
  *pointer = reinterpret_cast<unsigned long long>(heap_allocate(bytes));
  return 0;
}
int cuMemFree_v2(unsigned long long pointer) {
  --g_live_allocations;
  if (const auto mapping = g_mappings.find(pointer); mapping != g_mappings.end()) {
    ::munmap(reinterpret_cast<void*>(pointer), mapping->second);
    g_mappings.erase(mapping);
    return 0;
  }
  heap_free(reinterpret_cast<void*>(pointer));
  return 0;
}
int cuMemAllocHost_v2(void** pointer, std::size_t bytes) {
  if (const long long after = gpu_number("alloc_host_fail_after", -1);
      after >= 0 && calls_before("alloc_host") >= after)
    return 2;      // CUDA_ERROR_OUT_OF_MEMORY
  cpu_set_t cpus;  // where the allocating thread may run: pinned memory lands on that NUMA node
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) g_alloc_host_cpus = CPU_COUNT(&cpus);
  ++g_live_allocations;
  *pointer = heap_allocate(bytes);
  return 0;
}
int cuMemHostAlloc(void** pointer, std::size_t bytes, unsigned flags) {
  const int result = cuMemAllocHost_v2(pointer, bytes);
  if (result == 0 && (flags & 0x02u) != 0) {  // CU_MEMHOSTALLOC_DEVICEMAP
    const std::lock_guard<std::mutex> lock(g_mapped_mutex);
    g_mapped_host[reinterpret_cast<unsigned long long>(*pointer)] = bytes;
  }
  return result;
}
int cuMemHostGetDevicePointer_v2(unsigned long long* device, void* host, unsigned flags) {
  if (const int result = static_cast<int>(number("host_get_device_pointer_result", 0)); result != 0) return result;
  const std::lock_guard<std::mutex> lock(g_mapped_mutex);
  const auto mapped = g_mapped_host.find(reinterpret_cast<unsigned long long>(host));
  if (flags != 0 || mapped == g_mapped_host.end()) return 1;  // CUDA_ERROR_INVALID_VALUE: not mapped (cuda.h)
  *device = mapped->first + device_alias_offset;
  g_aliases[*device] = mapped->second;
  return 0;
}
int cuMemFreeHost(void* pointer) {
  {
    const std::lock_guard<std::mutex> lock(g_mapped_mutex);
    const auto address = reinterpret_cast<unsigned long long>(pointer);
    g_mapped_host.erase(address);
    g_aliases.erase(address + device_alias_offset);
  }
  --g_live_allocations;
  heap_free(pointer);
  return 0;
}
int cuMemcpyHtoD_v2(unsigned long long destination, const void* source, std::size_t bytes) {
  // A pageable upload returns once the data is staged; the DMA may land after later stream work.
  std::vector<char> staged(static_cast<const char*>(source), static_cast<const char*>(source) + bytes);
  legacy([destination, staged = std::move(staged)] {
    std::memcpy(reinterpret_cast<void*>(destination), staged.data(), staged.size());
  });
  return 0;
}
int cuMemcpyDtoH_v2(void* destination, unsigned long long source, std::size_t bytes) {
  run_legacy_pending();  // the legacy stream orders its own work
  std::memcpy(destination, reinterpret_cast<const void*>(source), bytes);
  // Bulk data only (64 bytes and more): the 16-byte result words of the check kernels come back right.
  if (number("corrupt_dtoh", 0) != 0 && bytes >= 64) static_cast<unsigned*>(destination)[1] ^= 0x10u;
  return 0;
}
int cuMemcpyHtoDAsync_v2(unsigned long long destination, const void* source, std::size_t bytes, void*) {
  host_copy_queued(bytes);
  if (!copy_modelled(bytes)) std::memcpy(reinterpret_cast<void*>(destination), source, bytes);
  return 0;
}
int cuMemcpyDtoHAsync_v2(void* destination, unsigned long long source, std::size_t bytes, void*) {
  host_copy_queued(bytes);
  if (copy_modelled(bytes)) return 0;
  return cuMemcpyDtoH_v2(destination, source, bytes);
}
int cuMemcpyDtoDAsync_v2(unsigned long long destination, unsigned long long source, std::size_t bytes, void*) {
  t_device_bytes += static_cast<double>(bytes);
  if (copy_modelled(bytes)) return 0;
  std::memcpy(reinterpret_cast<void*>(destination), reinterpret_cast<const void*>(source), bytes);
  return 0;
}
int cuMemsetD32Async(unsigned long long destination, unsigned value, std::size_t count, void*) {
  if (count >= 4096 && modelled("memset")) return 0;  // bulk fills only: small counters are still set
  auto* words = reinterpret_cast<unsigned*>(destination);
  for (std::size_t i = 0; i < count; ++i) words[i] = value;
  return 0;
}
int cuMemsetD32_v2(unsigned long long destination, unsigned value, std::size_t count) {
  legacy([=] { cuMemsetD32Async(destination, value, count, nullptr); });
  return 0;
}
int cuStreamCreate(void** stream, unsigned) {
  static int dummy;
  *stream = &dummy;
  return 0;
}
int cuStreamSynchronize(void*) {
  if (const long long stall = number("stream_stall_seconds", 0); stall > 0)
    std::this_thread::sleep_for(std::chrono::seconds(stall));
  run_legacy_pending();
  host_copies_done();
  return 0;
}
int cuStreamQuery(void* stream) {
  if (number("stream_stall_seconds", 0) > 0) return 600;  // CUDA_ERROR_NOT_READY
  return cuStreamSynchronize(stream);
}
int cuStreamDestroy_v2(void*) { return 0; }
int cuEventCreate(void** event, unsigned) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  *event = &g_events.emplace_back(FakeEvent{t_current_device, {}});
  return 0;
}
int cuEventRecord(void* event, void*) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  static_cast<FakeEvent*>(event)->kernel = t_last_kernel;
  static_cast<FakeEvent*>(event)->overlap = t_overlap;
  static_cast<FakeEvent*>(event)->copy_ms = copies_ms();
  t_overlap = 1;
  return 0;
}
int cuEventSynchronize(void* event) {
  run_legacy_pending();
  if (number("event_sleep", 0) != 0) {
    double ms = std::strtod(text("elapsed_ms", "1.0").c_str(), nullptr);
    {
      const std::lock_guard<std::mutex> lock(g_events_mutex);
      if (static_cast<FakeEvent*>(event)->copy_ms >= 0) ms = static_cast<FakeEvent*>(event)->copy_ms;
    }
    std::unique_lock<std::mutex> turn(g_event_sleep_mutex, std::defer_lock);
    if (number("event_sleep_serial", 0) != 0) turn.lock();
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
  }
  host_copies_done();
  return 0;
}
int cuEventElapsedTime(float* ms, void*, void* stop) {
  std::string kernel;
  {
    const std::lock_guard<std::mutex> lock(g_events_mutex);
    kernel = static_cast<FakeEvent*>(stop)->kernel;
  }
  // The interval is timed by the kernel that ended it: our tensor GEMMs (wmma_elapsed_ms), the stream copy
  // (stream_elapsed_ms), else the device's (elapsed_ms_gpu<N>) or everyone's (elapsed_ms).
  const bool tensor = kernel == "smoke_hgemm_wmma" || kernel == "smoke_bf16gemm_wmma";
  std::string elapsed =
      text("elapsed_ms_gpu" + std::to_string(static_cast<FakeEvent*>(stop)->device), text("elapsed_ms", "1.0"));
  if (tensor && !text("wmma_elapsed_ms", "").empty()) elapsed = text("wmma_elapsed_ms", "");
  if (kernel == "smoke_stream_copy" && !text("stream_elapsed_ms", "").empty()) elapsed = text("stream_elapsed_ms", "");
  *ms = static_cast<float>(std::strtod(elapsed.c_str(), nullptr));
  {
    const std::lock_guard<std::mutex> lock(g_events_mutex);
    if (static_cast<FakeEvent*>(stop)->copy_ms >= 0) *ms = static_cast<float>(static_cast<FakeEvent*>(stop)->copy_ms);
  }
  if (number("host_link_shared", 0) != 0) {
    const std::lock_guard<std::mutex> lock(g_events_mutex);
    *ms *= static_cast<float>(static_cast<FakeEvent*>(stop)->overlap);
  }
  return 0;
}
int cuEventDestroy_v2(void*) { return 0; }
int cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  *free = static_cast<std::size_t>(number("free_memory", 4 << 20));
  *total = 85899345920ull;
  return 0;
}
int cuDeviceCanAccessPeer(int* can_access, int, int) {
  *can_access = static_cast<int>(number("peer_access", 1));
  return 0;
}
int cuCtxEnablePeerAccess(void* peer_context, unsigned) {
  if (const int result = static_cast<int>(number("peer_enable_result", 0)); result != 0) return result;
  const int current = t_current_device;
  const int peer = static_cast<int>(static_cast<int*>(peer_context) - g_contexts);
  const std::lock_guard<std::mutex> lock(g_peer_mutex);
  const std::pair<int, int> connection{current, peer};
  if (std::find(g_peer_connections.begin(), g_peer_connections.end(), connection) != g_peer_connections.end())
    return 704;  // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
  auto connections_of = [&](int device) {
    return std::count_if(g_peer_connections.begin(), g_peer_connections.end(),
                         [&](const std::pair<int, int>& c) { return c.first == device || c.second == device; });
  };
  const long long limit = number("peer_connection_limit", 0);
  if (limit > 0 && (connections_of(current) >= limit || connections_of(peer) >= limit)) return 711;
  g_peer_connections.push_back(connection);
  g_peak_peer_connections =
      std::max(g_peak_peer_connections, static_cast<int>(std::max(connections_of(current), connections_of(peer))));
  return 0;
}
int cuCtxDisablePeerAccess(void* peer_context) {
  const int peer = static_cast<int>(static_cast<int*>(peer_context) - g_contexts);
  const std::lock_guard<std::mutex> lock(g_peer_mutex);
  const auto it =
      std::find(g_peer_connections.begin(), g_peer_connections.end(), std::pair<int, int>{t_current_device, peer});
  if (it == g_peer_connections.end()) return 705;  // CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
  g_peer_connections.erase(it);
  return 0;
}
int cuMemcpyPeerAsync(unsigned long long destination, void* destination_context, unsigned long long source,
                      void* source_context, std::size_t bytes, void*) {
  t_peer_bytes += static_cast<double>(bytes);
  const PeerCopyInFlight in_flight(destination_context, source_context);
  if (const long long hang = number("peer_hang_seconds", 0); hang > 0) {
    std::this_thread::sleep_for(std::chrono::seconds(hang));  // a copy stuck on a dead link
  }
  if (copy_modelled(bytes)) return 0;
  std::memcpy(reinterpret_cast<void*>(destination), reinterpret_cast<const void*>(source), bytes);
  if (number("corrupt_peer", 0) != 0 && bytes >= 8) reinterpret_cast<unsigned*>(destination)[1] ^= 0x100u;
  return 0;
}

}  // extern "C"
