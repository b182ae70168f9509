// A fake libcuda.so.1 (and libcublas) for tests: exports the driver API and cuBLAS entry points gpuenv smoke uses
// and answers them from the key=value file named by GPUENV_FAKE_CUDA (re-read at every cuInit), so the real
// dlopen/driver-API path runs without a GPU. "Device" memory is host memory; kernels and GEMMs are emulated on the
// CPU (small sizes only). The same library serves as GPUENV_CUBLAS_LIBRARY.
//
// Keys: init_result, driver_version (e.g. 12080), device_count, name, pci_bus_id, cc_major, cc_minor,
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
// got device aliases from cuMemHostGetDevicePointer_v2 of memory cuMemHostAlloc mapped (DEVICEMAP) for both flag words.
// peer_hang_seconds (every cuMemcpyPeerAsync blocks that long: a copy stuck on a dead link), event_sleep (1:
// cuEventSynchronize sleeps elapsed_ms, so the host clock sees the time the events report), event_sleep_serial (1:
// those sleeps take turns across all GPUs, as GPUs whose copies drift apart would each run alone), gemm_sleep_ms (every
// GEMM launch, kernel or cuBLAS, also takes this long on the host: a launch in flight lasts at least that).
// fake_cuda_gemm_launches() counts the GEMMs (our kernels and cuBLAS) launched since the library loaded.
// memtest_flip_word flips bit 2 of that word after the fill; memtest_flip_fill (n) limits it to the n-th
// smoke_fill_pattern launch since cuInit, counting from 1 (e.g. 2 with one chunk: the moving inversions pass).

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
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda/fake_state.hpp"

namespace fake_cuda {

std::map<std::string, std::string>& config() {
  static std::map<std::string, std::string> values;
  return values;
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

long long number(const std::string& key, long long fallback) {
  const auto it = config().find(key);
  return it == config().end() ? fallback : std::strtoll(it->second.c_str(), nullptr, 0);
}

std::string text(const std::string& key, const std::string& fallback) {
  const auto it = config().find(key);
  return it == config().end() ? fallback : it->second;
}

int g_allocations = 0;
int g_gemm_launches = 0;
int g_fill_launches = 0;
// The last kernel this thread launched was a tensor GEMM (a step's launch and its event interval share its thread):
// the next cuEventElapsedTime reads wmma_elapsed_ms, once.
thread_local bool t_tensor_kernel_timed = false;
int g_module_loads = 0;
// alias_allocations_of: one memfd backs every allocation of that size; each gets its own mapping (address).
int g_alias_fd = -1;
std::size_t g_alias_bytes = 0;
std::map<unsigned long long, std::size_t> g_mappings;  // mmap'ed allocations, unmapped on free
std::atomic<int> g_live_allocations{0};                // device and pinned host memory not yet freed
std::atomic<int> g_live_contexts{0};                   // primary contexts retained and not released
std::atomic<int> g_alloc_host_cpus{0};                 // CPUs the last cuMemAllocHost caller could run on
std::atomic<int> g_spin_launches{0};                   // smoke_spin_wait launches (copies queued behind it)
std::atomic<int> g_spin_mapped_launches{0};            // ... with both words addressed by device aliases
std::atomic<int> g_spin_launches_since_init{0};        // for spin_timeouts

// cuMemHostAlloc DEVICEMAP allocations (host address -> bytes) and the device aliases handed out for them: an alias is
// the host address plus this offset (a non-canonical address: using it on the host crashes, as it should).
constexpr unsigned long long device_alias_offset = 1ull << 56;
std::mutex g_mapped_mutex;
std::map<unsigned long long, std::size_t> g_mapped_host;  // DEVICEMAP allocations
std::map<unsigned long long, std::size_t> g_aliases;      // alias base -> bytes

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
thread_local int t_current_device = 0;
struct FakeEvent {
  int device;
};
std::mutex g_events_mutex;
std::deque<FakeEvent> g_events;           // never shrinks: a handful per run
std::atomic<int> g_all_gemm_launches{0};  // GEMM launches (kernels and cuBLAS), never reset
std::mutex g_event_sleep_mutex;           // event_sleep_serial: one sleeping GPU at a time

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
std::vector<std::function<void()>> g_legacy_pending;
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
FakeFunction g_functions[] = {{"smoke_sgemm"},        {"smoke_hgemm_wmma"},    {"smoke_bf16gemm_wmma"},
                              {"smoke_fill_pattern"}, {"smoke_check_pattern"}, {"smoke_move_inversion"},
                              {"smoke_spin_wait"}};

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

// The copy pattern of src/smoke/verify.cpp (the library under test is not linked into its own fake).
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
int fake_cuda_gemm_launches() { return g_all_gemm_launches; }

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
  if (device > 0 && device < 10) id[id.size() - 3] = static_cast<char>('0' + device);
  std::strncpy(bus, id.c_str(), static_cast<std::size_t>(length));
  return 0;
}
int cuDevicePrimaryCtxRetain(void** context, int device) {
  *context = &g_contexts[device % 16];
  ++g_live_contexts;
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int) {
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
  t_tensor_kernel_timed = name == "smoke_hgemm_wmma" || name == "smoke_bf16gemm_wmma";
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
  if (const long long hang = number("launch_hang_seconds", 0); hang > 0) {
    const std::lock_guard<std::mutex> hung(g_hang_mutex);
    std::this_thread::sleep_for(std::chrono::seconds(hang));
  }
  if (const int result = static_cast<int>(number("launch_result", 0)); result != 0) return result;
  if (number("emulate_kernels", 1) == 0) return 0;
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
  if (name == "smoke_sgemm")
    gemm(a, b, c, m, n, k, [](const void* p, int i) { return static_cast<const float*>(p)[i]; });
  if (name == "smoke_hgemm_wmma")
    gemm(a, b, c, m, n, k,
         [](const void* p, int i) { return half_to_float(static_cast<const unsigned short*>(p)[i]); });
  if (name == "smoke_bf16gemm_wmma")
    gemm(a, b, c, m, n, k,
         [](const void* p, int i) { return bf16_to_float(static_cast<const unsigned short*>(p)[i]); });
  ++g_all_gemm_launches;
  std::this_thread::sleep_for(std::chrono::milliseconds(number("gemm_sleep_ms", 0)));
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
  *pointer = reinterpret_cast<unsigned long long>(std::malloc(bytes));
  return 0;
}
int cuMemFree_v2(unsigned long long pointer) {
  --g_live_allocations;
  if (const auto mapping = g_mappings.find(pointer); mapping != g_mappings.end()) {
    ::munmap(reinterpret_cast<void*>(pointer), mapping->second);
    g_mappings.erase(mapping);
    return 0;
  }
  std::free(reinterpret_cast<void*>(pointer));
  return 0;
}
int cuMemAllocHost_v2(void** pointer, std::size_t bytes) {
  cpu_set_t cpus;  // where the allocating thread may run: pinned memory lands on that NUMA node
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) g_alloc_host_cpus = CPU_COUNT(&cpus);
  ++g_live_allocations;
  *pointer = std::malloc(bytes);
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
  std::free(pointer);
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
  if (number("corrupt_dtoh", 0) != 0 && bytes >= 8) static_cast<unsigned*>(destination)[1] ^= 0x10u;
  return 0;
}
int cuMemcpyHtoDAsync_v2(unsigned long long destination, const void* source, std::size_t bytes, void*) {
  std::memcpy(reinterpret_cast<void*>(destination), source, bytes);
  return 0;
}
int cuMemcpyDtoHAsync_v2(void* destination, unsigned long long source, std::size_t bytes, void*) {
  return cuMemcpyDtoH_v2(destination, source, bytes);
}
int cuMemcpyDtoDAsync_v2(unsigned long long destination, unsigned long long source, std::size_t bytes, void*) {
  std::memcpy(reinterpret_cast<void*>(destination), reinterpret_cast<const void*>(source), bytes);
  return 0;
}
int cuMemsetD32Async(unsigned long long destination, unsigned value, std::size_t count, void*) {
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
  run_legacy_pending();
  return 0;
}
int cuStreamDestroy_v2(void*) { return 0; }
int cuEventCreate(void** event, unsigned) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  *event = &g_events.emplace_back(FakeEvent{t_current_device});
  return 0;
}
int cuEventRecord(void*, void*) { return 0; }
int cuEventSynchronize(void*) {
  run_legacy_pending();
  if (number("event_sleep", 0) != 0) {
    const auto interval =
        std::chrono::duration<double, std::milli>(std::strtod(text("elapsed_ms", "1.0").c_str(), nullptr));
    std::unique_lock<std::mutex> turn(g_event_sleep_mutex, std::defer_lock);
    if (number("event_sleep_serial", 0) != 0) turn.lock();
    std::this_thread::sleep_for(interval);
  }
  return 0;
}
int cuEventElapsedTime(float* ms, void*, void* stop) {
  const bool tensor = t_tensor_kernel_timed && !text("wmma_elapsed_ms", "").empty();
  t_tensor_kernel_timed = false;
  const std::string elapsed = tensor ? text("wmma_elapsed_ms", "")
                                     : text("elapsed_ms_gpu" + std::to_string(static_cast<FakeEvent*>(stop)->device),
                                            text("elapsed_ms", "1.0"));
  *ms = static_cast<float>(std::strtod(elapsed.c_str(), nullptr));
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
int cuCtxEnablePeerAccess(void*, unsigned) { return static_cast<int>(number("peer_enable_result", 0)); }
int cuMemcpyPeerAsync(unsigned long long destination, void*, unsigned long long source, void*, std::size_t bytes,
                      void*) {
  if (const long long hang = number("peer_hang_seconds", 0); hang > 0) {
    std::this_thread::sleep_for(std::chrono::seconds(hang));  // a copy stuck on a dead link
  }
  std::memcpy(reinterpret_cast<void*>(destination), reinterpret_cast<const void*>(source), bytes);
  if (number("corrupt_peer", 0) != 0 && bytes >= 8) reinterpret_cast<unsigned*>(destination)[1] ^= 0x100u;
  return 0;
}

}  // extern "C"
