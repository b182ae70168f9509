#pragma once
// `gpuenv nccl judge`: an nccl-tests output against the floors (data/nccl/floors.toml): wrong results, the bus
// bandwidth at the large sizes, the ranks and nodes it ran on. Pure: output and data in, findings out.

#include <optional>
#include <string>
#include <vector>

#include "nccl/data.hpp"
#include "nccl/tests_output.hpp"
#include "report/finding.hpp"

namespace gpuenv::nccl {

struct JudgeRequest {
  std::string instance_type;      ///< --instance-type ("" when unknown: bandwidth reported, not judged)
  std::optional<unsigned> nodes;  ///< --nodes (else the hosts of the device list)
  /// The instance type's GPUs per node, when its row is known: with --nodes, the ranks a full run has
  std::optional<unsigned> gpus_per_node;
};

struct JudgeReport {
  std::vector<report::Finding> findings;  ///< nccl.results, nccl.busbw, nccl.ranks, nccl.transport
  /// The row bus bandwidth was judged (or reported) at, and its busbw: the mean of out-of-place and in-place, as
  /// nccl-tests' "Avg bus bandwidth" is for a one-size run.
  std::optional<NcclTestsRow> judged_row;
  double judged_busbw_gbps = 0;
  const Floor* floor = nullptr;  ///< the floor that applied, if any
  unsigned nodes = 0;            ///< as judged
  report::Verdict verdict = report::Verdict::ok;
};

/// Judges `output`. A wrong result fails; bus bandwidth below a verified floor at the floor's size fails (other rows,
/// or a run without the floor's size, are reported only).
JudgeReport judge_nccl_tests(const NcclTestsOutput& output, const JudgeRequest& request, const NcclData& data);

/// "16 GiB", "512 MiB", "8 B".
std::string size_text(std::uint64_t bytes);

}  // namespace gpuenv::nccl
