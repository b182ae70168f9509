#pragma once
// `gpuenv smoke --nccl`: an all-reduce over every GPU of the node through NCCL (dlopen'ed; the node's libnccl.so.2 or
// a Python environment's nvidia-nccl wheel), one process and one thread driving all GPUs with group calls
// (ncclCommInitAll, ncclGroupStart/ncclAllReduce.../ncclGroupEnd, as nccl-tests -g N does). A short size sweep, each
// result verified (every rank contributes rank + 1, so every element must sum to n(n+1)/2), bus bandwidth as
// nccl-tests computes it, and the floor for the instance type at its own size (data/nccl/floors.toml).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nccl/data.hpp"
#include "nccl/environment.hpp"
#include "nccl/nccl_api.hpp"
#include "report/finding.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::nccl {

struct SweepOptions {
  std::string cuda_library = "libcuda.so.1";
  NcclLocation nccl;          ///< where libnccl comes from
  std::string instance_type;  ///< names the floor ("" none)
  /// The sizes to all-reduce (bytes per rank); the floor's size is added when its row applies and the GPUs have
  /// room. Default: 8 MiB, 64 MiB, 512 MiB, 1 GiB.
  std::vector<std::uint64_t> sizes = {8ULL << 20, 64ULL << 20, 512ULL << 20, 1ULL << 30};
  int warmup = 2;                           ///< untimed all-reduces before each size
  int iterations = 5;                       ///< timed all-reduces per size
  std::uint64_t verify_bytes = 8ULL << 20;  ///< bytes read back per rank and size (from both ends of the buffer)
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};  ///< the whole run, NCCL's init included
};

/// One size of the sweep.
struct SweepSize {
  std::uint64_t bytes = 0;
  double seconds = 0;  ///< per all-reduce: the slowest rank's event time over the iterations, divided by them
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  bool verified = false;
};

struct SweepReport {
  std::string library;       ///< the libnccl that was loaded ("" when none)
  std::string nccl_version;  ///< ncclGetVersion, "2.27.3"
  int ranks = 0;             ///< GPUs in the communicator
  std::vector<SweepSize> sizes;
  /// The NCCL_* settings NCCL ran with (environment.hpp), named in the findings' messages (and remedies, on a
  /// failure they can explain); they never change a finding's status: /etc/nccl.conf and root's environment apply to
  /// every NCCL job on the node.
  std::vector<NcclSetting> settings;
  /// Variables gpuenv took out of its environment before NCCL read them: NCCL_COMM_ID, the rendezvous address of a
  /// multi-process job, which a one-process communicator does not need and NCCL would listen on.
  std::vector<NcclSetting> unset;
  std::vector<report::Finding> findings;  ///< nccl.library, nccl.allreduce, nccl.busbw
  bool abandoned_work = false;            ///< NCCL or CUDA hung: its thread was abandoned (the process must _Exit)
  report::Verdict verdict = report::Verdict::ok;
};

/// nccl.busbw for a finished sweep: every size's bus bandwidth, and `floor` judged at its own size when the sweep ran
/// it and the row is verified (else reported beside the numbers). Below the floor is a fail, naming the settings of
/// report.settings that can lower bandwidth when there are any.
report::Finding sweep_bandwidth_finding(const SweepReport& report, const Floor* floor,
                                        const std::string& instance_type);

/// Runs the sweep. Machine problems (no NCCL: a skip with the install hint; CUDA or NCCL errors, a wrong sum, a hang,
/// bandwidth below a verified floor) are findings; the Error is for bad input (--python) or broken embedded data.
/// Before NCCL starts: when a configuration file NCCL would read is not trusted (System::trust_problem) or a setting
/// makes NCCL load a library or write a file it names, nccl.allreduce is a skip naming it and NCCL never starts;
/// else NCCL_COMM_ID is unset in this process's environment (through System; report.unset).
util::Expected<SweepReport> run_allreduce_sweep(system::System& system, const SweepOptions& options);

}  // namespace gpuenv::nccl
