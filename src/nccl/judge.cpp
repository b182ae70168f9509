#include "nccl/judge.hpp"

#include <algorithm>
#include <cstdio>

#include "util/strings.hpp"

namespace gpuenv::nccl {
namespace {

using report::Finding;
using report::Status;

constexpr const char* k_tests_source =
    "NVIDIA/nccl-tests @ a0b82b2260cf5152b9f8c061bbf7eaf0ba096432 (src/common.cu CheckData: #wrong counts the "
    "elements outside the tolerance, and each size with any is one out-of-bounds value; src/util.cu "
    "writeResultFooter)";

std::string gbps(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f GB/s", value);
  return buffer;
}

/// The host of rank `rank` in the device list, or "".
std::string host_of(const NcclTestsOutput& output, int rank) {
  for (const NcclTestsRank& r : output.ranks) {
    if (r.rank == rank) return r.host;
  }
  return {};
}

Finding results_finding(const NcclTestsOutput& output) {
  std::vector<std::string> wrong;
  bool unchecked = true;
  for (const NcclTestsRow& row : output.rows) {
    for (const auto& [name, half] :
         {std::pair{"out-of-place", &row.out_of_place}, std::pair{"in-place", &row.in_place}}) {
      if (!half->wrong) continue;
      unchecked = false;
      if (output.wrong_counts && *half->wrong > 0) {
        char count[32];
        std::snprintf(count, sizeof count, "%.0f", *half->wrong);
        wrong.push_back(size_text(row.bytes) + " " + name + ": " + count + " wrong elements");
      }
    }
  }
  const long long out_of_bounds = output.out_of_bounds.value_or(0);
  if (!wrong.empty() || out_of_bounds > 0) {
    std::string message =
        wrong.empty() ? std::to_string(out_of_bounds) + " sizes with out-of-bounds values" : util::join(wrong, "; ");
    for (const std::string& line : output.rank_errors) {
      const auto rank = util::parse_int(line.substr(5, line.find(' ') - 5));
      message += "; " + line +
                 (rank && !host_of(output, static_cast<int>(*rank)).empty()
                      ? " (on " + host_of(output, static_cast<int>(*rank)) + ")"
                      : "");
    }
    return {"nccl.results", Status::fail, "the all-reduce computed wrong sums: " + message,
            "a wrong collective result is silent data corruption: drain the nodes, run `gpuenv smoke --nccl` and "
            "`gpuenv doctor` on each to find the one that corrupts (Xid, NVLink or PCIe errors), reset its GPUs and "
            "open a hardware ticket if it repeats",
            k_tests_source};
  }
  // nccl-tests prints "# Out of bounds values : N OK|FAILED" only after every size has run and its buffers are freed
  // (NVIDIA/nccl-tests src/common.cu, the end of run()): without it the run died part-way, and the rows it left
  // judge only the sizes before the failure.
  if (!output.out_of_bounds) {
    std::string message = "the run stopped after " + std::to_string(output.rows.size()) +
                          " sizes, before nccl-tests' closing \"# Out of bounds values\" line";
    if (!output.nccl_warnings.empty()) message += "; NCCL said: " + output.nccl_warnings.front();
    return {"nccl.results", Status::fail, message,
            "read the job's log for the rank that failed (NCCL WARN, Xid, a killed process), run `gpuenv doctor` "
            "on its node, and run the job again",
            k_tests_source};
  }
  if (unchecked) {
    return {"nccl.results", Status::warn, "results were not checked (#wrong N/A: the test ran with -c 0)",
            "run nccl-tests with -c 1 (the default) so that every result is verified", k_tests_source};
  }
  return {"nccl.results", Status::pass,
          std::to_string(output.rows.size()) + " sizes, every result " +
              (output.wrong_counts ? "right (#wrong 0)" : "within tolerance (no out-of-bounds values)"),
          "", k_tests_source};
}

/// The row to judge: the floor's size when the run has it, else the largest size.
const NcclTestsRow& row_to_judge(const NcclTestsOutput& output, const Floor* floor) {
  if (floor != nullptr) {
    for (const NcclTestsRow& row : output.rows) {
      if (row.bytes == floor->message_bytes) return row;
    }
  }
  return *std::max_element(output.rows.begin(), output.rows.end(),
                           [](const NcclTestsRow& a, const NcclTestsRow& b) { return a.bytes < b.bytes; });
}

Finding busbw_finding(const NcclTestsOutput& output, const JudgeRequest& request, unsigned nodes, const Floor* floor,
                      JudgeReport& report) {
  const NcclTestsRow& row = row_to_judge(output, floor);
  const double busbw = (row.out_of_place.busbw_gbps + row.in_place.busbw_gbps) / 2;
  report.judged_row = row;
  report.judged_busbw_gbps = busbw;
  const std::string measured = gbps(busbw) + " bus bandwidth at " + size_text(row.bytes) + " (out-of-place " +
                               gbps(row.out_of_place.busbw_gbps) + ", in-place " + gbps(row.in_place.busbw_gbps) + ")";
  const std::string where = std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
  if (floor == nullptr && !request.nodes && output.hosts().empty()) {
    return {"nccl.busbw", Status::pass,
            measured + "; reported, not judged: the number of nodes is unknown (the output has no device list)",
            "pass --nodes N to be judged against the instance type's floor", ""};
  }
  if (floor == nullptr) {
    return {"nccl.busbw", Status::pass,
            measured + " on " + where + "; reported, not judged: no floor for " +
                (request.instance_type.empty() ? std::string("an unknown instance type (pass --instance-type)")
                                               : request.instance_type + " at " + where),
            "", ""};
  }
  const std::string versus = "floor " + gbps(floor->busbw_gbps) + " at " + size_text(floor->message_bytes);
  if (row.bytes != floor->message_bytes) {
    return {"nccl.busbw", Status::pass,
            measured + "; " + versus + " not judged: the run has no " + size_text(floor->message_bytes) + " row",
            "run all_reduce_perf up to -e " + std::to_string(floor->message_bytes) + " to be judged", floor->source};
  }
  if (!floor->judged) {
    return {"nccl.busbw", Status::pass, measured + "; " + versus + " (" + floor->status + ": reported, not judged)", "",
            floor->source};
  }
  if (busbw < floor->busbw_gbps) {
    return {"nccl.busbw", Status::fail, measured + " is below the " + versus + " for " + request.instance_type,
            "nccl-tests reports one time for all ranks (the slowest sets it): run `gpuenv smoke --nccl` and `gpuenv "
            "doctor` on each node to find the slow one (NVLink down, fabric manager, PCIe, IB ports), or halve the "
            "node set until the slow node is isolated",
            floor->source};
  }
  return {"nccl.busbw", Status::pass, measured + " meets the " + versus + " for " + request.instance_type, "",
          floor->source};
}

/// True when every row's bus bandwidth, out-of-place and in-place, is 0: what a 1-rank all-reduce prints (its busbw
/// factor 2*(n-1)/n is 0; NVIDIA/nccl-tests doc/PERFORMANCE.md, "AllReduce").
/// Whether no row moved data: bus bandwidth 0.00 at every size of a sweep that reaches 1 MiB. nccl-tests prints GB/s
/// with two decimals, so a latency sweep of a few bytes reads 0.00 on a healthy fabric (64 B in 10 us is 0.006
/// GB/s); a MiB in under a millisecond is more than 1 GB/s.
bool busbw_all_zero(const NcclTestsOutput& output) {
  constexpr std::uint64_t k_telling_size = 1 << 20;
  const bool telling = std::any_of(output.rows.begin(), output.rows.end(),
                                   [](const NcclTestsRow& row) { return row.bytes >= k_telling_size; });
  return telling && std::all_of(output.rows.begin(), output.rows.end(), [](const NcclTestsRow& row) {
           return row.out_of_place.busbw_gbps == 0 && row.in_place.busbw_gbps == 0;
         });
}

/// The distinct rank numbers of the device list, in order of first appearance.
std::vector<int> distinct_ranks(const NcclTestsOutput& output) {
  std::vector<int> out;
  for (const NcclTestsRank& rank : output.ranks) {
    if (std::find(out.begin(), out.end(), rank.rank) == out.end()) out.push_back(rank.rank);
  }
  return out;
}

Finding ranks_finding(const NcclTestsOutput& output, const JudgeRequest& request) {
  const std::vector<std::string> hosts = output.hosts();
  if (output.ranks.empty())
    return {"nccl.ranks", Status::skip, "the output has no device list (it starts at the table)", "", ""};
  std::string message = std::to_string(output.ranks.size()) + " ranks on " + std::to_string(hosts.size()) +
                        (hosts.size() == 1 ? " node" : " nodes") + " (" + util::join(hosts, ", ") + ")";
  // nccl-tests without MPI support starts one independent test per process: each prints its own device list from
  // rank 0 and its 1-rank all-reduce moves nothing (busbw 0). With MPI the root prints every rank's line once
  // (NVIDIA/nccl-tests README, "NCCL tests rely on MPI to work on multiple processes, hence multiple nodes ...
  // set MPI=1"; src/common.cu: the device lines are gathered to rank 0 under #if MPI_SUPPORT).
  const std::string one_communicator_remedy =
      "the processes did not form one communicator: build nccl-tests with `make MPI=1 MPI_HOME=...` and launch it "
      "with srun --mpi=pmix or mpirun (gpuenv nccl job writes such a job)";
  const std::vector<int> distinct = distinct_ranks(output);
  // Every process calling itself rank 0, or ranks repeated and no data moved: each process ran its own test. Ranks
  // repeated beside real bandwidth are several complete runs in one log (a script running one test after another).
  if (distinct.size() < output.ranks.size() && (distinct.size() == 1 || busbw_all_zero(output))) {
    return {"nccl.ranks", Status::fail,
            message + "; rank " + std::to_string(distinct.front()) + " is listed " +
                std::to_string(std::count_if(output.ranks.begin(), output.ranks.end(),
                                             [&](const NcclTestsRank& r) { return r.rank == distinct.front(); })) +
                " times: each process ran its own test (nccl-tests built without MPI=1?)",
            one_communicator_remedy, ""};
  }
  if (distinct.size() < output.ranks.size()) {
    return {"nccl.ranks", Status::warn,
            message + "; the device list repeats (" + std::to_string(distinct.size()) +
                " distinct ranks): several runs in one log are judged as one",
            "judge each run's output on its own", ""};
  }
  if (output.ranks.size() > 1 && busbw_all_zero(output)) {
    return {"nccl.ranks", Status::fail,
            message +
                ", and bus bandwidth is 0 at every size: no rank exchanged data with another (nccl-tests "
                "built without MPI=1?)",
            one_communicator_remedy, ""};
  }
  if (request.nodes && hosts.size() != *request.nodes) {
    return {"nccl.ranks", Status::warn, message + ", not the " + std::to_string(*request.nodes) + " of --nodes",
            "check the job's node list and that every node started its ranks", ""};
  }
  // Fewer ranks than the nodes' GPUs may be a deliberate partial run (--gpus-per-node), so it warns, never fails.
  if (request.nodes && request.gpus_per_node &&
      output.ranks.size() != static_cast<std::size_t>(*request.nodes) * *request.gpus_per_node) {
    return {"nccl.ranks", Status::warn,
            message + ", not the " + std::to_string(*request.nodes * *request.gpus_per_node) + " of " +
                std::to_string(*request.nodes) + " nodes x " + std::to_string(*request.gpus_per_node) + " GPUs of " +
                request.instance_type,
            "run one rank per GPU (gpuenv nccl job does); a run on part of the GPUs is not comparable with the "
            "instance type's floor",
            ""};
  }
  return {"nccl.ranks", Status::pass, message, "", ""};
}

}  // namespace

std::string size_text(std::uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit + 1 < std::size(units) && bytes % (1ULL << (10 * (unit + 1))) == 0) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.0f %s", value, units[unit]);
  return buffer;
}

JudgeReport judge_nccl_tests(const NcclTestsOutput& output, const JudgeRequest& request, const NcclData& data) {
  JudgeReport report;
  report.nodes = request.nodes.value_or(static_cast<unsigned>(std::max<std::size_t>(1, output.hosts().size())));
  // Neither --nodes nor a device list: the node count is a guess, and a one-node floor must not judge a run that
  // may have spanned many (NVIDIA/nccl-tests issue 252's output starts at the table).
  const bool nodes_known = request.nodes || !output.hosts().empty();
  report.floor =
      request.instance_type.empty() || !nodes_known ? nullptr : data.floor_for(request.instance_type, report.nodes);
  report.findings.push_back(results_finding(output));
  report.findings.push_back(busbw_finding(output, request, report.nodes, report.floor, report));
  report.findings.push_back(ranks_finding(output, request));
  // NCCL prints "NET/Socket : Using" at start-up on any node without IB or EFA, a one-node NVLink run included: only
  // a run across nodes can have used the sockets between them.
  if (output.socket_transport && report.nodes > 1) {
    report.findings.push_back(
        {"nccl.transport", Status::warn,
         "NCCL used TCP sockets (NET/Socket) between nodes: the RDMA network (InfiniBand, RoCE, EFA) was not used",
         "check the job's NCCL environment (gpuenv nccl job writes it), the RDMA devices (`gpuenv doctor`: "
         "fabric.gpudirect, ib.ports) and the NCCL net plugin",
         ""});
  }
  report.verdict = report::verdict_of(report.findings);
  return report;
}

}  // namespace gpuenv::nccl
