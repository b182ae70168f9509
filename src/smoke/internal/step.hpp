#pragma once
// Internal to smoke: what one GPU's steps share (the Gpu state), how a step reports (StepOutcome), and how a step runs
// on its own thread against a deadline. The step functions themselves live in runner.cpp (query, kernels, copies),
// gemm.cpp, memtest.cpp and peer.cpp.

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "report/finding.hpp"
#include "smoke/cublas_api.hpp"
#include "smoke/cuda_api.hpp"
#include "smoke/internal/cuda_handles.hpp"
#include "smoke/internal/expectations.hpp"
#include "smoke/internal/measure.hpp"
#include "smoke/internal/nvml_monitor.hpp"
#include "smoke/internal/verify.hpp"
#include "smoke/smoke.hpp"

namespace gpuenv::smoke {

inline constexpr std::size_t mib = 1024 * 1024;

/// printf-style formatting of one double ("%.1f").
std::string format(const char* spec, double value);
/// 3 significant-ish digits: "1234", "56.7", "8.90".
std::string rate_text(double value);
/// "256 MiB", "1.5 GiB".
std::string size_text(std::size_t bytes);
/// Timed repetitions after the warm-up (options, else 10; --quick 3).
int repetitions(const SmokeOptions& options);

/// Matmul operands as the GPU sees them: `a`, `b` as floats (rounded to 16 bits for the tensor precisions, so the
/// CPU reference uses exactly the GPU's values) and, for those precisions, the 16-bit words to upload.
struct GemmOperands {
  Precision precision = Precision::fp32;
  int n = 0;  ///< M = N = K
  std::vector<float> a, b;
  std::vector<std::uint16_t> a16, b16;
  std::size_t element = 4;    ///< bytes per uploaded element
  FreivaldsVector freivalds;  ///< x and A·(B·x), to check every repetition's whole result
  const void* upload_a() const { return element == 4 ? static_cast<const void*>(a.data()) : a16.data(); }
  const void* upload_b() const { return element == 4 ? static_cast<const void*>(b.data()) : b16.data(); }
};

/// The matmul operands of a run, made once per shape and shared by every GPU (operands.cpp): at 8192² they take about
/// 800 MB and a second of one host core, which eight GPUs running in parallel would otherwise each repeat.
class OperandCache {
 public:
  /// The operands for `precision` at n×n: made by the first caller, the others wait for them.
  std::shared_ptr<const GemmOperands> get(Precision precision, int n);

 private:
  std::mutex m_mutex;
  std::map<std::pair<int, int>, std::shared_future<std::shared_ptr<const GemmOperands>>> m_made;
};

/// The clock steps read for what they measure and report (host-timed copies, the memory test's duration, the concurrent
/// copies' start and end): System::now while run_smoke runs, so the time a step reports comes through System as every
/// other reading of the outside world does; once run_smoke has returned (a step abandoned on its deadline may still be
/// running, and the System may be gone) the steady clock System::now reads by default. Deadlines (RunBudget) stay on
/// the steady clock: they are waited for with std::future::wait_until and try_lock_until, which wait on that clock.
class RunClock {
 public:
  explicit RunClock(system::System* system = nullptr) : m_system(system) {}
  std::chrono::steady_clock::time_point now() const;
  /// run_smoke returns: read the steady clock from now on (waits for a now() in progress).
  void detach();

 private:
  mutable std::mutex m_mutex;
  system::System* m_system = nullptr;
};

/// Seconds from `begin` to `end`.
inline double seconds_between(std::chrono::steady_clock::time_point begin, std::chrono::steady_clock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

/// One wall-clock budget for the whole run (issue 23 item 11), shared by every GPU's steps: each step may take
/// options.step_timeout, none may end after the run's deadline, and once a step has hung (Xid 79, a wedged GPU: its
/// abandoned thread often holds the driver lock, so every later call would wait its full deadline) every step still
/// running or started later gets at most `blocked_timeout` more, and one that misses it is "not tested: driver blocked
/// by GPU N", not a hang of its own.
class RunBudget {
 public:
  using Clock = std::chrono::steady_clock;
  RunBudget(std::chrono::milliseconds step_timeout, std::chrono::milliseconds blocked_timeout,
            std::optional<Clock::time_point> deadline = std::nullopt)
      : m_step_timeout(step_timeout), m_blocked_timeout(blocked_timeout), m_deadline(deadline) {}
  /// When a step that started at `start` must have finished.
  Clock::time_point deadline_for(Clock::time_point start) const;
  /// Records a hang on GPU `ordinal`; the first one recorded is the GPU that blocks the driver.
  void note_hang(int ordinal);
  /// The GPU whose hang cut the deadlines, if any.
  std::optional<int> blocked_by() const;
  /// Whether the run's own deadline (options.run_timeout) has passed.
  bool spent() const;
  std::chrono::milliseconds step_timeout() const { return m_step_timeout; }
  std::chrono::milliseconds blocked_timeout() const { return m_blocked_timeout; }

 private:
  mutable std::mutex m_mutex;
  std::chrono::milliseconds m_step_timeout, m_blocked_timeout;
  std::optional<Clock::time_point> m_deadline;
  std::optional<int> m_blocked_by;
  Clock::time_point m_hang_at{};
};

/// The host link of a group of GPUs (issue 23 item 12): GPUs run in parallel, but the timed host<->device copies of a
/// group take turns (exclusive), and bulk uploads of its other GPUs (matmul operands, shared) wait for a turn to end,
/// so that GPUs behind one PCIe switch uplink never halve each other's figures (DCGM's pcie plugin also "measures the
/// bus bandwidth between the host and each GPU one at a time", PcieMain.cpp).
struct HostLink {
  std::shared_timed_mutex mutex;  ///< a GPU's turn for its timed host<->device copies (exclusive)
  /// One timed sample of those copies (exclusive) against other GPUs' untimed bulk transfers (shared: a matmul's
  /// operands): a bulk transfer waits for one sample (tens of ms), not for the whole turn (a second or more), so the
  /// other GPUs of the socket do not stall their matmuls while one GPU takes its turn.
  std::shared_timed_mutex samples;
};

/// A shared hold on `link` for an untimed bulk transfer (a matmul's operands): waits for the timed sample in flight.
std::shared_lock<std::shared_timed_mutex> bulk_transfer(HostLink& link);

/// The run's host links, one per NUMA node: GPUs that share a PCIe link (a switch uplink, a root port) hang off the
/// same socket, so they always share a node's turn; GPUs on different sockets share no PCIe link and copy at once.
/// GPUs whose node is unknown (no sysfs local_cpulist) share one link.
class HostLinks {
 public:
  /// The link of the GPUs whose NUMA node has CPUs `local_cpulist` ("" unknown).
  std::shared_ptr<HostLink> for_node(const std::string& local_cpulist);

 private:
  std::mutex m_mutex;
  std::map<std::string, std::shared_ptr<HostLink>> m_links;
};

/// Everything one GPU's steps share. Owned jointly by the main thread and the step
/// threads, so an abandoned (hung) step keeps it, and the libraries, alive.
struct Gpu {
  Gpu() = default;
  /// DeviceRun::release destroys the CUDA handles in order on a step thread with the context current; a hung GPU's
  /// are never destroyed (its driver may never answer, and its abandoned step may still use them): left to the exit.
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  std::shared_ptr<system::DynamicLibrary> library;
  CudaApi api;
  SmokeOptions options;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CudaStream stream;
  CudaEvent start;
  CudaEvent stop;
  CudaModule module;  ///< the loaded kernel image (empty when none could be loaded)
  CUfunction sgemm = nullptr;
  CUfunction hgemm = nullptr;
  CUfunction bf16gemm = nullptr;
  CUfunction memtest_fill = nullptr;        ///< smoke_fill_pattern
  CUfunction memtest_check = nullptr;       ///< smoke_check_pattern
  CUfunction memtest_move = nullptr;        ///< smoke_move_inversion
  CUfunction spin_wait = nullptr;           ///< smoke_spin_wait: holds the stream while copies are queued (optional)
  CUfunction fill_words = nullptr;          ///< smoke_fill_words: the copy pattern, written on the GPU
  CUfunction check_words = nullptr;         ///< smoke_check_words: the copy pattern, checked on the GPU
  CUfunction compare_words = nullptr;       ///< smoke_compare_words: two buffers compared word for word
  CUfunction stream_copy = nullptr;         ///< smoke_stream_copy: the SM copy that measures HBM bandwidth
  std::shared_ptr<const Cublas> cublas;     ///< null when the node has no usable cuBLAS
  std::shared_ptr<const NvmlMonitor> nvml;  ///< null without NVML (clocks and memory error counters unknown)
  CublasHandle cublas_handle = nullptr;
  /// Shared by the run's GPUs (run_smoke); dropped once this GPU's matmuls are done.
  std::shared_ptr<OperandCache> operand_cache = std::make_shared<OperandCache>();
  std::vector<CudaEvent> timing_events;  ///< a pair per launch of a matmul's sustained window (made as needed)
  /// Above 0 while timed GEMMs are queued or running (run_gemm); the clock sampler co-owns it and keeps only samples
  /// taken while it is up, so host work between launches (operands, readback, checks) is not sampled as load.
  std::shared_ptr<std::atomic<int>> launches_in_flight = std::make_shared<std::atomic<int>>(0);
  /// Above 0 while timed host<->device copies are queued or running (time_copies): the PCIe link sampler keeps only
  /// readings taken then, since an idle link may train down (T4, L4 and RTX cards drop to Gen1).
  std::shared_ptr<std::atomic<int>> copies_in_flight = std::make_shared<std::atomic<int>>(0);
  DeviceInfo info;
  std::shared_ptr<RunBudget> budget = std::make_shared<RunBudget>(std::chrono::seconds(120), std::chrono::seconds(10));
  std::shared_ptr<HostLinks> host_links = std::make_shared<HostLinks>();  ///< shared by the run's GPUs
  std::shared_ptr<RunClock> clock = std::make_shared<RunClock>();         ///< shared by the run's GPUs (run_smoke)
  std::shared_ptr<HostLink> host_link = std::make_shared<HostLink>();  ///< this GPU's NUMA node's (place_on_local_cpus)
  bool stopped = false;         ///< a sticky error or a hang: no more steps on this GPU
  std::vector<int> local_cpus;  ///< the GPU's NUMA node's CPUs: step threads are placed there (empty: anywhere)
  bool hung = false;  ///< a step missed its deadline: its thread still runs, so nothing more is asked of the GPU
  /// The missed deadline was a hang of this GPU (a failure), not another GPU's hang or the run's budget: the device
  /// result says "hung".
  bool hang_reported = false;
  // copy buffers
  std::size_t bytes = 0;       ///< each device buffer: at least 4 x the L2 (copy_bytes)
  std::size_t host_bytes = 0;  ///< each host buffer and host<->device copy (host_copy_bytes), at most `bytes`
  DeviceMemory device_a;
  DeviceMemory device_b;
  std::uint32_t* pinned = nullptr;
  /// Mapped pinned host words of smoke_spin_wait: [0] releases it, [1] records that it timed out (allocate_spin_flag).
  volatile std::uint32_t* spin_flag = nullptr;
  CUdeviceptr spin_flag_device = 0;  ///< spin_flag's device address (cuMemHostGetDevicePointer), what the kernel gets
  std::vector<std::uint32_t> pageable;
};

/// The outcome of one step, handed back to the main thread.
struct StepOutcome {
  std::vector<report::Finding> findings;
  std::vector<Metric> metrics;
  bool stop = false;  ///< a GPU is unusable (sticky error); skip its remaining steps
  /// Which GPU's context faulted (a peer copy works in two): its ordinal, or -1 for the step's own GPU.
  int faulted = -1;
};

/// The ordinal of the GPU whose context this thread made current last (start_step, CurrentContext), -1 for none: a
/// failure is charged to the GPU whose context faulted.
int current_gpu();
/// Records that this thread made `ordinal`'s context current.
void set_current_gpu(int ordinal);

/// A failing CUDA call as an exception inside a step; turned into a finding by run_step.
struct CudaFailure {
  std::string what;
  CUresult result;
  std::string detail = {};  ///< the error as text when it is not a CUresult (cuBLAS status); else empty
  int gpu = current_gpu();  ///< the GPU whose context was current when the call failed
};

/// Restricts the calling thread to `cpus`; returns pthread_setaffinity_np's result (0: placed; EINVAL, EPERM: refused,
/// e.g. by a container's cpuset, and the thread stays where it was). Nothing to do for an empty list: 0.
int run_on_cpus(const std::vector<int>& cpus);
/// The CPUs the calling thread may run on (pthread_getaffinity_np), as a cpulist "0-31,64-95".
std::string thread_cpulist();

/// Throws CudaFailure when `result` is not CUDA_SUCCESS.
inline void check(CUresult result, const std::string& what) {
  if (result != cuda_success) throw CudaFailure{what, result};
}

/// True for the errors after which the context is unusable (cuda.h: ECC 214, NVLink uncorrectable 220, illegal
/// address 700, launch timeout 702, assert 710, hardware stack 714, illegal instruction 715, misaligned address 716,
/// invalid address space 717, invalid PC 718, launch failure 719, unknown 999).
bool is_sticky(CUresult result);
/// True when a failure ends this GPU's steps: a sticky error, or the GPU's own context could not be made current.
/// Other context calls (cuCtxEnablePeerAccess) fail one step only.
bool stops_gpu(const CudaFailure& failure);
/// The failing finding for a CUDA error in step `id`, with a remedy fitting the error.
report::Finding cuda_finding(const Gpu& gpu, const std::string& id, const CudaFailure& failure);

/// Device memory of one GPU, freed with that GPU's context current when it goes out of scope.
class DeviceBuffer {
 public:
  /// Allocates `bytes` on `owner`, with its context current for the calls and `current`'s again afterwards (a peer
  /// copy allocates on both GPUs); throws CudaFailure naming `what`.
  DeviceBuffer(const Gpu& owner, const Gpu& current, std::size_t bytes, const std::string& what);
  /// Allocates `bytes` on `gpu`, whose context is current.
  DeviceBuffer(const Gpu& gpu, std::size_t bytes, const std::string& what) : DeviceBuffer(gpu, gpu, bytes, what) {}
  /// Allocates without throwing: nullptr and the CUresult in `result` when it fails (memtest stops at OOM).
  static std::unique_ptr<DeviceBuffer> try_allocate(const Gpu& gpu, std::size_t bytes, CUresult& result);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr get() const { return m_pointer; }
  std::size_t size() const { return m_bytes; }

 private:
  DeviceBuffer(const Gpu& owner, const Gpu& current, std::size_t bytes, CUdeviceptr pointer)
      : m_owner(owner), m_current(current), m_bytes(bytes), m_pointer(pointer) {}
  const Gpu& m_owner;
  const Gpu& m_current;
  std::size_t m_bytes = 0;
  CUdeviceptr m_pointer = 0;
};

/// Raises an in-flight count for its lifetime (also when a launch throws), so a sampler counts only what it reads
/// while work is queued or running.
class InFlight {
 public:
  explicit InFlight(std::atomic<int>& count) : m_count(count) { ++m_count; }
  ~InFlight() { --m_count; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int>& m_count;
};

/// Starts `step(gpu)` on its own thread (placed on the GPU's NUMA CPUs) with the GPU's context current; the thread
/// holds its own reference to the Gpu, so it may be abandoned.
template <typename Step>
std::future<StepOutcome> start_step(const std::shared_ptr<Gpu>& gpu, const std::string& id, Step step) {
  auto promise = std::make_shared<std::promise<StepOutcome>>();
  std::future<StepOutcome> future = promise->get_future();
  std::thread([gpu, promise, id, step] {
    StepOutcome outcome;
    run_on_cpus(gpu->local_cpus);
    try {
      if (gpu->context != nullptr) {
        set_current_gpu(gpu->ordinal);
        check(gpu->api.ctx_set_current(gpu->context), "cuCtxSetCurrent");
      }
      outcome = step(*gpu);
    } catch (const CudaFailure& failure) {
      outcome.findings.push_back(cuda_finding(*gpu, id, failure));
      outcome.stop = stops_gpu(failure);
      outcome.faulted = failure.gpu;
    } catch (const std::exception& error) {
      outcome.findings.push_back(
          report::Finding{id, report::Status::fail, std::string("internal error: ") + error.what(), {}, {}});
    }
    promise->set_value(std::move(outcome));
  }).detach();
  return future;
}

/// Waits for a started step within the run's budget (RunBudget::deadline_for its start, re-read as it waits, so a
/// hang elsewhere cuts it); nullopt when the deadline passed (the thread is abandoned).
std::optional<StepOutcome> wait_for_step(const Gpu& gpu, std::future<StepOutcome>& future,
                                         RunBudget::Clock::time_point start);

/// Runs `step(gpu)` (start_step) and waits until the deadline; nullopt means it hung (the thread is abandoned).
template <typename Step>
std::optional<StepOutcome> run_step(const std::shared_ptr<Gpu>& gpu, const std::string& id, Step step) {
  const auto start = RunBudget::Clock::now();
  std::future<StepOutcome> future = start_step(gpu, id, std::move(step));
  return wait_for_step(*gpu, future, start);
}

/// The finding for a step of GPU `ordinal` that missed its deadline: a hang of its own, or, once another GPU has hung
/// (`budget`.blocked_by), "not tested: driver blocked by GPU N" (a skip: the hang is that GPU's). Records the hang in
/// the budget.
report::Finding missed_deadline(RunBudget& budget, int ordinal, const std::string& id);

/// Copies per timed sample behind the spin kernel (nvbandwidth queues several per sample too).
inline constexpr int copies_per_sample = 8;

/// Allocates `gpu`'s spin flag with its context current: mapped pinned host memory (cuMemHostAlloc DEVICEMAP) and its
/// device address (cuMemHostGetDevicePointer). Without those entry points, or when the mapping is refused, no flag is
/// kept and copies are timed one per event pair; a failing allocation throws.
void allocate_spin_flag(Gpu& gpu);
/// Frees the spin flag, if any (gpu's context current).
void free_spin_flag(Gpu& gpu);

/// Holds `gpu`'s stream with smoke_spin_wait (gpu's context current, spin flag allocated) until released; the
/// destructor releases it too (also when a queued copy throws).
class StreamHold {
 public:
  explicit StreamHold(Gpu& gpu);
  ~StreamHold();
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  /// Lets the spin kernel finish: the queued work runs.
  void release();
  /// Whether the spin kernel gave up waiting (its timeout) before the release: the held work then started while the
  /// host was still queueing it, so its timing counts launch gaps. Valid once the held work finished.
  bool timed_out() const;

 private:
  Gpu& m_gpu;
};

/// The statistics of copy samples: of `valid` ones; of `timed_out` ones (marked invalid) only when none is valid.
Summary summarize_copy_samples(const std::vector<double>& valid, const std::vector<double>& timed_out);
/// "; 2 of 10 samples discarded: ..." for a summary with discarded samples, else "".
std::string discarded_note(const Summary& rates);
/// The message tail of a measurement whose every sample timed out (Summary::invalid): why it is not judged.
std::string invalid_timing_text(const Summary& rates);

/// Times `copy` (one transfer of `bytes_counted`) after one warm-up; the summary is of GB/s, one sample per
/// repetition. With `events` and the spin kernel (nvbandwidth's method): each sample is copies_per_sample copies
/// queued behind smoke_spin_wait, timed by events around the queue, so launch gaps and host latency between copies
/// are not counted; a sample whose spin kernel timed out counted them, and is discarded (summarize_copy_samples).
/// With `events` alone: events around one copy. Otherwise the host clock around one copy and a synchronisation of the
/// stream (pageable copies, which the driver stages through the host: no spin kernel there). `sample_exclusive`
/// (HostLink::samples for host<->device copies) is held for each sample, so no other GPU's bulk transfer shares the
/// link while one runs.
template <typename Copy>
Summary time_copies(Gpu& gpu, bool events, double bytes_counted, Copy copy,
                    std::shared_timed_mutex* sample_exclusive = nullptr) {
  copy();
  check(gpu.api.stream_synchronize(gpu.stream.get()), "cuStreamSynchronize");
  const bool queued = events && gpu.spin_wait != nullptr && gpu.spin_flag != nullptr;
  std::vector<double> rates, timed_out;
  for (int i = 0; i < repetitions(gpu.options); ++i) {
    double seconds = 0;
    bool spin_timed_out = false;
    std::unique_lock<std::shared_timed_mutex> sample;  // no bulk transfer of another GPU while this sample runs
    if (sample_exclusive != nullptr) sample = std::unique_lock<std::shared_timed_mutex>(*sample_exclusive);
    if (events) {
      const InFlight busy(*gpu.copies_in_flight);  // from the queueing to the sync that ends it
      const int copies = queued ? copies_per_sample : 1;
      std::optional<StreamHold> hold;
      if (queued) hold.emplace(gpu);
      check(gpu.api.event_record(gpu.start.get(), gpu.stream.get()), "cuEventRecord");
      for (int c = 0; c < copies; ++c) copy();
      check(gpu.api.event_record(gpu.stop.get(), gpu.stream.get()), "cuEventRecord");
      if (hold) hold->release();  // the queue runs
      check(gpu.api.event_synchronize(gpu.stop.get()), "cuEventSynchronize");
      spin_timed_out = hold && hold->timed_out();
      float ms = 0;
      check(gpu.api.event_elapsed_time(&ms, gpu.start.get(), gpu.stop.get()), "cuEventElapsedTime");
      seconds = ms / 1e3 / copies;  // per copy
    } else {
      const InFlight busy(*gpu.copies_in_flight);
      const auto begin = gpu.clock->now();
      copy();
      check(gpu.api.stream_synchronize(gpu.stream.get()), "cuStreamSynchronize");
      seconds = seconds_between(begin, gpu.clock->now());
    }
    (spin_timed_out ? timed_out : rates).push_back(gigabytes_per_second(bytes_counted, seconds));
  }
  return summarize_copy_samples(rates, timed_out);
}

/// Bytes per copy: options.copy_bytes, else 256 MiB (--quick 32 MiB) but at least four times `l2_bytes` (a D2D or
/// stream copy that fits in the L2 cache, 50 MB on H100/H200, would measure the cache, not HBM), a multiple of 16.
std::size_t copy_bytes(const SmokeOptions& options, std::uint64_t l2_bytes = 0);
/// Bytes per host<->device copy: options.copy_bytes, else 256 MiB (--quick 32 MiB), a multiple of 16: the L2 does not
/// serve a copy through PCIe, so the quick run's host copies need not grow with it.
std::size_t host_copy_bytes(const SmokeOptions& options);

/// `expectation` with the operator's override for `metric_id` applied (options.overrides); an overridden expected
/// value counts as calibrated, and the source says where it came from.
Expectation with_override(const SmokeOptions& options, const std::string& metric_id, Expectation expectation);

/// The finding for a step that missed its deadline.
report::Finding hang_finding(const std::string& id, std::chrono::milliseconds timeout);

// Steps defined outside runner.cpp.

/// Which matmul: our own kernel or the node's cuBLAS, at which precision and size (M = N = K).
struct GemmPlan {
  enum class Engine { kernel, cublas };
  std::string id;  ///< metric id: "sgemm_fp32", "cublas_gemm_bf16", ...
  Engine engine = Engine::kernel;
  Precision precision = Precision::fp32;
  int size = 0;
  /// The size the data's floors hold for (4096 FP32, 8192 tensor: DCGM's SGEMM target is a large-problem number);
  /// a smaller run (--quick) is verified and reported but not judged against them.
  int floor_size = 0;
  /// For our kernel: the node's cuBLAS median on the same operands (it runs first); our kernel is judged against it.
  std::optional<double> cublas_tflops;
};
/// Runs, times, verifies and judges one matmul (gemm.cpp).
StepOutcome run_gemm(Gpu& gpu, const GemmPlan& plan, const GpuExpectation* model, const Expectations& expectations);
/// Creates the cuBLAS handle on this GPU's stream (gemm.cpp); the finding says which cuBLAS and whether it works.
StepOutcome prepare_cublas(Gpu& gpu, const std::string& driver_version);
/// Destroys the cuBLAS handle, if any.
void release_cublas(Gpu& gpu);

/// Writes and verifies patterns over options.memtest_fraction of the free GPU memory (memtest.cpp).
StepOutcome run_memtest(Gpu& gpu);

/// One GPU's pinned host->device rate with every GPU copying at once, beside its rate alone (GB/s), and when its
/// whole timed batch ran on the host's steady clock (seconds) with the bytes it moved in that time.
struct ConcurrentRate {
  int ordinal = 0;
  double concurrent = 0;
  std::optional<double> alone;
  double bytes = 0;    ///< every byte the GPU copied between begin_s and end_s (warm-up included)
  double begin_s = 0;  ///< the run's clock (RunClock), seconds
  double end_s = 0;
};
/// The smoke.h2d_concurrent finding: each GPU's rate and its ratio to its solo rate, and a warning when all together
/// (every GPU's bytes over the wall time from the first begin to the last end, so GPUs that ran one after another
/// are not added up) move less than 1.25 x the fastest GPU alone (one shared host link carries them all).
report::Finding judge_concurrent_h2d(const std::vector<ConcurrentRate>& rates);

/// Pinned host->device copies on every GPU at once (host_concurrent.cpp): each GPU's rate beside its own solo pinned
/// H2D (`solo_rates`, by ordinal), and a warning when all together move no more than the fastest alone (one shared
/// host uplink). Returns each GPU's metric (id "h2d_concurrent"), by position in `gpus`.
std::vector<std::optional<Metric>> run_concurrent_h2d(const std::vector<std::shared_ptr<Gpu>>& gpus,
                                                      const std::map<int, double>& solo_rates,
                                                      std::vector<report::Finding>& findings);

/// What one pair of GPUs measured: both one-way copies (metric ids "p2p_<source>_<destination>") and, where both had
/// peer access, both directions at once ("p2p_bidir_<source>_<destination>"), with their findings.
struct PairCopies {
  std::vector<PeerResult> one_way;
  std::vector<report::Finding> one_way_findings;  ///< smoke.p2p, one per direction
  std::vector<PeerResult> both_ways;
  std::vector<report::Finding> both_ways_findings;  ///< smoke.p2p_bidirectional
};

/// a -> b and b -> a (each on the destination's step thread: its copy engine reads the source), then both at once
/// when both had peer access; verified and judged (peer.cpp). `board_gpus` decides which NVLink floor applies.
PairCopies copy_pair(const std::shared_ptr<Gpu>& a, const std::shared_ptr<Gpu>& b, const Expectations& expectations,
                     int board_gpus);

/// Rounds of disjoint pairs covering every pair of `count` GPUs once (the circle method: count - 1 rounds of count / 2
/// pairs for an even count, count rounds with one GPU resting for an odd one), by position.
std::vector<std::vector<std::pair<std::size_t, std::size_t>>> disjoint_rounds(std::size_t count);

/// Every pair of `gpus` that finished their own steps, in rounds of disjoint pairs, the pairs of a round in parallel
/// (each GPU in one pair at a time: at most one peer connection each, and no GPU's copies contend with its own);
/// fills the report's peers, bidirectional and their findings in pair order (peer_rounds.cpp).
void run_peer_pairs(const std::vector<std::shared_ptr<Gpu>>& gpus, const Expectations& expectations, int board_gpus,
                    SmokeReport& report);

}  // namespace gpuenv::smoke
