#include "smoke/internal/step.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>

namespace gpuenv::smoke {

std::shared_lock<std::shared_timed_mutex> bulk_transfer(HostLink& link) {
  return std::shared_lock<std::shared_timed_mutex>(link.samples);
}

using report::Finding;
using report::Status;

// Every caller passes a literal format with one double conversion.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
std::string format(const char* spec, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, value);
  return buffer;
}
#pragma GCC diagnostic pop

std::string rate_text(double value) { return format(value >= 100 ? "%.0f" : (value >= 10 ? "%.1f" : "%.2f"), value); }

std::string size_text(std::size_t bytes) {
  if (bytes >= 1024 * mib) return format("%.1f GiB", static_cast<double>(bytes) / (1024.0 * mib));
  if (bytes >= mib) return format("%.0f MiB", static_cast<double>(bytes) / mib);
  return format("%.0f KiB", static_cast<double>(bytes) / 1024);
}

int repetitions(const SmokeOptions& options) {
  return options.repetitions > 0 ? options.repetitions : (options.quick ? 3 : 10);
}

std::size_t copy_bytes(const SmokeOptions& options, std::uint64_t l2_bytes) {
  std::size_t bytes = options.copy_bytes > 0 ? options.copy_bytes : (options.quick ? 32 * mib : 256 * mib);
  if (options.copy_bytes == 0) bytes = std::max<std::size_t>(bytes, (4 * l2_bytes + mib - 1) / mib * mib);
  return std::max<std::size_t>(bytes / 16 * 16, 16);
}

std::size_t host_copy_bytes(const SmokeOptions& options) {
  const std::size_t bytes = options.copy_bytes > 0 ? options.copy_bytes : (options.quick ? 32 * mib : 256 * mib);
  return std::max<std::size_t>(bytes / 16 * 16, 16);
}

Expectation with_override(const SmokeOptions& options, const std::string& metric_id, Expectation expectation) {
  const auto it = options.overrides.find(metric_id);
  if (it == options.overrides.end()) return expectation;
  std::string given;
  if (it->second.expected) {
    expectation.expected = it->second.expected;
    expectation.calibrated = true;
    given = "--expect " + metric_id + "=" + format("%g", *it->second.expected);
  }
  if (it->second.minimum) {
    expectation.minimum = it->second.minimum;
    given +=
        (given.empty() ? "" : ", ") + std::string("--minimum ") + metric_id + "=" + format("%g", *it->second.minimum);
  }
  expectation.source = given + " (operator)" + (expectation.source.empty() ? "" : "; data: " + expectation.source);
  return expectation;
}

int run_on_cpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  if (CPU_COUNT(&set) == 0) return EINVAL;
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // refused: the thread runs where it was
}

std::string thread_cpulist() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return {};
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    out += (out.empty() ? "" : ",") + std::to_string(cpu) + (last > cpu ? "-" + std::to_string(last) : "");
    cpu = last;
  }
  return out;
}

namespace {
thread_local int t_current_gpu = -1;
}  // namespace

int current_gpu() { return t_current_gpu; }

std::shared_ptr<HostLink> HostLinks::for_node(const std::string& local_cpulist) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  std::shared_ptr<HostLink>& link = m_links[local_cpulist];
  if (link == nullptr) link = std::make_shared<HostLink>();
  return link;
}
void set_current_gpu(int ordinal) { t_current_gpu = ordinal; }

std::chrono::steady_clock::time_point RunClock::now() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return m_system != nullptr ? m_system->now() : std::chrono::steady_clock::now();
}

void RunClock::detach() {
  const std::lock_guard<std::mutex> lock(m_mutex);
  m_system = nullptr;
}

Gpu::~Gpu() {
  if (!hung) return;  // the handles still held are destroyed by their owners (release() has destroyed the rest)
  stream.leak();
  start.leak();
  stop.leak();
  module.leak();
  for (CudaEvent& event : timing_events) event.leak();
  device_a.leak();
  device_b.leak();
}

RunBudget::Clock::time_point RunBudget::deadline_for(Clock::time_point start) const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  Clock::time_point deadline = start + m_step_timeout;
  if (m_blocked_by) deadline = std::min(deadline, std::max(start, m_hang_at) + m_blocked_timeout);
  if (m_deadline) deadline = std::min(deadline, *m_deadline);
  return deadline;
}

void RunBudget::note_hang(int ordinal) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  if (m_blocked_by) return;
  m_blocked_by = ordinal;
  m_hang_at = Clock::now();
}

std::optional<int> RunBudget::blocked_by() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return m_blocked_by;
}

bool RunBudget::spent() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return m_deadline && Clock::now() >= *m_deadline;
}

std::optional<StepOutcome> wait_for_step(const Gpu& gpu, std::future<StepOutcome>& future,
                                         RunBudget::Clock::time_point start) {
  // In slices: another GPU's hang cuts this deadline while it waits.
  for (;;) {
    const auto deadline = gpu.budget->deadline_for(start);
    const auto slice = std::min(deadline, RunBudget::Clock::now() + std::chrono::milliseconds(50));
    if (future.wait_until(slice) == std::future_status::ready) return future.get();
    if (RunBudget::Clock::now() >= gpu.budget->deadline_for(start)) return std::nullopt;
  }
}

Finding missed_deadline(RunBudget& budget, int ordinal, const std::string& id) {
  const std::optional<int> blocker = budget.blocked_by();
  if (blocker && *blocker != ordinal) {
    return Finding{id,
                   Status::skip,
                   "not tested: driver blocked by GPU " + std::to_string(*blocker) + " (it hung first; this step got " +
                       format("%g", static_cast<double>(budget.blocked_timeout().count()) / 1000) +
                       " s more and did not finish either); this GPU's remaining steps were not run",
                   "reset or reboot after fixing GPU " + std::to_string(*blocker) +
                       ", then test this GPU again (its own health is unknown)",
                   {}};
  }
  if (budget.spent() && !blocker) {
    // A warning, not a skip: a node whose GPUs were not all tested must not read as OK (DEGRADED until it is).
    return Finding{id,
                   Status::warn,
                   "not tested: the run's time budget (--budget) was spent; this GPU's remaining steps were not run",
                   "raise --budget, or test fewer GPUs at once (--device)",
                   {}};
  }
  budget.note_hang(ordinal);
  return hang_finding(id, budget.step_timeout());
}

bool is_sticky(CUresult result) {
  switch (result) {
    case cuda_error_ecc_uncorrectable:
    case cuda_error_nvlink_uncorrectable:
    case cuda_error_illegal_address:
    case cuda_error_launch_timeout:
    case cuda_error_assert:
    case cuda_error_hardware_stack_error:
    case cuda_error_illegal_instruction:
    case cuda_error_misaligned_address:
    case cuda_error_invalid_address_space:
    case cuda_error_invalid_pc:
    case cuda_error_launch_failed:
    // cuda.h says of these three too: "any further CUDA work will return the same error".
    case cuda_error_contained:
    case cuda_error_tensor_memory_leak:
    case cuda_error_external_device:
    case cuda_error_unknown:
      return true;
    default:
      return false;
  }
}

bool stops_gpu(const CudaFailure& failure) { return is_sticky(failure.result) || failure.what == "cuCtxSetCurrent"; }

Finding cuda_finding(const Gpu& gpu, const std::string& id, const CudaFailure& failure) {
  const std::string error = failure.detail.empty() ? describe_cuda_error(gpu.api, failure.result) : failure.detail;
  Finding out{id, Status::fail, failure.what + " failed: " + error, {}, {}};
  if (failure.result == cuda_error_out_of_memory) {
    out.message = "out of GPU memory: " + out.message;
    out.remedy = "free GPU memory (nvidia-smi lists the processes holding it) or rerun with --quick";
  } else if (is_sticky(failure.result)) {
    out.message = "the GPU faulted: " + out.message;
    out.remedy =
        "check the kernel log for Xid errors (sudo dmesg | grep -i xid) and run `gpuenv doctor`; the GPU may need a "
        "reset";
  } else {
    out.remedy = "run `gpuenv doctor` to check the driver and the GPU";
  }
  return out;
}

DeviceBuffer::DeviceBuffer(const Gpu& owner, const Gpu& current, std::size_t bytes, const std::string& what)
    : m_owner(owner), m_current(current), m_bytes(bytes) {
  const bool switch_context = &owner != &current;
  if (switch_context) {
    set_current_gpu(owner.ordinal);
    check(owner.api.ctx_set_current(owner.context), "cuCtxSetCurrent");
  }
  const CUresult allocated = owner.api.mem_alloc(&m_pointer, bytes);
  if (switch_context) {
    set_current_gpu(owner.ordinal);  // a failed allocation is the owner's
    const CUresult back = owner.api.ctx_set_current(current.context);
    if (allocated == cuda_success) set_current_gpu(current.ordinal);
    check(back, "cuCtxSetCurrent");
  }
  check(allocated, what);
  set_current_gpu(current.ordinal);
}

std::unique_ptr<DeviceBuffer> DeviceBuffer::try_allocate(const Gpu& gpu, std::size_t bytes, CUresult& result) {
  CUdeviceptr pointer = 0;
  result = gpu.api.mem_alloc(&pointer, bytes);
  if (result != cuda_success) return nullptr;
  return std::unique_ptr<DeviceBuffer>(new DeviceBuffer(gpu, gpu, bytes, pointer));
}

DeviceBuffer::~DeviceBuffer() {
  if (m_pointer == 0) return;
  const bool switch_context = &m_owner != &m_current;
  if (switch_context) m_owner.api.ctx_set_current(m_owner.context);
  m_owner.api.mem_free(m_pointer);
  if (switch_context) m_owner.api.ctx_set_current(m_current.context);
}

Finding hang_finding(const std::string& id, std::chrono::milliseconds timeout) {
  return Finding{id,
                 Status::fail,
                 "hang: the step did not finish within " + format("%g", static_cast<double>(timeout.count()) / 1000) +
                     " s; the GPU was abandoned",
                 "check the kernel log for Xid errors (sudo dmesg | grep -i xid) and run `gpuenv doctor`; the GPU may "
                 "need a reset",
                 {}};
}

void allocate_spin_flag(Gpu& gpu) {
  const CudaApi& api = gpu.api;
  if (api.mem_host_alloc == nullptr || api.mem_host_get_device_pointer == nullptr) return;  // one copy per event pair
  void* flag = nullptr;
  check(api.mem_host_alloc(&flag, 64, mem_host_devicemap), "cuMemHostAlloc(64 bytes, DEVICEMAP)");
  CUdeviceptr device = 0;
  // The device address of mapped memory may differ from the host address (cuda.h): the kernel gets this one, not the
  // host pointer, which only works under unified addressing.
  if (api.mem_host_get_device_pointer(&device, flag, 0) != cuda_success || device == 0) {
    api.mem_free_host(flag);
    return;
  }
  gpu.spin_flag = static_cast<std::uint32_t*>(flag);
  gpu.spin_flag[0] = 0;
  gpu.spin_flag[1] = 0;
  gpu.spin_flag_device = device;
}

void free_spin_flag(Gpu& gpu) {
  // A spin kernel may still be polling the flag (a step that threw after launching one: its hold released it, the
  // kernel ends within moments). Freeing mapped memory under it is not documented to wait: the stream does first.
  if (gpu.spin_flag != nullptr) {
    gpu.api.stream_synchronize(gpu.stream.get());  // its error, if any, the next step reports
    gpu.api.mem_free_host(const_cast<std::uint32_t*>(gpu.spin_flag));
  }
  gpu.spin_flag = nullptr;
  gpu.spin_flag_device = 0;
}

StreamHold::StreamHold(Gpu& gpu) : m_gpu(gpu) {
  gpu.spin_flag[0] = 0;  // release
  gpu.spin_flag[1] = 0;  // timed out
  std::atomic_thread_fence(std::memory_order_seq_cst);
  CUdeviceptr release = gpu.spin_flag_device;
  CUdeviceptr timed_out = gpu.spin_flag_device + sizeof(std::uint32_t);
  unsigned long long timeout_ns = 2'000'000'000ull;  // released long before; bounds a lost release
  void* params[] = {&release, &timed_out, &timeout_ns};
  check(gpu.api.launch_kernel(gpu.spin_wait, 1, 1, 1, 1, 1, 1, 0, gpu.stream.get(), params, nullptr),
        "cuLaunchKernel(smoke_spin_wait)");
}

StreamHold::~StreamHold() { release(); }

void StreamHold::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  m_gpu.spin_flag[0] = 1;
}

bool StreamHold::timed_out() const { return m_gpu.spin_flag[1] != 0; }

Summary summarize_copy_samples(const std::vector<double>& valid, const std::vector<double>& timed_out) {
  Summary out = summarize(valid.empty() ? timed_out : valid);
  out.discarded = timed_out.size();
  out.invalid = valid.empty() && !timed_out.empty();
  return out;
}

std::string discarded_note(const Summary& rates) {
  if (rates.discarded == 0 || rates.invalid) return {};
  return "; " + std::to_string(rates.discarded) + " of " + std::to_string(rates.discarded + rates.count) +
         " samples discarded: the spin kernel timed out (2 s) before the host had queued the copies";
}

std::string invalid_timing_text(const Summary& rates) {
  return "timing invalid: in all " + std::to_string(rates.count) +
         " samples the spin kernel timed out (2 s) before the host had queued the copies, so launch gaps were "
         "timed too; the figure is a lower bound and is not judged";
}

}  // namespace gpuenv::smoke
