// nccl-tests outputs from public sources (tests/fixtures/nccl, URLs in its README) parsed and judged.

#include "nccl/tests_output.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "nccl/data.hpp"
#include "nccl/judge.hpp"
#include "support/fake_system.hpp"
#include "support/findings.hpp"

namespace {

using gpuenv::nccl::parse_nccl_tests_output;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::testing::has_finding;
using gpuenv::testing::read_fixture;
using gpuenv::testing::require_finding;

const gpuenv::nccl::NcclData& nccl_data() {
  static const auto* loaded = [] {
    auto d = gpuenv::nccl::builtin_data();
    REQUIRE(d);
    return *d;
  }();
  return *loaded;
}

}  // namespace

TEST_CASE("bus bandwidth: nccl-tests' all-reduce formula against its own printed numbers", "[nccl]") {
  using gpuenv::nccl::allreduce_bus_bandwidth_gbps;
  // NVIDIA/nccl-tests doc/PERFORMANCE.md, "AllReduce": "B = S/t * (2*(n-1)/n) = algbw * (2*(n-1)/n)", with
  // "algbw = S/t" in GB/s (10^9 bytes). Checked against the numbers nccl-tests itself printed in public outputs.
  // a3mega fixture, 8 GiB row: 8589934592 B in 47535 us over 16 ranks printed algbw 180.71, busbw 338.82.
  CHECK(allreduce_bus_bandwidth_gbps(8589934592ULL, 47535e-6, 16) == Approx(338.82).epsilon(0.001));
  // p4d fixture (NCCL 2.8.3), 1 GiB row: 47392 us, 16 ranks, busbw 42.48.
  CHECK(allreduce_bus_bandwidth_gbps(1073741824ULL, 47392e-6, 16) == Approx(42.48).epsilon(0.001));
  // Two ranks move the buffer once each way: busbw = algbw.
  CHECK(allreduce_bus_bandwidth_gbps(1'000'000'000ULL, 1.0, 2) == Approx(1.0));
  CHECK(allreduce_bus_bandwidth_gbps(1024, 1.0, 1) == 0);
  CHECK(allreduce_bus_bandwidth_gbps(1024, 0.0, 8) == 0);
}

TEST_CASE("parse: two a3-mega nodes, the current format with root and #wrong", "[nccl]") {
  auto output = parse_nccl_tests_output(read_fixture("nccl/a3mega-2x8xh100-tcpxo.txt"));
  REQUIRE(output);
  CHECK(output->wrong_counts);
  REQUIRE(output->ranks.size() == 16);
  CHECK(output->ranks[0].host == "ztan-mig-235z");
  CHECK(output->ranks[15].host == "ztan-mig-gq73");
  CHECK(output->ranks[15].device == 7);
  CHECK(output->ranks[15].gpu == "NVIDIA H100 80GB HBM3");
  CHECK(output->hosts() == std::vector<std::string>{"ztan-mig-235z", "ztan-mig-gq73"});
  REQUIRE(output->rows.size() == 31);  // 8 B to 8 GiB, doubling
  CHECK(output->rows.front().bytes == 8);
  const auto& last = output->rows.back();
  CHECK(last.bytes == 8589934592ULL);
  CHECK(last.count == 2147483648ULL);
  CHECK(last.type == "float");
  CHECK(last.redop == "sum");
  CHECK(last.out_of_place.time_us == Approx(47535));
  CHECK(last.out_of_place.busbw_gbps == Approx(338.82));
  CHECK(last.in_place.busbw_gbps == Approx(337.35));
  CHECK(last.out_of_place.wrong == std::optional<double>(0));
  CHECK(output->out_of_bounds == std::optional<long long>(0));
  CHECK(output->avg_busbw_gbps == std::optional<double>(70.742));
}

TEST_CASE("parse: two p4d nodes over EFA, NCCL 2.8.3's format under mpirun --tag-output", "[nccl]") {
  auto output = parse_nccl_tests_output(read_fixture("nccl/p4d-2x8xa100-efa-nccl2.8.txt"));
  REQUIRE(output);
  CHECK_FALSE(output->wrong_counts);  // the old `error` column holds the largest relative error, not a count
  REQUIRE(output->ranks.size() == 16);
  CHECK(output->ranks[8].host == "nccl-tests-efa-16-worker-1");
  CHECK(output->ranks[8].gpu == "A100-SXM4-40GB");
  REQUIRE(output->rows.size() == 30);  // 8 B to 4 GiB
  CHECK(output->rows.back().bytes == 4294967296ULL);
  CHECK(output->rows.back().out_of_place.busbw_gbps == Approx(43.81));
  CHECK(output->rows.back().out_of_place.wrong == std::optional<double>(5e-07));
  CHECK(output->rows.back().redop == "sum");
  CHECK(output->out_of_bounds == std::optional<long long>(0));
  CHECK(output->avg_busbw_gbps == std::optional<double>(11.2432));
  CHECK_FALSE(output->socket_transport);  // "Selected Provider is efa", "via NET/AWS Libfabric"
}

TEST_CASE("parse: a table without a device list, not nccl-tests at all", "[nccl]") {
  auto ring = parse_nccl_tests_output(read_fixture("nccl/issue-252-ring-table.txt"));
  REQUIRE(ring);
  CHECK(ring->ranks.empty());
  REQUIRE(ring->rows.size() == 5);
  CHECK(ring->rows[4].in_place.busbw_gbps == Approx(94.80));
  // Without a device list or --nodes the node count is unknown: no floor judges it, whatever the instance type.
  const auto unjudged =
      gpuenv::nccl::judge_nccl_tests(*ring, {"Standard_ND96isr_H100_v5", std::nullopt, std::nullopt}, nccl_data());
  const Finding& unknown_nodes = require_finding(unjudged.findings, "nccl.busbw");
  CHECK(unknown_nodes.status == Status::pass);
  CHECK(unknown_nodes.message.find("the number of nodes is unknown") != std::string::npos);
  CHECK(unknown_nodes.remedy.find("--nodes N") != std::string::npos);
  auto nothing = parse_nccl_tests_output("hello\nworld\n");
  REQUIRE_FALSE(nothing);
  CHECK(nothing.error().message.find("no nccl-tests result table") != std::string::npos);
  auto died = parse_nccl_tests_output(
      "node-a:123:456 [0] NCCL WARN NET/IB : Got async event : port error\n#  Rank  0 Group  0 Pid 1 on a device 0 "
      "[0x1b] NVIDIA H100\n");
  REQUIRE_FALSE(died);
  CHECK(died.error().message.find("NCCL WARN NET/IB : Got async event") != std::string::npos);
}

TEST_CASE("parse: srun --label prefixes, validation off (N/A), sockets between nodes", "[nccl]") {
  const std::string text =
      "0: #  Rank  0 Group  0 Pid   100 on     node-a device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
      "0: #  Rank  1 Group  0 Pid   101 on     node-b device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
      "0: node-a:100:100 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
      "0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
      "busbw #wrong\n"
      "0:   1073741824     268435456     float     sum      -1    10314  104.11  104.11    N/A    10339  103.85  "
      "103.85    N/A\n"
      "0: # Out of bounds values : 0 OK\n"
      "0: # Avg bus bandwidth    : 103.98\n";
  auto output = parse_nccl_tests_output(text);
  REQUIRE(output);
  CHECK(output->ranks.size() == 2);
  REQUIRE(output->rows.size() == 1);
  CHECK_FALSE(output->rows[0].out_of_place.wrong);
  CHECK(output->socket_transport);
  const auto judged = gpuenv::nccl::judge_nccl_tests(*output, {}, nccl_data());
  CHECK(require_finding(judged.findings, "nccl.results").status == Status::warn);
  CHECK(require_finding(judged.findings, "nccl.transport").status == Status::warn);
  // One node: NCCL names the socket transport at start-up on any node without IB or EFA, NVLink-only runs included.
  auto one_node = *output;
  one_node.ranks.pop_back();
  CHECK_FALSE(has_finding(gpuenv::nccl::judge_nccl_tests(one_node, {}, nccl_data()).findings, "nccl.transport"));
}

TEST_CASE("parse: a row whose size or count is past 64 bits is not a row (std::stoull threw)", "[nccl]") {
  const std::string header =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
      "busbw #wrong\n";
  const std::string good =
      "  1073741824     268435456     float     sum      -1    10314  104.11  104.11      0    10339  103.85  "
      "103.85      0\n";
  const std::string huge_size =
      "  99999999999999999999999     268435456     float     sum      -1    10314  104.11  104.11      0    10339  "
      "103.85  103.85      0\n";
  const std::string huge_count =
      "  1073741824     18446744073709551616     float     sum      -1    10314  104.11  104.11      0    10339  "
      "103.85  103.85      0\n";
  auto output = parse_nccl_tests_output(header + huge_size + good + huge_count);
  REQUIRE(output);
  REQUIRE(output->rows.size() == 1);
  CHECK(output->rows[0].bytes == 1073741824u);
  CHECK(output->rows[0].count == 268435456u);
  CHECK(output->rows[0].line == 3);
  auto only_huge = parse_nccl_tests_output(header + huge_size);
  REQUIRE_FALSE(only_huge);
  CHECK(only_huge.error().message.find("no nccl-tests result table") != std::string::npos);
}

TEST_CASE("judge: a right run, a wrong sum, a floor met and missed, a wrong node count", "[nccl]") {
  auto right = parse_nccl_tests_output(read_fixture("nccl/a3mega-2x8xh100-tcpxo.txt"));
  REQUIRE(right);
  const auto judged = gpuenv::nccl::judge_nccl_tests(*right, {"a3-megagpu-8g", 2, std::nullopt}, nccl_data());
  CHECK(judged.verdict == gpuenv::report::Verdict::ok);
  CHECK(require_finding(judged.findings, "nccl.results").status == Status::pass);
  const Finding& busbw = require_finding(judged.findings, "nccl.busbw");
  CHECK(busbw.status == Status::pass);
  // Judged at the largest size, the mean of out-of-place and in-place as nccl-tests averages a one-size run.
  CHECK(busbw.message.find("338.1 GB/s bus bandwidth at 8 GiB") != std::string::npos);
  CHECK(busbw.message.find("no floor for a3-megagpu-8g at 2 nodes") != std::string::npos);
  CHECK(require_finding(judged.findings, "nccl.ranks").message == "16 ranks on 2 nodes (ztan-mig-235z, ztan-mig-gq73)");

  auto wrong = parse_nccl_tests_output(read_fixture("nccl/a3mega-2x8xh100-wrong-derived.txt"));
  REQUIRE(wrong);
  const auto bad = gpuenv::nccl::judge_nccl_tests(*wrong, {}, nccl_data());
  CHECK(bad.verdict == gpuenv::report::Verdict::not_ok);
  const Finding& results = require_finding(bad.findings, "nccl.results");
  CHECK(results.status == Status::fail);
  CHECK(results.message.find("256 MiB out-of-place: 4096 wrong elements") != std::string::npos);

  const auto counted = gpuenv::nccl::judge_nccl_tests(*right, {"", 4, std::nullopt}, nccl_data());
  CHECK(require_finding(counted.findings, "nccl.ranks").status == Status::warn);

  // A verified floor (Azure ND H100 v5: 460 GB/s at 16 GiB, one node) on a synthetic one-size run at that size.
  gpuenv::nccl::NcclTestsOutput one;
  gpuenv::nccl::NcclTestsRow row;
  row.bytes = 17179869184ULL;
  row.out_of_place = {70000, 245.4, 429.5, 0};
  row.in_place = {70000, 245.4, 429.5, 0};
  one.rows = {row};
  one.out_of_bounds = 0;
  const auto slow = gpuenv::nccl::judge_nccl_tests(one, {"Standard_ND96isr_H100_v5", 1, std::nullopt}, nccl_data());
  const Finding& below = require_finding(slow.findings, "nccl.busbw");
  CHECK(below.status == Status::fail);
  CHECK(below.message.find("is below the floor 460.0 GB/s at 16 GiB") != std::string::npos);
  CHECK(below.source.find("conf/nd96isr_h100_v5.conf:52") != std::string::npos);
  one.rows[0].out_of_place.busbw_gbps = one.rows[0].in_place.busbw_gbps = 466.0;
  CHECK(require_finding(
            gpuenv::nccl::judge_nccl_tests(one, {"Standard_ND96isr_H100_v5", 1, std::nullopt}, nccl_data()).findings,
            "nccl.busbw")
            .status == Status::pass);
  // The floor's size missing from the run: reported, not judged.
  one.rows[0].bytes = 8589934592ULL;
  one.rows[0].out_of_place.busbw_gbps = one.rows[0].in_place.busbw_gbps = 100.0;
  const Finding& unjudged = require_finding(
      gpuenv::nccl::judge_nccl_tests(one, {"Standard_ND96isr_H100_v5", 1, std::nullopt}, nccl_data()).findings,
      "nccl.busbw");
  CHECK(unjudged.status == Status::pass);
  CHECK(unjudged.message.find("not judged: the run has no 16 GiB row") != std::string::npos);
  // An unverified multi-node row (AWS's advisory numbers) is reported beside the measurement, never judged.
  one.rows[0].bytes = 134217728ULL;
  const Finding& advisory = require_finding(
      gpuenv::nccl::judge_nccl_tests(one, {"p5.48xlarge", 2, std::nullopt}, nccl_data()).findings, "nccl.busbw");
  CHECK(advisory.status == Status::pass);
  CHECK(advisory.message.find("unverified: reported, not judged") != std::string::npos);
}

TEST_CASE("judge: a run that died part-way is not judged on the sizes it left", "[nccl]") {
  // nccl-tests prints "# Out of bounds values" only after its last size (NVIDIA/nccl-tests src/common.cu, the end of
  // run()); a rank that fails mid-run ends the job with the table cut short and NCCL's WARN lines.
  const std::string full = read_fixture("nccl/a3mega-2x8xh100-tcpxo.txt");
  const std::size_t footer = full.find("# Out of bounds values");
  REQUIRE(footer != std::string::npos);
  const std::string cut = full.substr(0, footer) +
                          "ztan-mig-gq73:1234:1300 [3] NCCL WARN NET/IB : Got completion with error 12, opcode 0\n";
  auto died = parse_nccl_tests_output(cut);
  REQUIRE(died);
  const auto judged = gpuenv::nccl::judge_nccl_tests(*died, {"a3-megagpu-8g", 2, std::nullopt}, nccl_data());
  const Finding& results = require_finding(judged.findings, "nccl.results");
  CHECK(results.status == Status::fail);
  CHECK(results.message.find("before nccl-tests' closing \"# Out of bounds values\" line") != std::string::npos);
  CHECK(results.message.find("NCCL WARN NET/IB : Got completion with error 12") != std::string::npos);
  CHECK(judged.verdict == gpuenv::report::Verdict::not_ok);
}

TEST_CASE("nccl data: floors and networks parse, every row sourced, judged rows are Azure's verified ones", "[nccl]") {
  CHECK(nccl_data().floors.size() >= 8);
  for (const auto& floor : nccl_data().floors) {
    INFO(floor.instance_type);
    CHECK_FALSE(floor.source.empty());
    CHECK(floor.busbw_gbps > 0);
    if (floor.judged) CHECK(floor.source.find("Azure/azurehpc-health-checks conf/") == 0);
  }
  CHECK(nccl_data().floor_for("Standard_ND96isr_H100_v5", 1)->busbw_gbps == 460.0);
  CHECK(nccl_data().floor_for("Standard_ND96isr_H100_v5", 2) == nullptr);
  CHECK(nccl_data().floor_for("p5.48xlarge", 16)->min_nodes == 2);
  // No FI_EFA_USE_DEVICE_RDMA: p3dn.24xlarge's EFA has no RDMA read, and libfabric aborts when it is 1 there
  // (ofiwg/libfabric @ a309bc2896765423e048d7d204a24f5332e211df prov/efa/src/rdm/efa_rdm_util.c,
  // efa_rdm_get_use_device_rdma: "FI_EFA_USE_DEVICE_RDMA=1 was set by user, but EFA device has no rdma-read
  // capability. Application will abort()"; unset, "default_val = hw_support" for API >= 1.18). aws/aws-ofi-nccl @
  // 2daf7d303aa139a03140aa530957d10521e4478d doc/efa-env-var.md:29-31: "Do not set for libfabric>=1.18.0 and
  // aws-ofi-nccl>=1.7.0".
  CHECK(nccl_data().network("efa")->env == std::vector<std::string>{"FI_PROVIDER=efa"});
  // aws-samples/awsome-distributed-training @ 0162aacd5da07d424e13f44bef8dd2c4cfcc66e4
  // micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml, the worker: "hugepages-2Mi: 5120Mi",
  // "memory: 32000Mi".
  CHECK(nccl_data().network("efa")->kubernetes_limits ==
        std::vector<std::string>{"hugepages-2Mi=5120Mi", "memory=32000Mi"});
  CHECK(nccl_data().network("no-such")->name == "default");
  CHECK(gpuenv::nccl::size_text(17179869184ULL) == "16 GiB");
  CHECK(gpuenv::nccl::size_text(8) == "8 B");
  CHECK(gpuenv::nccl::size_text(1000) == "1000 B");
}

namespace {

/// `text` with `label` before every line, as srun --label writes a task's output.
std::string labelled(const std::string& text, const std::string& label) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::size_t stop = end == std::string::npos ? text.size() : end + 1;
    out += label + text.substr(start, stop - start);
    start = stop;
  }
  return out;
}

}  // namespace

TEST_CASE("parse: srun --label pads task ids with blanks to the widest (\" 0: \", \"15: \") and labels het jobs",
          "[nccl]") {
  // SchedMD/slurm @ 284c3b95f08a2dc2478499837b03355e1b9c5c75 src/common/write_labelled_message.c:136-143
  // (_build_label): xstrfmtcat(buf, "%*d: ", task_id_width, task_id), and for a heterogeneous job's component
  // "P%u %*d: ". With 16 tasks the width is 2: " 0: " beside "15: ".
  const std::string plain = read_fixture("nccl/a3mega-2x8xh100-tcpxo.txt");
  auto expected = parse_nccl_tests_output(plain);
  REQUIRE(expected);
  for (const std::string label : {" 0: ", "P0  0: ", "  0: ", "00: "}) {
    INFO('"' << label << '"');
    const std::string text =
        labelled(plain, label) + "15: ztan-mig-gq73:2210:2290 [7] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n";
    auto output = parse_nccl_tests_output(text);
    REQUIRE(output);
    CHECK(output->ranks.size() == expected->ranks.size());
    CHECK(output->hosts() == expected->hosts());
    REQUIRE(output->rows.size() == expected->rows.size());
    CHECK(output->rows.back().out_of_place.busbw_gbps == Approx(338.82));
    CHECK(output->out_of_bounds == std::optional<long long>(0));
    CHECK(output->avg_busbw_gbps == std::optional<double>(70.742));
    CHECK(output->socket_transport);  // the "15: " line, stripped
  }
}

namespace {

/// What srun prints for two tasks of an all_reduce_perf built without MPI=1: each process is a 1-rank test that
/// calls itself rank 0, and a 1-rank all-reduce's bus bandwidth is 0 (busbw = algbw * 2*(n-1)/n, NVIDIA/nccl-tests
/// doc/PERFORMANCE.md "AllReduce"). The lines follow nccl-tests' format (src/common.cu "#  Rank %2d Group %2d Pid %6d
/// on %10s device %2d [0x%02x] %s").
std::string non_mpi_task(const std::string& label, const std::string& host) {
  return labelled(
      "# nccl-tests version 2.13.10 nccl-headers=21903 nccl-library=21903\n"
      "# Collective test starting: all_reduce_perf\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid  12345 on " +
          host +
          " device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
          "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
          "busbw #wrong\n"
          "     8388608       2097152     float     sum      -1    35.21  238.25    0.00      0    12.02  697.89    "
          "0.00      0\n"
          "    16777216       4194304     float     sum      -1    61.40  273.24    0.00      0    12.10  1386.5    "
          "0.00      0\n"
          "# Out of bounds values : 0 OK\n"
          "# Avg bus bandwidth    : 0 \n",
      label);
}

}  // namespace

TEST_CASE("judge: processes that never formed one communicator (nccl-tests without MPI=1) fail nccl.ranks", "[nccl]") {
  auto split = parse_nccl_tests_output(non_mpi_task("0: ", "node-a") + non_mpi_task("1: ", "node-b"));
  REQUIRE(split);
  REQUIRE(split->ranks.size() == 2);
  const auto judged = gpuenv::nccl::judge_nccl_tests(*split, {"p5.48xlarge", 2, 8}, nccl_data());
  const Finding& ranks = require_finding(judged.findings, "nccl.ranks");
  CHECK(ranks.status == Status::fail);
  CHECK(ranks.message.find("rank 0 is listed 2 times") != std::string::npos);
  CHECK(ranks.message.find("nccl-tests built without MPI=1?") != std::string::npos);
  CHECK(ranks.remedy.find("make MPI=1") != std::string::npos);
  CHECK(judged.verdict == gpuenv::report::Verdict::not_ok);

  // Distinct ranks, but no data moved at any size: no rank exchanged data with another.
  auto distinct = *split;
  distinct.ranks[1].rank = 1;
  const Finding& zero =
      require_finding(gpuenv::nccl::judge_nccl_tests(distinct, {}, nccl_data()).findings, "nccl.ranks");
  CHECK(zero.status == Status::fail);
  CHECK(zero.message.find("bus bandwidth is 0 at every size") != std::string::npos);

  // A latency sweep of small sizes only (all_reduce_perf -b 8 -e 64) prints busbw 0.00 on a healthy fabric: nccl-tests
  // prints GB/s with two decimals, and 64 B in 10 us is 0.006 GB/s. No evidence that nothing moved.
  auto latency = distinct;
  for (auto& row : latency.rows) row.bytes = 64;
  CHECK(require_finding(gpuenv::nccl::judge_nccl_tests(latency, {}, nccl_data()).findings, "nccl.ranks").status ==
        Status::pass);

  // One process, one rank: a 1-rank run's busbw is 0 by definition, not a fault.
  auto single = parse_nccl_tests_output(non_mpi_task("", "node-a"));
  REQUIRE(single);
  CHECK(require_finding(gpuenv::nccl::judge_nccl_tests(*single, {}, nccl_data()).findings, "nccl.ranks").status ==
        Status::pass);

  // Two complete runs in one log (a script running one test after another): the device list repeats beside real
  // bandwidth; a warning, not a failure.
  const std::string run = read_fixture("nccl/a3mega-2x8xh100-tcpxo.txt");
  auto twice = parse_nccl_tests_output(run + run);
  REQUIRE(twice);
  const Finding& repeated = require_finding(
      gpuenv::nccl::judge_nccl_tests(*twice, {"a3-megagpu-8g", 2, std::nullopt}, nccl_data()).findings, "nccl.ranks");
  CHECK(repeated.status == Status::warn);
  CHECK(repeated.message.find("16 distinct ranks") != std::string::npos);
}

TEST_CASE("judge: a rank count other than nodes x the instance type's GPUs warns", "[nccl]") {
  auto full = parse_nccl_tests_output(read_fixture("nccl/a3mega-2x8xh100-tcpxo.txt"));
  REQUIRE(full);
  CHECK(require_finding(gpuenv::nccl::judge_nccl_tests(*full, {"a3-megagpu-8g", 2, 8}, nccl_data()).findings,
                        "nccl.ranks")
            .status == Status::pass);
  auto part = *full;
  part.ranks.erase(part.ranks.begin() + 4, part.ranks.begin() + 8);  // node one ran 4 of its 8 GPUs
  const Finding& fewer = require_finding(
      gpuenv::nccl::judge_nccl_tests(part, {"a3-megagpu-8g", 2, 8}, nccl_data()).findings, "nccl.ranks");
  CHECK(fewer.status == Status::warn);
  CHECK(fewer.message.find("not the 16 of 2 nodes x 8 GPUs of a3-megagpu-8g") != std::string::npos);
  // Without the instance type's GPU count nothing is compared.
  CHECK(require_finding(gpuenv::nccl::judge_nccl_tests(part, {"", 2, std::nullopt}, nccl_data()).findings, "nccl.ranks")
            .status == Status::pass);
}

TEST_CASE("nccl data: an overlay network row with a control character in a field written into the job is refused",
          "[nccl]") {
  // name and source go into the Slurm script's comments: a newline there would start a shell line.
  for (const std::string field : {"source", "name", "kubernetes_resource"}) {
    INFO(field);
    std::string row =
        "[[network]]\nname = \"efa\"\nenv = []\nkubernetes_resource = \"\"\nstatus = \"policy\"\n"
        "source = \"local\"\n";
    const std::size_t at = row.find("\n" + field + " = \"") + field.size() + 5;
    row.insert(at, "x\\nrm -rf /tmp/x\\n");
    auto loaded = gpuenv::nccl::load_data({{"networks.toml", "/etc/gpuenv/data/networks.toml", row}});
    REQUIRE_FALSE(loaded);
    INFO(loaded.error().message);
    CHECK(loaded.error().message.find("`" + field + "` must not contain control characters") != std::string::npos);
    CHECK(loaded.error().message.find("networks.toml") != std::string::npos);
  }
  auto clean = gpuenv::nccl::load_data({{"networks.toml", "/etc/gpuenv/data/networks.toml",
                                         "[[network]]\nname = \"efa\"\nenv = []\nkubernetes_resource = \"\"\nstatus = "
                                         "\"policy\"\nsource = \"local\"\n"}});
  REQUIRE(clean);
  CHECK(clean->network("efa")->source == "local");
}
