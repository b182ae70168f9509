#pragma once
// NVIDIA/nccl-tests output (all_reduce_perf and the other *_perf tests) as data: the device list, the result table
// and the footer, in every layout the tests have printed (with or without the `root` column, `#wrong` counts or the
// older `error` magnitudes, the per-iteration columns), under `mpirun --tag-output` ("[1,0]<stdout>:") or
// `srun --label` ("0: ") prefixes and between NCCL's INFO lines. Pure; formats from NVIDIA/nccl-tests @ a0b82b22
// src/util.cu (writeBenchmarkLinePreamble, writeBenchmarkLineBody, writeResultFooter) and src/common.cu.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.hpp"

namespace gpuenv::nccl {

/// One row of the result table.
struct NcclTestsRow {
  /// One half of a row: out-of-place or in-place.
  struct Half {
    double time_us = 0;
    double algbw_gbps = 0;
    double busbw_gbps = 0;
    /// `#wrong`: the count of wrong elements (0 when right); the old `error` column's largest relative error; nullopt
    /// for N/A (validation off, -c 0).
    std::optional<double> wrong;
  };
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  std::string type;   ///< "float"
  std::string redop;  ///< "sum"; empty for tests without one
  Half out_of_place;
  Half in_place;
  std::size_t line = 0;  ///< 1-based line number in the text
};

/// A rank of the device list: "#  Rank  3 Group  0 Pid  12 on node-a device  3 [0x5c] NVIDIA H100 80GB HBM3".
struct NcclTestsRank {
  int rank = 0;
  std::string host;
  int device = 0;
  std::string gpu;  ///< the device name after the bus id
};

struct NcclTestsOutput {
  std::string test;                        ///< "all_reduce_perf" from "# Collective test starting:", else ""
  std::optional<int> nccl_library;         ///< "nccl-library=22703" from the version line
  std::vector<NcclTestsRank> ranks;        ///< the device list, in rank order
  std::vector<NcclTestsRow> rows;          ///< the table, in file order
  bool wrong_counts = true;                ///< the table has `#wrong` counts (false: the old `error` magnitudes)
  std::optional<long long> out_of_bounds;  ///< "# Out of bounds values : N OK|FAILED"
  std::optional<double> avg_busbw_gbps;    ///< "# Avg bus bandwidth : X" (the mean over every size and both halves)
  std::vector<std::string> rank_errors;    ///< "rank=3 #wrong=12" lines (nccl-tests built with DEBUG_PRINT)
  bool socket_transport = false;  ///< NCCL INFO says it used TCP sockets ("NET/Socket : Using", "via NET/Socket")
  std::vector<std::string> nccl_warnings;  ///< "NCCL WARN ..." lines, prefixes removed

  /// The distinct hosts of the device list, in order of first appearance.
  std::vector<std::string> hosts() const;
};

/// Parses an nccl-tests output; an input Error when it holds no result table (the file is not an nccl-tests output,
/// or the test died before its first result: NCCL's error is then in `nccl_warnings` of nothing, and in the message).
util::Expected<NcclTestsOutput> parse_nccl_tests_output(std::string_view text);

/// The bus bandwidth nccl-tests reports for all-reduce: algbw x 2(n-1)/n, with algbw = bytes / 1e9 / seconds
/// (NVIDIA/nccl-tests src/all_reduce.cu AllReduceGetBw). 0 for one rank or no time.
double allreduce_bus_bandwidth_gbps(std::uint64_t bytes, double seconds, int ranks);

}  // namespace gpuenv::nccl
