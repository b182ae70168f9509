// The all-reduce sweep of `smoke --nccl` through the real dlopen path against the fake libnccl (tests/fake_nccl)
// and the fake libcuda (tests/fake_cuda): ranks, sizes, timing from the GPU's events, a wrong sum, NCCL's errors, a
// hang, no NCCL at all, and where a Python environment's NCCL is found.
// The contracts the fake keeps are NCCL's own (NVIDIA/nccl src/nccl.h.in): ncclCommInitAll(comms, ndev, devlist)
// makes one communicator per device in one process; "When managing multiple GPUs from a single thread, and since
// NCCL collective calls may perform inter-CPU synchronization, we need to "group" calls for different ranks/devices
// into a single call" (ncclGroupStart/ncclGroupEnd); ncclAllReduce with ncclSum leaves every rank the element-wise
// sum. Bus bandwidth is nccl-tests' (doc/PERFORMANCE.md: busbw = algbw * 2*(n-1)/n).

#include "nccl/allreduce.hpp"

#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <thread>

#include "nccl/fake_nccl_fixture.hpp"
#include "smoke/fake_cuda_fixture.hpp"
#include "support/fake_system.hpp"
#include "support/findings.hpp"

namespace {

using gpuenv::nccl::testing::FakeNccl;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::smoke::testing::FakeCuda;
using gpuenv::testing::require_finding;

gpuenv::nccl::SweepOptions small() {
  gpuenv::nccl::SweepOptions options;
  options.cuda_library = GPUENV_FAKE_CUDA_LIBRARY;
  options.nccl.library = GPUENV_FAKE_NCCL_LIBRARY;
  options.sizes = {64 * 1024, 256 * 1024};
  options.iterations = 5;
  options.timeout = std::chrono::seconds(20);
  return options;
}

gpuenv::nccl::SweepReport run(const std::string& cuda, const std::string& nccl,
                              gpuenv::nccl::SweepOptions options = small()) {
  const FakeCuda fake_cuda(cuda);
  const FakeNccl fake_nccl(nccl);
  auto real = gpuenv::system::make_real_system();
  auto report = gpuenv::nccl::run_allreduce_sweep(*real, options);
  REQUIRE(report);
  return *report;
}

/// A counter the fake libnccl exports; the library stays loaded for the process.
unsigned long long fake_nccl(const char* name, unsigned long long argument = 0) {
  static void* const library = ::dlopen(GPUENV_FAKE_NCCL_LIBRARY, RTLD_NOW);
  REQUIRE(library != nullptr);
  auto function = reinterpret_cast<unsigned long long (*)(unsigned long long)>(::dlsym(library, name));
  REQUIRE(function != nullptr);
  return function(argument);
}

}  // namespace

TEST_CASE("all-reduce sweep: four GPUs, every sum verified, bus bandwidth from the events", "[nccl]") {
  const auto before = fake_nccl("fake_nccl_allreduce_count");
  // Every event interval reads 2 ms: 5 all-reduces per size -> 0.4 ms each.
  const auto report = run("device_count = 4\nfree_memory = 1073741824\nelapsed_ms = 2\n", "version = 22703\n");
  CHECK(report.verdict == gpuenv::report::Verdict::ok);
  CHECK(report.nccl_version == "2.27.3");
  CHECK(report.ranks == 4);
  REQUIRE(report.sizes.size() == 2);
  CHECK(report.sizes[0].bytes == 64 * 1024);
  CHECK(report.sizes[0].seconds == Approx(0.0004));
  CHECK(report.sizes[0].algbw_gbps == Approx(65536 / 1e9 / 0.0004));
  CHECK(report.sizes[1].busbw_gbps == Approx(262144 / 1e9 / 0.0004 * 1.5));  // 2(n-1)/n for n = 4
  CHECK(report.sizes[1].verified);
  CHECK(require_finding(report.findings, "nccl.library").message ==
        "NCCL 2.27.3 (" + std::string(GPUENV_FAKE_NCCL_LIBRARY) + ")");
  CHECK(require_finding(report.findings, "nccl.allreduce").message == "4 GPUs, 64 KiB to 256 KiB: every sum verified");
  const Finding& busbw = require_finding(report.findings, "nccl.busbw");
  CHECK(busbw.status == Status::pass);
  CHECK(busbw.message.find("no floor for this node") != std::string::npos);
  // Warm-up 2 + timed 5 per size, each size's all-reduces at that size.
  const auto after = fake_nccl("fake_nccl_allreduce_count");
  REQUIRE(after - before == 14);
  CHECK(fake_nccl("fake_nccl_allreduce_bytes", before) == 64 * 1024);
  CHECK(fake_nccl("fake_nccl_allreduce_bytes", after - 1) == 256 * 1024);
}

TEST_CASE("all-reduce sweep: a wrong sum on one rank fails and names it", "[nccl]") {
  const auto report = run("device_count = 4\nfree_memory = 1073741824\n", "wrong_rank = 2\nwrong_element = 5\n");
  CHECK(report.verdict == gpuenv::report::Verdict::not_ok);
  const Finding& wrong = require_finding(report.findings, "nccl.allreduce");
  CHECK(wrong.status == Status::fail);
  CHECK(
      wrong.message.find("wrong sum after the all-reduce of 64 KiB over 4 GPUs: rank 2 element 5: 11 instead of 10") !=
      std::string::npos);
}

TEST_CASE("all-reduce sweep: NCCL's errors, one GPU, no room, no NCCL", "[nccl]") {
  const auto init = run("device_count = 2\nfree_memory = 1073741824\n", "init_result = 2\n");
  CHECK(require_finding(init.findings, "nccl.allreduce").message ==
        "ncclCommInitAll failed: ncclSystemError (2): unhandled system error (run with NCCL_DEBUG=INFO for details)");
  const auto collective = run("device_count = 2\nfree_memory = 1073741824\n", "allreduce_result = 1\n");
  CHECK(require_finding(collective.findings, "nccl.allreduce")
            .message.find("ncclAllReduce failed: ncclUnhandledCudaError (1)") == 0);
  const auto aborted_before = fake_nccl("fake_nccl_aborted_comms");
  const auto async = run("device_count = 2\nfree_memory = 1073741824\n", "async_error = 6\n");
  CHECK(require_finding(async.findings, "nccl.allreduce").message.find("asynchronous error") != std::string::npos);
  // Both communicators aborted, not destroyed: ncclCommDestroy waits for operations an error left in flight.
  CHECK(fake_nccl("fake_nccl_aborted_comms") - aborted_before == 2);
  // A collective an error stalls never completes its stream: the wait polls ncclCommGetAsyncError and ends with
  // NCCL's error at once, not as a hang at the sweep's limit (NCCL user guide, "Error handling and communicator
  // abort"). A blocking cuStreamSynchronize here would wait the whole 30 s stall.
  auto quick_limit = small();
  quick_limit.timeout = std::chrono::seconds(10);
  const auto stalled =
      run("device_count = 2\nfree_memory = 1073741824\nstream_stall_seconds = 30\n", "async_error = 6\n", quick_limit);
  CHECK(require_finding(stalled.findings, "nccl.allreduce").message.find("asynchronous error") != std::string::npos);
  CHECK_FALSE(stalled.abandoned_work);
  const auto one = run("device_count = 1\nfree_memory = 1073741824\n", "");
  CHECK(require_finding(one.findings, "nccl.allreduce").status == Status::skip);
  CHECK(one.verdict == gpuenv::report::Verdict::ok);
  const auto full = run("device_count = 2\nfree_memory = 65536\n", "");  // 2 x 64 KiB > 90% of 64 KiB
  CHECK(require_finding(full.findings, "nccl.allreduce").message.find("no size of the sweep fits") == 0);

  auto options = small();
  options.nccl.library = "/nonexistent/libnccl.so.2";
  const auto none = run("device_count = 2\n", "", options);
  const Finding& library = require_finding(none.findings, "nccl.library");
  CHECK(library.status == Status::skip);
  CHECK(library.remedy.find("libnccl2") != std::string::npos);
  CHECK(none.verdict == gpuenv::report::Verdict::ok);
}

TEST_CASE("all-reduce sweep: a collective that hangs is reported at the limit", "[nccl][system-test]") {
  auto options = small();
  options.timeout = std::chrono::milliseconds(500);
  const auto report = run("device_count = 2\nfree_memory = 1073741824\n", "hang_seconds = 2\n", options);
  CHECK(report.abandoned_work);
  const Finding& hang = require_finding(report.findings, "nccl.allreduce");
  CHECK(hang.status == Status::fail);
  CHECK(hang.message.find("hang: the NCCL all-reduce did not finish within 0.5 s") == 0);
  // Let the abandoned thread leave the fake before the process ends.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
}

TEST_CASE("all-reduce sweep: the floor of the instance type at its own size", "[nccl]") {
  auto data = gpuenv::nccl::builtin_data();
  REQUIRE(data);
  const gpuenv::nccl::Floor* floor = (*data)->floor_for("Standard_ND96isr_H100_v5", 1);
  REQUIRE(floor != nullptr);
  gpuenv::nccl::SweepReport report;
  report.ranks = 8;
  report.sizes = {{1ULL << 30, 0.004, 268, 469, true}, {17179869184ULL, 0.065, 264, 462.5, true}};
  CHECK(gpuenv::nccl::sweep_bandwidth_finding(report, floor, "Standard_ND96isr_H100_v5").status == Status::pass);
  report.sizes[1].busbw_gbps = 420;
  const Finding below = gpuenv::nccl::sweep_bandwidth_finding(report, floor, "Standard_ND96isr_H100_v5");
  CHECK(below.status == Status::fail);
  CHECK(below.message.find("below the floor 460.0 GB/s at 16 GiB") != std::string::npos);
  report.sizes.pop_back();  // 16 GiB did not fit
  const Finding missing = gpuenv::nccl::sweep_bandwidth_finding(report, floor, "Standard_ND96isr_H100_v5");
  CHECK(missing.status == Status::pass);
  CHECK(missing.message.find("not judged: that size did not fit") != std::string::npos);
  // On the fakes: the floor's 16 GiB does not fit 1 GiB of free memory, so it is reported, not judged.
  auto options = small();
  options.instance_type = "Standard_ND96isr_H100_v5";
  const auto swept = run("device_count = 8\nfree_memory = 1073741824\n", "", options);
  std::string said;
  for (const Finding& f : swept.findings) said += f.id + ": " + f.message + "\n";
  INFO(said);
  CHECK(require_finding(swept.findings, "nccl.busbw").message.find("not judged: that size did not fit") !=
        std::string::npos);
}

TEST_CASE("nccl_candidates: the node's soname, a named library, a Python environment's wheel", "[nccl]") {
  gpuenv::testing::FakeSystem system;
  CHECK(*gpuenv::nccl::nccl_candidates(system, {}) == std::vector<std::string>{"libnccl.so.2"});
  CHECK(*gpuenv::nccl::nccl_candidates(system, {"/opt/nccl/lib/libnccl.so.2", std::nullopt}) ==
        std::vector<std::string>{"/opt/nccl/lib/libnccl.so.2"});
  const std::string key =
      "/venv/bin/python -I -c import importlib.util\ns = importlib.util.find_spec('nvidia.nccl')\nprint(list(s."
      "submodule_search_locations)[0] if s and s.submodule_search_locations else '')\n";
  system.commands[key] = {0, false, false, "/venv/lib/python3.11/site-packages/nvidia/nccl\n", ""};
  auto wheel = gpuenv::nccl::nccl_candidates(system, {"", std::string("/venv/bin/python")});
  REQUIRE(wheel);
  CHECK(*wheel == std::vector<std::string>{"/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2"});
  system.commands[key] = {0, false, false, "\n", ""};
  auto none = gpuenv::nccl::nccl_candidates(system, {"", std::string("/venv/bin/python")});
  REQUIRE_FALSE(none);
  CHECK(none.error().message.find("no nvidia-nccl wheel") != std::string::npos);
  auto missing = gpuenv::nccl::nccl_candidates(system, {"", std::string("/no/python")});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("no such interpreter") != std::string::npos);
}

TEST_CASE("nccl_candidates: a wheel someone other than root can change is never loaded", "[nccl]") {
  gpuenv::testing::FakeSystem system;
  const std::string key =
      "/home/u/venv/bin/python -I -c import importlib.util\ns = importlib.util.find_spec('nvidia.nccl')\nprint(list("
      "s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')\n";
  system.commands[key] = {0, false, false, "/home/u/venv/lib/python3.11/site-packages/nvidia/nccl\n", ""};
  const std::string library = "/home/u/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2";
  REQUIRE(gpuenv::nccl::nccl_candidates(system, {"", std::string("/home/u/venv/bin/python")}));
  system.untrusted[library] = "/home/u is owned by uid 1000";
  auto refused = gpuenv::nccl::nccl_candidates(system, {"", std::string("/home/u/venv/bin/python")});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("not trusted: /home/u is owned by uid 1000") != std::string::npos);
  CHECK(refused.error().remedy.find("GPUENV_NCCL_LIBRARY") != std::string::npos);
}
