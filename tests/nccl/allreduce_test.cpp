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
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

/// The sweep against the fakes configured as given, on `system` (its environment and files: the NCCL settings).
gpuenv::nccl::SweepReport run_on(gpuenv::testing::FakeSystem& system, const std::string& cuda, const std::string& nccl,
                                 const gpuenv::nccl::SweepOptions& options = small()) {
  const FakeCuda fake_cuda(cuda);
  const FakeNccl fake_nccl(nccl);
  gpuenv::nccl::testing::open_fake_libraries(system);
  auto report = gpuenv::nccl::run_allreduce_sweep(system, options);
  REQUIRE(report);
  return *report;
}

/// The same with no NCCL_* variable and no NCCL configuration file.
gpuenv::nccl::SweepReport run(const std::string& cuda, const std::string& nccl,
                              const gpuenv::nccl::SweepOptions& options = small()) {
  gpuenv::testing::FakeSystem system;
  return run_on(system, cuda, nccl, options);
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

// NCCL reads its settings from the environment and from its configuration files ("Environment variables can also be
// set statically in /etc/nccl.conf (for an administrator to set system-wide values) or in ${NCCL_CONF_FILE}",
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html; NVIDIA/nccl@5067397 src/misc/param.cc): the
// findings name the ones in effect, and a failure stays a failure whatever they are: /etc/nccl.conf and root's
// environment apply to every NCCL job on the node, and a dead GPU fails initialisation with any of them set.
TEST_CASE("all-reduce sweep: an initialisation failure fails whatever the settings, naming those that can break it",
          "[nccl]") {
  // "NCCL_SOCKET_IFNAME ... specifies which IP interfaces to use for communication" (env.html#nccl-socket-ifname):
  // even ncclCommInitAll's bootstrap needs one of them up ("Bootstrap : no socket interface found",
  // src/bootstrap.cc:126, ncclInvalidUsage).
  gpuenv::testing::FakeSystem from_env;
  from_env.env = {{"NCCL_SOCKET_IFNAME", "=ens9"}, {"PATH", "/usr/bin"}};
  const auto env_report = run_on(from_env, "device_count = 2\nfree_memory = 1073741824\n", "init_result = 5\n");
  const Finding& init = require_finding(env_report.findings, "nccl.allreduce");
  CHECK(init.status == Status::fail);
  CHECK(init.message ==
        "ncclCommInitAll failed: ncclInvalidUsage (5): invalid usage (run with NCCL_DEBUG=WARN for details); with "
        "NCCL_SOCKET_IFNAME==ens9 (environment: names the interfaces NCCL's bootstrap may use, even for one process: "
        "with none of them up, ncclCommInitAll fails (\"Bootstrap : no socket interface found\")) in effect");
  CHECK(init.remedy.find("rerun with NCCL_DEBUG=INFO") == 0);
  CHECK(init.remedy.find("rerun without it (unset NCCL_SOCKET_IFNAME in the environment) to tell the node's fault "
                         "from the setting's") != std::string::npos);
  CHECK(init.source.find("NCCL_SOCKET_IFNAME: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
                         "#nccl-socket-ifname") == 0);
  CHECK(env_report.verdict == gpuenv::report::Verdict::not_ok);
  CHECK(require_finding(env_report.findings, "nccl.library").message ==
        "NCCL 2.27.3 (" + std::string(GPUENV_FAKE_NCCL_LIBRARY) +
            "); NCCL settings in effect: NCCL_SOCKET_IFNAME==ens9 (environment)");

  // The same from /etc/nccl.conf (the documented example line, "NCCL_SOCKET_IFNAME==ens1f0"): the remedy names the
  // file, since NCCL adds its lines to the environment itself.
  gpuenv::testing::FakeSystem from_file;
  from_file.files["/etc/nccl.conf"] = "NCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME==ens1f0\n";
  const auto file_report = run_on(from_file, "device_count = 2\nfree_memory = 1073741824\n", "init_result = 5\n");
  const Finding& file_init = require_finding(file_report.findings, "nccl.allreduce");
  CHECK(file_init.status == Status::fail);
  CHECK(file_init.message.find("NCCL_SOCKET_IFNAME==ens1f0 (/etc/nccl.conf: names the interfaces") !=
        std::string::npos);
  CHECK(file_init.remedy.find("rerun without it (remove NCCL_SOCKET_IFNAME from /etc/nccl.conf)") != std::string::npos);
  CHECK(file_report.verdict == gpuenv::report::Verdict::not_ok);

  // A dead GPU (ncclUnhandledCudaError, 1) with the interface most clusters name, or with NCCL_ALGO/NCCL_PROTO set:
  // the node's fault, never excused by the setting.
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"NCCL_SOCKET_IFNAME", "eth0"}, {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}}) {
    gpuenv::testing::FakeSystem dead;
    dead.env = {{name, value}};
    const auto dead_report = run_on(dead, "device_count = 2\nfree_memory = 1073741824\n", "init_result = 1\n");
    const Finding& dead_init = require_finding(dead_report.findings, "nccl.allreduce");
    CHECK(dead_init.status == Status::fail);
    CHECK(dead_init.message.find(name + "=" + value + " (environment: ") != std::string::npos);
    CHECK(dead_report.verdict == gpuenv::report::Verdict::not_ok);
  }
  CHECK(require_finding(file_report.findings, "nccl.library")
            .message.find("NCCL settings in effect: NCCL_DEBUG=WARN (/etc/nccl.conf), NCCL_SOCKET_IFNAME==ens1f0 "
                          "(/etc/nccl.conf)") != std::string::npos);

  // A setting that cannot break initialisation leaves a failing one a failure, named beside it.
  gpuenv::testing::FakeSystem tuned;
  tuned.env = {{"NCCL_P2P_DISABLE", "1"}};
  const auto tuned_report = run_on(tuned, "device_count = 2\nfree_memory = 1073741824\n", "init_result = 2\n");
  const Finding& tuned_init = require_finding(tuned_report.findings, "nccl.allreduce");
  CHECK(tuned_init.status == Status::fail);
  CHECK(tuned_init.message ==
        "ncclCommInitAll failed: ncclSystemError (2): unhandled system error (run with NCCL_DEBUG=INFO for details); "
        "NCCL settings in effect: NCCL_P2P_DISABLE=1 (environment)");

  // A failure after initialisation (a collective) is the node's, whatever the settings.
  gpuenv::testing::FakeSystem collective;
  collective.env = {{"NCCL_SOCKET_IFNAME", "eth0"}};
  const auto collective_report =
      run_on(collective, "device_count = 2\nfree_memory = 1073741824\n", "allreduce_result = 1\n");
  CHECK(require_finding(collective_report.findings, "nccl.allreduce").status == Status::fail);

  // Nothing set: a failing initialisation fails, as before (and the messages are unchanged).
  const auto plain = run("device_count = 2\nfree_memory = 1073741824\n", "init_result = 5\n");
  CHECK(require_finding(plain.findings, "nccl.allreduce").status == Status::fail);
  CHECK(plain.settings.empty());
}

TEST_CASE("all-reduce sweep: the settings that can change the result are named in each finding", "[nccl]") {
  gpuenv::testing::FakeSystem system;
  // NCCL_P2P_DISABLE=1 "disable[s] direct GPU-to-GPU (P2P) communication" (env.html#nccl-p2p-disable); NCCL_IB_HCA
  // chooses InfiniBand adapters, which a single-node all-reduce does not use: reported in nccl.library only.
  system.env = {{"NCCL_IB_HCA", "mlx5_0"}, {"NCCL_P2P_DISABLE", "1"}, {"NCCL_VERSION", "2.16.2-1"}};
  const auto report = run_on(system, "device_count = 2\nfree_memory = 1073741824\nelapsed_ms = 2\n", "");
  CHECK(report.verdict == gpuenv::report::Verdict::ok);
  CHECK(require_finding(report.findings, "nccl.library").message ==
        "NCCL 2.27.3 (" + std::string(GPUENV_FAKE_NCCL_LIBRARY) +
            "); NCCL settings in effect: NCCL_IB_HCA=mlx5_0 (environment), NCCL_P2P_DISABLE=1 (environment)");
  CHECK(require_finding(report.findings, "nccl.allreduce").message ==
        "2 GPUs, 64 KiB to 256 KiB: every sum verified; NCCL settings in effect: NCCL_P2P_DISABLE=1 (environment)");
  const Finding& busbw = require_finding(report.findings, "nccl.busbw");
  CHECK(busbw.status == Status::pass);
  CHECK(busbw.message.find("no floor for this node (no instance type known); NCCL settings in effect: "
                           "NCCL_P2P_DISABLE=1 (environment)") != std::string::npos);
  REQUIRE(report.settings.size() == 2);  // NCCL_VERSION is the container image's package version, not NCCL's
  CHECK(report.settings[1].has(gpuenv::nccl::SettingEffect::lowers_bandwidth));
}

// NCCL loads its plugins into this root process ("NCCL_NET_PLUGIN ... will cause NCCL to look for the net plugin
// library", env.html#nccl-net-plugin), writes NCCL_DEBUG_FILE (env.html#nccl-debug-file), and reads NCCL_CONF_FILE
// (any path) or ~/.nccl.conf with ~ from HOME (NVIDIA/nccl@5067397 src/misc/param.cc:24): a user's file or a setting
// naming code or a file must not steer root, so NCCL never starts (the fake's ncclCommInitAll would fail: never
// reached) and nccl.allreduce is a skip naming it.
TEST_CASE("all-reduce sweep: an untrusted NCCL configuration file or a plugin or *_FILE setting skips it", "[nccl]") {
  const std::string cuda = "device_count = 2\nfree_memory = 1073741824\n";
  const std::string failing_init = "init_result = 5\n";

  gpuenv::testing::FakeSystem plugin;
  plugin.env = {{"NCCL_NET_PLUGIN", "aws-ofi"}, {"NCCL_DEBUG_FILE", "/tmp/nccl.%h.%p"}};
  const auto plugged = run_on(plugin, cuda, failing_init);
  CHECK(plugged.verdict == gpuenv::report::Verdict::ok);
  const std::string library = require_finding(plugged.findings, "nccl.library").message;
  CHECK(library.find("; NCCL_NET_PLUGIN=aws-ofi (environment: makes NCCL load that network plugin") !=
        std::string::npos);
  const Finding& skipped = require_finding(plugged.findings, "nccl.allreduce");
  CHECK(skipped.status == Status::skip);
  CHECK(skipped.message.find("the all-reduce did not run: NCCL_NET_PLUGIN=aws-ofi (environment: makes NCCL load") == 0);
  CHECK(skipped.message.find("NCCL_DEBUG_FILE=/tmp/nccl.%h.%p (environment: makes NCCL create or overwrite that "
                             "file)") != std::string::npos);
  CHECK(skipped.remedy.find("gpuenv will not let NCCL load code or write files named by settings it cannot trust") ==
        0);
  CHECK(plugged.sizes.empty());

  // The same from /etc/nccl.conf; "none" loads nothing and runs.
  gpuenv::testing::FakeSystem from_file;
  from_file.files["/etc/nccl.conf"] = "NCCL_TUNER_PLUGIN=/opt/tuner.so\n";
  CHECK(require_finding(run_on(from_file, cuda, failing_init).findings, "nccl.allreduce")
            .message.find("NCCL_TUNER_PLUGIN=/opt/tuner.so (/etc/nccl.conf: makes NCCL load") != std::string::npos);
  gpuenv::testing::FakeSystem none;
  none.env = {{"NCCL_NET_PLUGIN", "none"}};
  CHECK(require_finding(run_on(none, cuda, "").findings, "nccl.allreduce").status == Status::pass);

  // NCCL_CONF_FILE naming a file a user can change.
  gpuenv::testing::FakeSystem conf;
  conf.env = {{"NCCL_CONF_FILE", "/home/u/nccl.conf"}};
  conf.files["/home/u/nccl.conf"] = "NCCL_DEBUG=WARN\n";
  conf.untrusted["/home/u/nccl.conf"] = "/home/u is owned by uid 1000";
  const Finding& conf_skip = require_finding(run_on(conf, cuda, failing_init).findings, "nccl.allreduce");
  CHECK(conf_skip.status == Status::skip);
  CHECK(conf_skip.message ==
        "the all-reduce did not run: NCCL's configuration file /home/u/nccl.conf is not "
        "trusted: /home/u is owned by uid 1000");

  // HOME in a user's directory: ~/.nccl.conf is absent, but the user could create it before NCCL reads it.
  gpuenv::testing::FakeSystem home;
  home.env = {{"HOME", "/home/u"}};
  home.untrusted["/home/u"] = "/home/u is owned by uid 1000";
  const Finding& home_skip = require_finding(run_on(home, cuda, failing_init).findings, "nccl.allreduce");
  CHECK(home_skip.status == Status::skip);
  CHECK(home_skip.message.find("/home/u/.nccl.conf is not trusted") != std::string::npos);

  // Root's own HOME and /etc/nccl.conf, trusted: it runs (and fails on the fake's failing initialisation).
  gpuenv::testing::FakeSystem trusted;
  trusted.env = {{"HOME", "/root"}};
  trusted.files["/etc/nccl.conf"] = "NCCL_DEBUG=WARN\n";
  CHECK(require_finding(run_on(trusted, cuda, failing_init).findings, "nccl.allreduce").status == Status::fail);
}

TEST_CASE("all-reduce sweep: busbw below the floor fails whatever the settings, naming those that can lower it",
          "[nccl]") {
  auto data = gpuenv::nccl::builtin_data();
  REQUIRE(data);
  const gpuenv::nccl::Floor* floor = (*data)->floor_for("Standard_ND96isr_H100_v5", 1);
  REQUIRE(floor != nullptr);
  gpuenv::nccl::SweepReport report;
  report.ranks = 8;
  report.sizes = {{17179869184ULL, 0.065, 264, 420, true}};
  // The settings as the sweep reads them, through System: the environment, then /etc/nccl.conf.
  gpuenv::testing::FakeSystem system;
  system.env = {{"NCCL_P2P_DISABLE", "1"}};
  system.files["/etc/nccl.conf"] = "NCCL_ALGO=Tree\n";
  report.settings = gpuenv::nccl::read_nccl_settings(system, 22703);
  const Finding tuned = gpuenv::nccl::sweep_bandwidth_finding(report, floor, "Standard_ND96isr_H100_v5");
  CHECK(tuned.status == Status::fail);
  CHECK(tuned.message ==
        "all-reduce bus bandwidth over 8 GPUs (GB/s): 16 GiB 420.0; below the floor 460.0 GB/s at 16 GiB for "
        "Standard_ND96isr_H100_v5, with NCCL_P2P_DISABLE=1 (environment: disables the P2P transport (NVLink or PCIe "
        "directly between the GPUs)), NCCL_ALGO=Tree (/etc/nccl.conf: restricts the algorithms NCCL may choose) in "
        "effect");
  CHECK(tuned.remedy.find("check the NVLink fabric") == 0);
  CHECK(tuned.remedy.find("rerun without these settings (unset NCCL_P2P_DISABLE in the environment; remove NCCL_ALGO "
                          "from /etc/nccl.conf) to tell the node's fault from theirs") != std::string::npos);
  CHECK(tuned.source.find(floor->source) == 0);
  CHECK(tuned.source.find("NCCL_P2P_DISABLE: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
                          "#nccl-p2p-disable") != std::string::npos);

  // NCCL_P2P_DISABLE=0 disables nothing (NCCL disables P2P only when it reads 1, src/graph/paths.cc:250), and a
  // setting that can only break initialisation does not explain low bandwidth: both leave the failure a failure.
  report.settings = gpuenv::nccl::nccl_settings({{"NCCL_P2P_DISABLE", "0"}, {"NCCL_SOCKET_IFNAME", "eth0"}}, {});
  const Finding untuned = gpuenv::nccl::sweep_bandwidth_finding(report, floor, "Standard_ND96isr_H100_v5");
  CHECK(untuned.status == Status::fail);
  CHECK(untuned.message ==
        "all-reduce bus bandwidth over 8 GPUs (GB/s): 16 GiB 420.0; below the floor 460.0 GB/s at 16 GiB for "
        "Standard_ND96isr_H100_v5");

  // NCCL_ALGO=Ring on a node whose NVLink is degraded: still a failure.
  report.settings = gpuenv::nccl::nccl_settings({{"NCCL_ALGO", "Ring"}}, {});
  const Finding ring = gpuenv::nccl::sweep_bandwidth_finding(report, floor, "Standard_ND96isr_H100_v5");
  CHECK(ring.status == Status::fail);
  CHECK(ring.message.find("with NCCL_ALGO=Ring (environment: restricts the algorithms NCCL may choose) in effect") !=
        std::string::npos);

  // Nothing set: a failure, as before.
  report.settings.clear();
  CHECK(gpuenv::nccl::sweep_bandwidth_finding(report, floor, "Standard_ND96isr_H100_v5").status == Status::fail);

  // Above the floor with tuning: a pass that names it.
  report.settings = gpuenv::nccl::nccl_settings({{"NCCL_PROTO", "Simple"}}, {});
  report.sizes[0].busbw_gbps = 470;
  const Finding meets = gpuenv::nccl::sweep_bandwidth_finding(report, floor, "Standard_ND96isr_H100_v5");
  CHECK(meets.status == Status::pass);
  CHECK(meets.message.find("meets the floor 460.0 GB/s at 16 GiB for Standard_ND96isr_H100_v5; NCCL settings in "
                           "effect: NCCL_PROTO=Simple (environment)") != std::string::npos);
}

TEST_CASE("all-reduce sweep: NCCL_COMM_ID leaves the environment before NCCL reads it", "[nccl]") {
  // ncclCommInitAll -> ncclGetUniqueId -> bootstrapGetUniqueId takes NCCL_COMM_ID's address when it is set, and rank 0
  // starts the bootstrap root listening there (NVIDIA/nccl@5067397 src/init.cc:2625, src/bootstrap.cc:433,
  // src/init.cc:2533): another host's address cannot be listened on. NCCL reads it with getenv
  // (src/plugin/env/default_env.cc), so it must leave the process's real environment; the fake libnccl's
  // ncclCommInitAll fails, as NCCL would, when it still sees it (comm_id_env = 1).
  ::setenv("NCCL_COMM_ID", "10.11.12.13:29500", 1);
  const FakeCuda fake_cuda("device_count = 2\nfree_memory = 1073741824\n");
  const FakeNccl fake_nccl("comm_id_env = 1\n");
  auto real = gpuenv::system::make_real_system();
  auto report = gpuenv::nccl::run_allreduce_sweep(*real, small());
  const bool still_set = std::getenv("NCCL_COMM_ID") != nullptr;
  ::unsetenv("NCCL_COMM_ID");
  REQUIRE(report);
  CHECK_FALSE(still_set);
  CHECK(require_finding(report->findings, "nccl.allreduce").status == Status::pass);
  REQUIRE(report->unset.size() == 1);
  CHECK(report->unset[0].value == "10.11.12.13:29500");
  CHECK(require_finding(report->findings, "nccl.library")
            .message.find("; unset before NCCL started: NCCL_COMM_ID=10.11.12.13:29500 (environment), the rendezvous "
                          "address of a multi-process job, which this one-process communicator does not need and "
                          "NCCL would listen on") != std::string::npos);

  // Through the seam: FakeSystem's environment loses it too; one from /etc/nccl.conf cannot be taken out (NCCL adds
  // the file's lines itself), so it is a setting in effect that can break initialisation.
  gpuenv::testing::FakeSystem system;
  system.env = {{"NCCL_COMM_ID", "10.0.0.1:1234"}};
  system.files["/etc/nccl.conf"] = "NCCL_COMM_ID=10.0.0.2:1234\n";
  const auto seam = run_on(system, "device_count = 2\nfree_memory = 1073741824\n", "init_result = 4\n");
  CHECK_FALSE(system.env.contains("NCCL_COMM_ID"));
  REQUIRE(seam.settings.size() == 1);
  CHECK(seam.settings[0].origin == "/etc/nccl.conf");
  CHECK(seam.settings[0].value == "10.0.0.2:1234");
  CHECK(require_finding(seam.findings, "nccl.allreduce").status == Status::fail);
}
