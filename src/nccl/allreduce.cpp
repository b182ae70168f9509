#include "nccl/allreduce.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "nccl/judge.hpp"
#include "nccl/tests_output.hpp"
#include "probe/cuda_api.hpp"
#include "smoke/cuda_api.hpp"
#include "system/abandon.hpp"
#include "util/strings.hpp"

namespace gpuenv::nccl {
namespace {

using report::Finding;
using report::Status;
using smoke::CUresult;

/// The call that initialises the communicators: a failure there is what a setting of the environment can cause.
constexpr const char* k_comm_init_all = "ncclCommInitAll";

constexpr const char* k_install_hint =
    "install NCCL (the libnccl2 package of NVIDIA's CUDA repository, or `pip install nvidia-nccl-cu12` and pass "
    "--python to use that environment's copy; GPUENV_NCCL_LIBRARY names a libnccl.so.2 directly)";

/// The float bit pattern rank `rank` fills its send buffer with: the value rank + 1.
unsigned fill_bits(int rank) {
  const float value = static_cast<float>(rank + 1);
  unsigned bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// Every GPU's context, stream, events and buffers, and the communicators; released in reverse on destruction (an
/// abandoned session is never destroyed: its thread still runs inside NCCL or the driver).
class Session {
 public:
  Session(const smoke::CudaApi& cuda, const NcclApi& nccl) : m_cuda(cuda), m_nccl(nccl) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { release(); }

  const std::string& error() const { return m_error; }
  /// The call whose failure error() describes ("ncclCommInitAll", "cuMemAlloc (send buffer)", ...).
  const std::string& failed_call() const { return m_failed_call; }

  /// Contexts, streams and events for `count` GPUs; the smallest free memory among them.
  bool open(int count, std::size_t& free_bytes) {
    free_bytes = SIZE_MAX;
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      Rank rank;
      if (!cu(m_cuda.device_get(&rank.device, ordinal), "cuDeviceGet")) return false;
      if (!cu(m_cuda.primary_ctx_retain(&rank.context, rank.device), "cuDevicePrimaryCtxRetain")) return false;
      m_ranks.push_back(rank);
      Rank& r = m_ranks.back();
      if (!cu(m_cuda.ctx_set_current(r.context), "cuCtxSetCurrent") ||
          !cu(m_cuda.stream_create(&r.stream, 0), "cuStreamCreate") ||
          !cu(m_cuda.event_create(&r.start, 0), "cuEventCreate") ||
          !cu(m_cuda.event_create(&r.stop, 0), "cuEventCreate"))
        return false;
      std::size_t free = 0;
      std::size_t total = 0;
      if (!cu(m_cuda.mem_get_info(&free, &total), "cuMemGetInfo")) return false;
      free_bytes = std::min(free_bytes, free);
    }
    return true;
  }

  /// Send and receive buffers of `bytes` on every GPU, each send buffer filled with its rank + 1; then the
  /// communicators (ncclCommInitAll over the same devices, in order).
  bool prepare(std::uint64_t bytes) {
    for (std::size_t i = 0; i < m_ranks.size(); ++i) {
      Rank& r = m_ranks[i];
      if (!cu(m_cuda.ctx_set_current(r.context), "cuCtxSetCurrent") ||
          !cu(m_cuda.mem_alloc(&r.send, bytes), "cuMemAlloc (send buffer)") ||
          !cu(m_cuda.mem_alloc(&r.recv, bytes), "cuMemAlloc (receive buffer)") ||
          !cu(m_cuda.memset_d32(r.send, fill_bits(static_cast<int>(i)), bytes / 4), "cuMemsetD32") ||
          !cu(m_cuda.memset_d32(r.recv, 0, bytes / 4), "cuMemsetD32") ||
          !cu(m_cuda.ctx_synchronize(), "cuCtxSynchronize"))
        return false;
    }
    std::vector<int> devices;
    for (const Rank& r : m_ranks) devices.push_back(r.device);
    m_comms.assign(m_ranks.size(), nullptr);
    if (!nc(m_nccl.comm_init_all(m_comms.data(), static_cast<int>(m_ranks.size()), devices.data()), k_comm_init_all)) {
      m_comms.clear();
      return false;
    }
    return true;
  }

  /// `times` all-reduces of `bytes` on every rank, each one group call (the single thread drives every GPU).
  bool all_reduce(std::uint64_t bytes, int times) {
    for (int t = 0; t < times; ++t) {
      if (!nc(m_nccl.group_start(), "ncclGroupStart")) return false;
      for (std::size_t i = 0; i < m_ranks.size(); ++i) {
        const Rank& r = m_ranks[i];
        const ncclResult_t result =
            m_nccl.all_reduce(reinterpret_cast<const void*>(r.send), reinterpret_cast<void*>(r.recv), bytes / 4,
                              nccl_float32, nccl_sum, m_comms[i], reinterpret_cast<cudaStream_t>(r.stream));
        if (!nc(result, "ncclAllReduce")) {
          m_nccl.group_end();
          return false;
        }
      }
      if (!nc(m_nccl.group_end(), "ncclGroupEnd")) return false;
    }
    return true;
  }

  /// Warm-up, then `iterations` timed between events on every stream: the slowest rank's time per all-reduce.
  bool time(std::uint64_t bytes, int warmup, int iterations, double& seconds) {
    if (!all_reduce(bytes, warmup) || !synchronize()) return false;
    for (Rank& r : m_ranks) {
      if (!cu(m_cuda.ctx_set_current(r.context), "cuCtxSetCurrent") ||
          !cu(m_cuda.event_record(r.start, r.stream), "cuEventRecord"))
        return false;
    }
    if (!all_reduce(bytes, iterations)) return false;
    for (Rank& r : m_ranks) {
      if (!cu(m_cuda.ctx_set_current(r.context), "cuCtxSetCurrent") ||
          !cu(m_cuda.event_record(r.stop, r.stream), "cuEventRecord"))
        return false;
    }
    if (!synchronize()) return false;  // the stop events complete with their streams
    float slowest = 0;
    for (Rank& r : m_ranks) {
      float ms = 0;
      if (!cu(m_cuda.ctx_set_current(r.context), "cuCtxSetCurrent") ||
          !cu(m_cuda.event_synchronize(r.stop), "cuEventSynchronize") ||
          !cu(m_cuda.event_elapsed_time(&ms, r.start, r.stop), "cuEventElapsedTime"))
        return false;
      slowest = std::max(slowest, ms);
    }
    seconds = static_cast<double>(slowest) / 1000 / iterations;
    return async_errors();
  }

  /// Reads back up to `window` bytes from each end of every receive buffer; every element must be n(n+1)/2. A
  /// mismatch is described in `mismatch` ("rank 3 element 1024: 35 instead of 36").
  bool verify(std::uint64_t bytes, std::uint64_t window, std::string& mismatch) {
    const std::size_t n = m_ranks.size();
    const float expected = static_cast<float>(n * (n + 1) / 2);
    const std::uint64_t span = std::min(bytes, window) / 4 * 4;
    std::vector<float> host(span / 4);
    for (std::size_t i = 0; i < n && mismatch.empty(); ++i) {
      const Rank& r = m_ranks[i];
      if (!cu(m_cuda.ctx_set_current(r.context), "cuCtxSetCurrent")) return false;
      for (const std::uint64_t offset : {std::uint64_t{0}, bytes - span}) {
        if (!cu(m_cuda.memcpy_dtoh(host.data(), r.recv + offset, span), "cuMemcpyDtoH")) return false;
        for (std::size_t e = 0; e < host.size(); ++e) {
          if (host[e] == expected) continue;
          char text[128];
          std::snprintf(text, sizeof text, "rank %zu element %llu: %g instead of %g", i,
                        static_cast<unsigned long long>(offset / 4 + e), static_cast<double>(host[e]),
                        static_cast<double>(expected));
          mismatch = text;
          break;
        }
        if (!mismatch.empty() || offset == bytes - span) break;
      }
    }
    return true;
  }

 private:
  struct Rank {
    smoke::CUdevice device = 0;
    smoke::CUcontext context = nullptr;
    smoke::CUstream stream = nullptr;
    smoke::CUevent start = nullptr;
    smoke::CUevent stop = nullptr;
    smoke::CUdeviceptr send = 0;
    smoke::CUdeviceptr recv = 0;
  };

  bool cu(CUresult result, const char* what) {
    if (result == smoke::cuda_success) return true;
    if (m_error.empty()) {
      m_error = std::string(what) + " failed: " + smoke::describe_cuda_error(m_cuda, result);
      m_failed_call = what;
    }
    return false;
  }
  bool nc(ncclResult_t result, const char* what) {
    if (result == nccl_success) return true;
    if (m_error.empty()) {
      m_error = std::string(what) + " failed: " + describe_nccl_error(m_nccl, result);
      m_failed_call = what;
    }
    return false;
  }
  /// Waits for every rank's stream. With cuStreamQuery the wait polls NCCL's asynchronous error too: a collective
  /// that an error stalls (a peer gone, a network failure) never completes its stream, and only
  /// ncclCommGetAsyncError says why (NCCL user guide, "Error handling and communicator abort": poll the stream and
  /// the communicator, abort on an error). Without it a blocking wait ends only at the sweep's limit, as a hang.
  bool synchronize() {
    if (m_cuda.stream_query == nullptr) {
      for (Rank& r : m_ranks) {
        if (!cu(m_cuda.ctx_set_current(r.context), "cuCtxSetCurrent") ||
            !cu(m_cuda.stream_synchronize(r.stream), "cuStreamSynchronize"))
          return false;
      }
      return async_errors();
    }
    for (;;) {
      bool done = true;
      for (Rank& r : m_ranks) {
        if (!cu(m_cuda.ctx_set_current(r.context), "cuCtxSetCurrent")) return false;
        const CUresult state = m_cuda.stream_query(r.stream);
        if (state == smoke::cuda_error_not_ready) {
          done = false;
        } else if (!cu(state, "cuStreamQuery")) {
          return false;
        }
      }
      if (!async_errors()) return false;
      if (done) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  bool async_errors() {
    for (ncclComm_t comm : m_comms) {
      ncclResult_t async = nccl_success;
      if (!nc(m_nccl.comm_get_async_error(comm, &async), "ncclCommGetAsyncError") ||
          !nc(async, "an all-reduce (asynchronous error)"))
        return false;
    }
    return true;
  }
  void release() {
    // After an error a communicator may still have operations in flight, which ncclCommDestroy waits for: abort it
    // instead, which frees it and aborts what might still run on the device (NCCL user guide, API "ncclCommAbort";
    // "Error handling and communicator abort").
    for (ncclComm_t comm : m_comms) (m_error.empty() ? m_nccl.comm_destroy : m_nccl.comm_abort)(comm);
    for (Rank& r : m_ranks) {
      m_cuda.ctx_set_current(r.context);
      if (r.send != 0) m_cuda.mem_free(r.send);
      if (r.recv != 0) m_cuda.mem_free(r.recv);
      if (r.start != nullptr) m_cuda.event_destroy(r.start);
      if (r.stop != nullptr) m_cuda.event_destroy(r.stop);
      if (r.stream != nullptr) m_cuda.stream_destroy(r.stream);
      m_cuda.primary_ctx_release(r.device);
    }
  }

  const smoke::CudaApi& m_cuda;
  const NcclApi& m_nccl;
  std::vector<Rank> m_ranks;
  std::vector<ncclComm_t> m_comms;
  std::string m_error;
  std::string m_failed_call;
};

/// What the worker thread found.
struct Outcome {
  int ranks = 0;
  std::vector<SweepSize> sizes;
  std::string error;        ///< a CUDA or NCCL call failed
  std::string failed_call;  ///< which one (the Session's), "" for a failure outside the session
  std::string mismatch;     ///< a wrong sum
  std::string skipped;      ///< why nothing ran (one GPU)
};

/// The sizes that fit: both buffers within 90% of the smallest free memory.
std::vector<std::uint64_t> fitting_sizes(std::vector<std::uint64_t> sizes, std::size_t free_bytes) {
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::erase_if(sizes, [&](std::uint64_t bytes) {
    return bytes < 4 || static_cast<double>(2 * bytes) > 0.9 * static_cast<double>(free_bytes);
  });
  return sizes;
}

Outcome sweep(const smoke::CudaApi& cuda, const NcclApi& nccl, const SweepOptions& options,
              std::vector<std::uint64_t> sizes) {
  Outcome outcome;
  if (const CUresult init = cuda.init(0); init != smoke::cuda_success) {
    outcome.error = "cuInit failed: " + smoke::describe_cuda_error(cuda, init);
    return outcome;
  }
  int count = 0;
  if (const CUresult result = cuda.device_get_count(&count); result != smoke::cuda_success) {
    outcome.error = "cuDeviceGetCount failed: " + smoke::describe_cuda_error(cuda, result);
    return outcome;
  }
  outcome.ranks = count;
  if (count < 2) {
    outcome.skipped = std::to_string(count) + " GPU visible: an all-reduce needs two or more";
    return outcome;
  }
  Session session(cuda, nccl);
  std::size_t free_bytes = 0;
  if (!session.open(count, free_bytes)) {
    outcome.error = session.error();
    outcome.failed_call = session.failed_call();
    return outcome;
  }
  sizes = fitting_sizes(std::move(sizes), free_bytes);
  if (sizes.empty()) {
    outcome.error = "no size of the sweep fits twice in the GPUs' free memory (" + std::to_string(free_bytes >> 20) +
                    " MiB on the fullest GPU)";
    return outcome;
  }
  if (!session.prepare(sizes.back())) {
    outcome.error = session.error();
    outcome.failed_call = session.failed_call();
    return outcome;
  }
  for (const std::uint64_t bytes : sizes) {
    SweepSize size;
    size.bytes = bytes;
    if (!session.time(bytes, options.warmup, options.iterations, size.seconds) ||
        !session.verify(bytes, options.verify_bytes, outcome.mismatch)) {
      outcome.error = session.error();
      outcome.failed_call = session.failed_call();
      return outcome;
    }
    size.verified = outcome.mismatch.empty();
    size.algbw_gbps = size.seconds > 0 ? static_cast<double>(bytes) / 1e9 / size.seconds : 0;
    size.busbw_gbps = allreduce_bus_bandwidth_gbps(bytes, size.seconds, count);
    outcome.sizes.push_back(size);
    if (!outcome.mismatch.empty()) break;
  }
  return outcome;
}

std::string one_decimal(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

/// The settings that can change the sweep's result: those that can break NCCL's initialisation or lower bandwidth.
std::vector<const NcclSetting*> settings_that_matter(const std::vector<NcclSetting>& settings) {
  std::vector<const NcclSetting*> out;
  for (const NcclSetting& setting : settings) {
    if (setting.has(SettingEffect::breaks_init) || setting.has(SettingEffect::lowers_bandwidth))
      out.push_back(&setting);
  }
  return out;
}

/// "; NCCL settings in effect: NCCL_ALGO=Ring (environment)", or "" when none of `settings` is given.
std::string in_effect(const std::vector<const NcclSetting*>& settings) {
  return settings.empty() ? std::string() : "; NCCL settings in effect: " + describe_settings(settings, std::nullopt);
}

/// The sources of the rules of `effect` that `settings` matched, "; "-joined.
std::string setting_sources(const std::vector<const NcclSetting*>& settings, SettingEffect effect) {
  std::vector<std::string> sources;
  for (const NcclSetting* setting : settings) {
    for (const SettingNote& note : setting->notes) {
      if (note.effect == effect) sources.push_back(setting->name + ": " + note.source);
    }
  }
  return util::join(sources, "; ");
}

/// nccl.library's message once NCCL ran: the version and library, every setting in effect, what gpuenv unset, and
/// what NCCL loads or writes because of a setting.
std::string library_message(const SweepReport& report) {
  std::string message = "NCCL " +
                        (report.nccl_version.empty() ? std::string("(version unknown)") : report.nccl_version) + " (" +
                        report.library + ")";
  if (!report.settings.empty()) {
    std::vector<const NcclSetting*> all;
    for (const NcclSetting& setting : report.settings) all.push_back(&setting);
    message += "; NCCL settings in effect: " + describe_settings(all, std::nullopt);
    for (const SettingEffect effect : {SettingEffect::loads_code, SettingEffect::writes_file}) {
      const auto named = settings_with(report.settings, effect);
      if (!named.empty()) message += "; " + describe_settings(named, effect);
    }
  }
  for (const NcclSetting& withdrawn : report.unset) {
    message += "; unset before NCCL started: " + describe_settings({&withdrawn}, std::nullopt) +
               ", the rendezvous address of a multi-process job, which this one-process communicator does not need "
               "and NCCL would listen on";
  }
  return message;
}

}  // namespace

Finding sweep_bandwidth_finding(const SweepReport& report, const Floor* floor, const std::string& instance_type) {
  std::vector<std::string> measured;
  const SweepSize* at_floor = nullptr;
  for (const SweepSize& size : report.sizes) {
    measured.push_back(size_text(size.bytes) + " " + one_decimal(size.busbw_gbps));
    if (floor != nullptr && size.bytes == floor->message_bytes) at_floor = &size;
  }
  const std::string message =
      "all-reduce bus bandwidth over " + std::to_string(report.ranks) + " GPUs (GB/s): " + util::join(measured, ", ");
  const auto tuning = settings_with(report.settings, SettingEffect::lowers_bandwidth);
  const std::string with = in_effect(tuning);
  if (floor == nullptr) {
    return {"nccl.busbw", Status::pass,
            message + "; reported, not judged: no floor for " +
                (instance_type.empty() ? std::string("this node (no instance type known)") : instance_type) + with,
            "", ""};
  }
  const std::string versus = "floor " + one_decimal(floor->busbw_gbps) + " GB/s at " + size_text(floor->message_bytes);
  if (at_floor == nullptr)
    return {"nccl.busbw", Status::pass,
            message + "; " + versus + " not judged: that size did not fit the GPUs' memory" + with, "", floor->source};
  if (!floor->judged)
    return {"nccl.busbw", Status::pass,
            message + "; " + versus + " (" + floor->status + ": reported, not judged)" + with, "", floor->source};
  const std::string fabric_remedy =
      "check the NVLink fabric (`gpuenv doctor`: gpu.nvlink, fabric.state, fabric.manager, nvlink.errors) and that no "
      "other job uses the GPUs; rerun, then drain the node if it stays below";
  if (at_floor->busbw_gbps < floor->busbw_gbps) {
    // Below the floor fails whatever the settings: /etc/nccl.conf and root's environment apply to every NCCL job on
    // the node, so a setting that lowers bandwidth is no excuse; the finding names it beside the number.
    if (tuning.empty()) {
      return {"nccl.busbw", Status::fail, message + "; below the " + versus + " for " + instance_type, fabric_remedy,
              floor->source};
    }
    return {"nccl.busbw", Status::fail,
            message + "; below the " + versus + " for " + instance_type + ", with " +
                describe_settings(tuning, SettingEffect::lowers_bandwidth) + " in effect",
            fabric_remedy + "; the floor was measured with NCCL's own choices: rerun without these settings (" +
                without_settings(tuning) + ") to tell the node's fault from theirs",
            floor->source + "; " + setting_sources(tuning, SettingEffect::lowers_bandwidth)};
  }
  return {"nccl.busbw", Status::pass, message + "; meets the " + versus + " for " + instance_type + with, "",
          floor->source};
}

namespace {

/// Loads the first candidate that opens; nullptr with the reasons when none does.
std::shared_ptr<system::DynamicLibrary> load_first(system::System& system, const std::vector<std::string>& candidates,
                                                   std::string& loaded_name, std::string& reasons) {
  for (const std::string& name : candidates) {
    auto library = system.load_library(name);
    if (library) {
      loaded_name = name;
      return std::shared_ptr<system::DynamicLibrary>(std::move(*library));
    }
    reasons += (reasons.empty() ? "" : "; ") + name + ": " + library.error().message;
  }
  return nullptr;
}

void finish(SweepReport& report) { report.verdict = report::verdict_of(report.findings); }

/// The settings NCCL will run with, after taking NCCL_COMM_ID out of the environment. ncclCommInitAll makes its
/// unique id with ncclGetUniqueId, whose bootstrap takes NCCL_COMM_ID's address when it is set, and its first rank
/// then starts the bootstrap root listening there (NVIDIA/nccl@5067397 src/init.cc:2625, src/bootstrap.cc:433,
/// src/init.cc:2533); the interface is chosen by that address's subnet too (src/bootstrap.cc:109). A leftover address
/// of another host (a multi-node job's) makes initialisation fail, and one process needs no rendezvous. NCCL reads it
/// with getenv (src/plugin/env/default_env.cc), so the variable must leave this process's environment: through
/// System, the one place gpuenv changes its own environment, before NCCL's first call and its threads. A value from
/// ~/.nccl.conf or /etc/nccl.conf cannot be taken out so: NCCL adds the files' lines to the environment itself when
/// it starts (src/misc/param.cc), so that one stays and is named in the findings.
/// Remaining race: libcuda or an NVML sampler of this process may already run threads that call getenv, and glibc
/// before 2.40 does not make getenv safe against a concurrent unsetenv. The sweep is skipped once any work was
/// abandoned (system::work_was_abandoned), which leaves threads that finished their calls; docs/fabric.md.
std::vector<NcclSetting> prepare_environment(system::System& system, int version_code, SweepReport& report) {
  if (const auto comm_id = system.environment("NCCL_COMM_ID")) {
    system.unset_environment("NCCL_COMM_ID");
    report.unset.push_back({"NCCL_COMM_ID", *comm_id, "environment", {}});
  }
  return read_nccl_settings(system, version_code);
}

/// Why NCCL must not start in this (root) process with `settings`: a configuration file it reads (NCCL_CONF_FILE or
/// ~/.nccl.conf, then /etc/nccl.conf) that someone other than root and the running user could change or create (the
/// file, or its directory when it is absent: System::trust_problem), or a setting, from the environment or a file,
/// that makes NCCL load a library or write a file that it names (SettingEffect::loads_code, writes_file). NCCL 2.30
/// takes ~ from HOME (NVIDIA/nccl@5067397 src/misc/param.cc:24) and NCCL_CONF_FILE can name any path, so either can
/// hand root's NCCL a user's file. nullopt when there is none.
std::optional<std::string> untrusted_steering(system::System& system, int version_code,
                                              const std::vector<NcclSetting>& settings) {
  std::vector<std::string> problems;
  for (const std::string& path :
       nccl_config_paths(system.environment("NCCL_CONF_FILE"), system.environment("HOME"), version_code)) {
    auto problem = system.trust_problem(path);
    if (!problem) {
      const std::size_t slash = path.rfind('/');
      if (slash != std::string::npos && slash > 0) problem = system.trust_problem(path.substr(0, slash));
    }
    if (problem) problems.push_back("NCCL's configuration file " + path + " is not trusted: " + *problem);
  }
  for (const SettingEffect effect : {SettingEffect::loads_code, SettingEffect::writes_file}) {
    const auto named = settings_with(settings, effect);
    if (!named.empty()) problems.push_back(describe_settings(named, effect));
  }
  if (problems.empty()) return std::nullopt;
  return util::join(problems, "; ");
}

}  // namespace

util::Expected<SweepReport> run_allreduce_sweep(system::System& system, const SweepOptions& options) {
  GPUENV_TRY_ASSIGN(auto data, builtin_data());
  GPUENV_TRY_ASSIGN(auto candidates, nccl_candidates(system, options.nccl));
  SweepReport report;
  std::string reasons;
  auto nccl_library = load_first(system, candidates, report.library, reasons);
  if (nccl_library == nullptr) {
    report.findings.push_back({"nccl.library", Status::skip, "no NCCL to test with: " + reasons, k_install_hint, ""});
    finish(report);
    return report;
  }
  auto nccl = resolve_nccl_api(*nccl_library);
  if (!nccl) {
    report.findings.push_back(
        {"nccl.library", Status::fail, report.library + ": " + nccl.error().message, k_install_hint, ""});
    finish(report);
    return report;
  }
  auto cuda_loaded = system.load_library(options.cuda_library);
  if (!cuda_loaded) {
    report.findings.push_back(
        {"nccl.allreduce", Status::fail,
         "no NVIDIA driver: " + options.cuda_library + " cannot be loaded (" + cuda_loaded.error().message + ")",
         "install the NVIDIA driver; run `gpuenv doctor`", ""});
    finish(report);
    return report;
  }
  auto cuda_library = std::shared_ptr<system::DynamicLibrary>(std::move(*cuda_loaded));
  auto cuda = probe::cuda::resolve(*cuda_library);
  if (!cuda) return util::Error::input(options.cuda_library + " is not a usable CUDA driver: " + cuda.error().message);

  // ncclGetVersion only writes NCCL_VERSION_CODE (NVIDIA/nccl src/init.cc:176): safe before anything else.
  int version_code = 0;
  if (nccl->get_version(&version_code) != nccl_success) version_code = 0;
  report.nccl_version = nccl_version_text(version_code);
  // Before anything that NCCL reads its settings for: a file or setting that could make root load or write what a
  // user chose stops the sweep here (docs/security.md).
  auto settings = read_nccl_settings(system, version_code);
  if (const auto refused = untrusted_steering(system, version_code, settings)) {
    report.settings = std::move(settings);
    report.findings.push_back({"nccl.library", Status::pass, library_message(report), "", ""});
    report.findings.push_back(
        {"nccl.allreduce", Status::skip, "the all-reduce did not run: " + *refused,
         "gpuenv will not let NCCL load code or write files named by settings it cannot trust: for this check, "
         "unset or remove the plugin and *_FILE settings, and keep NCCL's configuration files (NCCL_CONF_FILE, "
         "~/.nccl.conf under HOME, /etc/nccl.conf) where only root can change them",
         ""});
    finish(report);
    return report;
  }
  report.settings = prepare_environment(system, version_code, report);

  const Floor* floor = options.instance_type.empty() ? nullptr : data->floor_for(options.instance_type, 1);
  std::vector<std::uint64_t> sizes = options.sizes;
  if (floor != nullptr) sizes.push_back(floor->message_bytes);
  // NCCL's init or a collective can hang on a broken fabric: the whole sweep runs on a thread abandoned at the limit.
  auto outcome = system::call_abandonable<Outcome>(
      nccl_library,
      [cuda_library, cuda = *cuda, nccl = *nccl, options, sizes](system::DynamicLibrary&) {
        return sweep(cuda, nccl, options, sizes);
      },
      options.timeout);
  const std::string with = in_effect(settings_that_matter(report.settings));
  if (!outcome) {
    report.abandoned_work = true;
    report.findings.push_back({"nccl.library", Status::pass, library_message(report), "", ""});
    report.findings.push_back(
        {"nccl.allreduce", Status::fail,
         "hang: the NCCL all-reduce did not finish within " +
             one_decimal(static_cast<double>(options.timeout.count()) / 1000) + " s" + with,
         "rerun with NCCL_DEBUG=INFO to see where it waits; a hang across GPUs points at the "
         "NVLink fabric (`gpuenv doctor`: fabric.state, fabric.manager, gpu.nvlink) or a GPU in a "
         "bad state (Xid errors)",
         ""});
    finish(report);
    return report;
  }
  report.ranks = outcome->ranks;
  report.sizes = outcome->sizes;
  report.findings.push_back({"nccl.library", Status::pass, library_message(report), "", ""});
  const auto init_settings = settings_with(report.settings, SettingEffect::breaks_init);
  if (!outcome->skipped.empty()) {
    report.findings.push_back({"nccl.allreduce", Status::skip, outcome->skipped, "", ""});
  } else if (!outcome->error.empty()) {
    // A failure fails whatever the settings (a dead GPU's ncclUnhandledCudaError looks the same with
    // NCCL_SOCKET_IFNAME set); an initialisation failure names the settings that can break it, and the remedy says
    // how to rerun without them.
    std::string message = outcome->error + with;
    std::string remedy =
        "rerun with NCCL_DEBUG=INFO for NCCL's own account; check `gpuenv doctor` (driver, fabric manager, NVLink) "
        "and that no other process holds the GPUs";
    std::string source;
    if (outcome->failed_call == k_comm_init_all && !init_settings.empty()) {
      message =
          outcome->error + "; with " + describe_settings(init_settings, SettingEffect::breaks_init) + " in effect";
      remedy += "; if NCCL's log blames a setting, rerun without it (" + without_settings(init_settings) +
                ") to tell the node's fault from the setting's";
      source = setting_sources(init_settings, SettingEffect::breaks_init);
    }
    report.findings.push_back({"nccl.allreduce", Status::fail, message, remedy, source});
  } else if (!outcome->mismatch.empty()) {
    report.findings.push_back(
        {"nccl.allreduce", Status::fail,
         "wrong sum after the all-reduce of " + size_text(report.sizes.back().bytes) + " over " +
             std::to_string(report.ranks) + " GPUs: " + outcome->mismatch + with,
         "a collective that computes wrong sums corrupts training silently: drain the node, check "
         "`gpuenv doctor` (Xid, NVLink and PCIe errors), reset the GPUs and open a hardware "
         "ticket if it repeats",
         ""});
  } else {
    report.findings.push_back({"nccl.allreduce", Status::pass,
                               std::to_string(report.ranks) + " GPUs, " + size_text(report.sizes.front().bytes) +
                                   (report.sizes.size() > 1 ? " to " + size_text(report.sizes.back().bytes) : "") +
                                   ": every sum verified" + with,
                               "", ""});
    report.findings.push_back(sweep_bandwidth_finding(report, floor, options.instance_type));
  }
  finish(report);
  return report;
}

}  // namespace gpuenv::nccl
