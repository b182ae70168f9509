// Smoke verdicts that must hold on real fleets (issue 11): abandoned steps own their data, the process leaves
// cleanly after a hang, sticky errors and context failures are told apart, model names match whole, quick runs are
// not judged against large-problem floors, PCIe is judged against what the slot supports, peer floors follow the
// board, Xids during cuInit are reported, work is ordered on the step's stream and nothing leaks.

#include <sched.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "smoke/fake_cuda_fixture.hpp"
#include "smoke/internal/host_link.hpp"
#include "smoke/internal/kernel_images.hpp"
#include "smoke/internal/step.hpp"
#include "smoke/smoke.hpp"
#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/skip.hpp"

using namespace gpuenv::smoke;
using namespace gpuenv::smoke::testing;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::report::Verdict;

TEST_CASE("smoke: a GEMM abandoned at its deadline still owns what it reads after run_smoke returned",
          "[smoke][deadline][system-test]") {
  // The launch hangs 3 s, the deadline is 1.5 s: run_smoke returns and its data is gone while the abandoned thread
  // still has the GEMM to finish and judge. Under ASan (the asan preset) a reference into run_smoke's frame is a
  // heap-use-after-free here. (A 300 ms deadline was missed by the copies themselves on a loaded machine.)
  SmokeOptions options = small_options();
  options.step_timeout = std::chrono::milliseconds(1500);
  options.cublas = false;
  options.repetitions = 1;
  {
    // The SIMT GEMM's launches hang (the fill kernels before them do not), then the judgement reads the expectations.
    const SmokeReport report = run_fake("launch_hang_seconds = 3\nlaunch_hang_kernel = smoke_sgemm\n", options);
    REQUIRE(report.devices.size() == 1);
    CHECK(report.devices[0].hung);
    CHECK(report.abandoned_work);
    CHECK(find(report.devices[0].findings, "smoke.sgemm_fp32")->message.find("hang:") == 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(6000));  // the abandoned GEMM finishes inside this test
}

TEST_CASE("smoke: GPUs that hang in a peer copy are reported hung, not only their pair's finding",
          "[smoke][deadline][system-test]") {
  SmokeOptions options = small_options();
  options.step_timeout = std::chrono::milliseconds(1500);
  options.cublas = false;
  {
    const SmokeReport report = run_fake("device_count = 2\npeer_hang_seconds = 4\n", options);
    REQUIRE(report.devices.size() == 2);
    CHECK(report.devices[0].hung);
    CHECK(report.devices[1].hung);
    CHECK(report.abandoned_work);
    REQUIRE_FALSE(report.peer_findings.empty());
    CHECK(report.peer_findings[0].message.find("GPU 0 -> GPU 1: hang:") == 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));  // the abandoned copy finishes inside this test
}

// The release of a GPU's context runs as a step with its deadline too: when it misses it, its thread is still inside
// the driver, so the GPU counts as hung (its handles are left to that thread) and the process must leave with _Exit.
TEST_CASE("smoke: a context release that misses its deadline leaves the run's work abandoned",
          "[smoke][deadline][system-test]") {
  SmokeOptions options = small_options();
  options.step_timeout = std::chrono::milliseconds(1500);
  options.cublas = false;
  {
    const SmokeReport report = run_fake("ctx_release_hang_seconds = 3\n", options);
    REQUIRE(report.devices.size() == 1);
    CHECK(report.abandoned_work);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));  // the abandoned release finishes inside this test
}

TEST_CASE("gpuenv smoke e2e: after a hang the process leaves at once with its exit code, output flushed",
          "[smoke][deadline][e2e][system-test]") {
  // The fake's teardown at exit waits for the hung launch (120 s), as libcuda's may: only _Exit avoids it. The 3 s
  // deadline leaves the copies before the first launch time to finish on a busy machine, and the 60 s bound leaves
  // an ASan binary on a loaded machine time to start, while a process that waited for the teardown would take 120 s.
  const FakeCuda fake("launch_hang_seconds = 120\nexit_waits_for_hang = 1\nemulate_kernels = 0\n");
  const auto begin = std::chrono::steady_clock::now();
  const auto result = gpuenv::testing::run_gpuenv(
      {"smoke", "--quick", "--json", "--no-cublas", "--no-peer", "--timeout", "3", "--repetitions", "1"},
      {{"GPUENV_CUDA_LIBRARY", std::string(GPUENV_FAKE_CUDA_LIBRARY)}, {"GPUENV_FAKE_CUDA", fake.path()}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  CHECK(result.exit_code == 1);
  CHECK(seconds < 60);
  CHECK(result.out.find("hang: the step did not finish within 3 s") != std::string::npos);
  CHECK(result.out.find("\"hung\": true") != std::string::npos);
  CHECK(result.out.find("\"verdict\": \"NOT OK\"") != std::string::npos);
}

TEST_CASE("smoke: sticky errors include assert, hardware faults and NVLink, only cuCtxSetCurrent stops a GPU",
          "[smoke]") {
  for (const CUresult sticky : {214, 220, 226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 911, 999}) {
    CAPTURE(sticky);
    CHECK(is_sticky(sticky));
  }
  for (const CUresult recoverable : {1, 2, 3, 200, 209, 217, 704}) {
    CAPTURE(recoverable);
    CHECK_FALSE(is_sticky(recoverable));
  }
  CHECK(stops_gpu(CudaFailure{"cuCtxSetCurrent", 201}));
  CHECK_FALSE(stops_gpu(CudaFailure{"cuCtxEnablePeerAccess", 217}));
  CHECK(stops_gpu(CudaFailure{"cuCtxEnablePeerAccess", 719}));
}

TEST_CASE("smoke: a failed cuCtxEnablePeerAccess fails that pair only and every context is released", "[smoke]") {
  const int contexts = fake_counter("fake_cuda_live_contexts");
  const SmokeReport report = run_fake("device_count = 2\npeer_enable_result = 217\n");
  REQUIRE(report.peer_findings.size() == 2);  // the second pair still ran: GPU 1 was not stopped by the first
  for (const Finding& finding : report.peer_findings) {
    CHECK(finding.status == Status::fail);
    CHECK(finding.message.find("cuCtxEnablePeerAccess failed") != std::string::npos);
  }
  CHECK(fake_counter("fake_cuda_live_contexts") == contexts);
}

TEST_CASE("smoke: a GPU stopped by a sticky error still releases its context and buffers", "[smoke]") {
  const int contexts = fake_counter("fake_cuda_live_contexts");
  const int allocations = fake_counter("fake_cuda_live_allocations");
  // The SIMT GEMM's launch fails (the fill kernels before it, which launch_result would fail too, do not).
  const SmokeReport report = run_fake("fault_kernel_gpu0 = smoke_sgemm\nfault_result = 719\n");
  CHECK(find(report.devices.at(0).findings, "smoke.sgemm_fp32")->status == Status::fail);
  CHECK(fake_counter("fake_cuda_live_contexts") == contexts);
  CHECK(fake_counter("fake_cuda_live_allocations") == allocations);
}

TEST_CASE("smoke: a copy-buffer step that fails half way frees what it had allocated", "[smoke]") {
  const int allocations = fake_counter("fake_cuda_live_allocations");
  const SmokeReport report = run_fake("alloc_result = 2\nalloc_fail_after = 1\n");
  CHECK(find(report.devices.at(0).findings, "smoke.copy_buffers")->status == Status::fail);
  CHECK(fake_counter("fake_cuda_live_allocations") == allocations);
}

TEST_CASE("smoke: uploads, the NaN pre-fill and the D2D clear are ordered on the step's stream", "[smoke]") {
  // legacy_async: legacy-stream memsets and pageable uploads land after the non-blocking stream's work, as they may
  // on a GPU. On the step's stream they are ordered, so every copy and matmul verifies.
  const SmokeReport report = run_fake("legacy_async = 1\nelapsed_ms = 0.001\n");
  const auto& findings = report.devices.at(0).findings;
  for (const char* id : {"smoke.h2d_pinned", "smoke.d2h_pinned", "smoke.h2d_pageable", "smoke.d2h_pageable",
                         "smoke.d2d", "smoke.sgemm_fp32", "smoke.gemm_bf16", "smoke.cublas_sgemm_fp32"}) {
    CAPTURE(id);
    REQUIRE(find(findings, id) != nullptr);
    CHECK(find(findings, id)->message.find("verified") != std::string::npos);
  }
  SmokeOptions options = small_options();
  options.memtest_fraction = 0.5;
  const SmokeReport memtest = run_fake("legacy_async = 1\nfree_memory = 4194304\nmemtest_flip_word = 7\n", options);
  CHECK(find(memtest.devices.at(0).findings, "smoke.memtest")->status == Status::fail);  // counters reset in order
}

TEST_CASE("smoke: model names match whole, with aliases, MIG instances are not judged as whole GPUs",
          "[smoke][system-test]") {
  auto shipped = shipped_expectations();
  REQUIRE(shipped);
  CHECK(find_gpu(*shipped, "NVIDIA T400") == nullptr);
  CHECK(find_gpu(*shipped, "NVIDIA T400 4GB") == nullptr);
  CHECK(find_gpu(*shipped, "NVIDIA GH200 480GB") == nullptr);
  CHECK(find_gpu(*shipped, "NVIDIA GB200") == nullptr);
  CHECK(find_gpu(*shipped, "NVIDIA L40S")->model == "L40S");
  CHECK(find_gpu(*shipped, "NVIDIA L40")->model == "L40");
  CHECK(find_gpu(*shipped, "NVIDIA L4")->model == "L4");
  CHECK(find_gpu(*shipped, "NVIDIA  T4")->model == "T4");
  CHECK(find_gpu(*shipped, "Tesla T4")->model == "T4");
  CHECK(find_gpu(*shipped, "NVIDIA H200")->model == "H200 SXM");
  CHECK(find_gpu(*shipped, "NVIDIA B200")->model == "B200");
  CHECK(find_gpu(*shipped, "Tesla V100-SXM2-32GB")->model == "V100 SXM2");
  CHECK(find_gpu(*shipped, "NVIDIA H100 80GB HBM3 MIG 1g.10gb")->model == "H100 SXM");

  // A 1g.10gb slice is far slower than the whole H100: numbers, verified, but no whole-GPU floor fails it.
  const SmokeReport mig = run_fake("name = NVIDIA H100 80GB HBM3 MIG 1g.10gb\nelapsed_ms = 0.01\n");
  const DeviceResult& slice = mig.devices.at(0);
  CHECK(slice.info.mig_profile == "1g.10gb");
  REQUIRE(find(slice.findings, "smoke.mig") != nullptr);
  CHECK(find(slice.findings, "smoke.mig")->message.find("MIG instance 1g.10gb of H100 SXM") != std::string::npos);
  for (const char* id : {"smoke.h2d_pinned", "smoke.d2d", "smoke.cublas_sgemm_fp32"}) {
    CAPTURE(id);
    CHECK(find(slice.findings, id)->status == Status::skip);
  }
  // No NVML here to count the GPU's instances: one slice never vouches for the whole GPU (issue 23 item 5), so the
  // run is DEGRADED, not OK; with CUDA_VISIBLE_DEVICES naming the instance (a container's slice) what was asked for
  // was tested.
  CHECK(find(slice.findings, "smoke.mig")->status == Status::warn);
  CHECK(find(slice.findings, "smoke.mig")->message.find("NVML could not list this GPU's instances") !=
        std::string::npos);
  CHECK(mig.verdict == Verdict::degraded);

  // Slices of an 8-GPU H100 board copying to each other: no whole-GPU NVLink floor (335 GB/s) fails them, and no
  // "NVLink model without peer access" either.
  for (const char* peer_access : {"1", "0"}) {
    CAPTURE(peer_access);
    const SmokeReport slices = run_fake(std::string("name = NVIDIA H100 80GB HBM3 MIG 1g.10gb\ndevice_count = 8\n"
                                                    "elapsed_ms = 0.01\npeer_access = ") +
                                        peer_access + "\n");
    REQUIRE(slices.peer_findings.size() == 56);
    for (const Finding& finding : slices.peer_findings) CHECK(finding.status == Status::skip);
    for (const Finding& finding : slices.bidirectional_findings) CHECK(finding.status == Status::skip);
  }

  // A T400 is an unknown model: numbers only, not a failing T4.
  const SmokeReport t400 = run_fake("name = NVIDIA T400 4GB\ncc_major = 7\ncc_minor = 5\nelapsed_ms = 0.01\n");
  CHECK(t400.devices.at(0).info.expectation_model.empty());
  CHECK(find(t400.devices.at(0).findings, "smoke.d2d")->status == Status::skip);
}

TEST_CASE("smoke: --quick matmuls are verified but not judged against the large-problem floors", "[smoke]") {
  SmokeOptions options = small_options();
  options.sgemm_floor_size = 4096;  // the defaults
  options.tensor_floor_size = 8192;
  const SmokeReport report = run_fake("elapsed_ms = 0.001\n", options);
  const Finding* cublas = find(report.devices.at(0).findings, "smoke.cublas_sgemm_fp32");
  REQUIRE(cublas != nullptr);
  CHECK(cublas->status == Status::skip);  // 4.2 TFLOP/s would fail DCGM's H100 floor of 27.8
  CHECK(cublas->message.find("not judged at 128^3: the floors hold for 4096^3 and larger") != std::string::npos);
  CHECK(find(report.devices.at(0).findings, "smoke.gemm_bf16")->status == Status::skip);
  CHECK(find(report.devices.at(0).findings, "smoke.gemm_bf16")->message.find("8192^3") != std::string::npos);
  CHECK(SmokeOptions{}.sgemm_floor_size == 4096);
}

namespace {

/// A sysfs tree as the kernel lays it out: bus/pci/devices/<bdf> links to devices/pci0000:00/<bridge>/<bdf>.
class LinkSysfsTree {
 public:
  LinkSysfsTree(const std::string& gpu_current, const std::string& gpu_max, const std::string& bridge_max) {
    namespace fs = std::filesystem;
    m_root = fs::temp_directory_path() / ("gpuenv-sysfs-" + std::to_string(::getpid()) + "-" +
                                          std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    const fs::path bridge = m_root / "devices/pci0000:00/0000:00:01.0";
    const fs::path gpu = bridge / "0000:1b:00.0";
    fs::create_directories(gpu);
    fs::create_directories(m_root / "bus/pci/devices");
    fs::create_directory_symlink("../../../devices/pci0000:00/0000:00:01.0/0000:1b:00.0",
                                 m_root / "bus/pci/devices/0000:1b:00.0");
    auto link = [](const fs::path& dir, const std::string& prefix, const std::string& spec) {
      const auto x = spec.find('x');  // "32.0 GT/s PCIe x16"
      std::ofstream(dir / (prefix + "_link_speed")) << spec.substr(0, x - 1) << "\n";
      std::ofstream(dir / (prefix + "_link_width")) << spec.substr(x + 1) << "\n";
    };
    link(gpu, "current", gpu_current);
    link(gpu, "max", gpu_max);
    if (!bridge_max.empty()) link(bridge, "max", bridge_max);
  }
  ~LinkSysfsTree() {
    std::error_code ignored;
    std::filesystem::remove_all(m_root, ignored);
  }
  std::string root() const { return m_root.string(); }

 private:
  std::filesystem::path m_root;
};

}  // namespace

TEST_CASE("smoke: pinned H2D is judged against min(GPU max, upstream port max), not the link it trained to",
          "[smoke]") {
  SmokeOptions options = small_options();
  // A Gen5 x16 GPU under a Gen5 x16 port that trained to Gen3 x8: 4 MiB in 0.625 ms = 6.7 GB/s (8 queued copies in
  // 5 ms, slept by the fake's event_sleep so that the link is read while they are in flight). Against its current
  // link (Gen3 x8: 6.3 GB/s expected) it would pass; against the slot's Gen5 x16 it fails Azure's 48 GB/s floor.
  const LinkSysfsTree degraded("8.0 GT/s PCIe x8", "32.0 GT/s PCIe x16", "32.0 GT/s PCIe x16");
  options.sysfs_root = degraded.root();
  options.copy_bytes = 4 * mib;
  const SmokeReport report = run_fake("elapsed_ms = 5\nevent_sleep = 1\n", options);
  const DeviceResult& gpu = report.devices.at(0);
  CHECK(gpu.info.pcie_generation == 3);
  CHECK(gpu.info.pcie_upstream_max_generation == 5);
  const Finding* h2d = find(gpu.findings, "smoke.h2d_pinned");
  REQUIRE(h2d != nullptr);
  CHECK(h2d->status == Status::fail);
  CHECK(h2d->source.find("PCIe Gen5 x16 theoretical") == 0);
  CHECK(h2d->source.find("GPU max Gen5 x16, upstream port max Gen5 x16") != std::string::npos);
  const Finding* link = find(gpu.findings, "smoke.pcie_link");
  REQUIRE(link != nullptr);
  CHECK(link->status == Status::warn);
  CHECK(link->message.find("PCIe link ran Gen3 x8 while the pinned copies ran (") == 0);
  CHECK(link->message.find("readings, the fastest counted), but the GPU and its upstream port support Gen5 x16") !=
        std::string::npos);

  // A Gen5 GPU in a Gen4 slot, running Gen4 x16 at 26 GB/s: healthy for that slot, no link warning.
  const LinkSysfsTree gen4_slot("16.0 GT/s PCIe x16", "32.0 GT/s PCIe x16", "16.0 GT/s PCIe x16");
  options.sysfs_root = gen4_slot.root();
  options.copy_bytes = small_options().copy_bytes;
  const SmokeReport slot = run_fake("elapsed_ms = 0.0025\n", options);
  CHECK(find(slot.devices.at(0).findings, "smoke.h2d_pinned")->status == Status::pass);
  CHECK(find(slot.devices.at(0).findings, "smoke.h2d_pinned")->source.find("PCIe Gen4 x16") == 0);
  CHECK(find(slot.devices.at(0).findings, "smoke.pcie_link") == nullptr);
}

TEST_CASE("smoke: the NVLink peer floor applies on the board it was measured on and says so elsewhere",
          "[smoke][system-test]") {
  // A 4-GPU HGX H100 board: 6 NVLinks per pair, slower than the 8-GPU NVSwitch floor and healthy.
  const SmokeReport four = run_fake("device_count = 4\nelapsed_ms = 0.001\n");
  REQUIRE(four.peer_findings.size() == 12);
  for (const Finding& finding : four.peer_findings) {
    CHECK(finding.status != Status::fail);
    CHECK(finding.message.find("no floor: H100 SXM's 335 GB/s floor is for 8-GPU NVSwitch boards and the driver "
                               "reports 4 GPUs") != std::string::npos);
  }
  // NVLink parts without peer access still fail on any board.
  const SmokeReport no_peer = run_fake("device_count = 4\nelapsed_ms = 0.001\npeer_access = 0\n");
  CHECK(no_peer.peer_findings.at(0).status == Status::fail);
}

TEST_CASE("smoke: cuInit failures name their cause, and Xids raised during cuInit are reported", "[smoke]") {
  const SmokeReport fabric = run_fake("init_result = 802\n");
  const Finding* driver = find(fabric.findings, "smoke.driver");
  REQUIRE(driver != nullptr);
  CHECK(driver->message.find("fabric manager is not running") != std::string::npos);
  CHECK(driver->remedy.find("nvidia-fabricmanager") != std::string::npos);
  CHECK(find(run_fake("init_result = 999\n").findings, "smoke.driver")->remedy.find("Xid") != std::string::npos);
  CHECK(SmokeOptions{}.init_timeout >= std::chrono::seconds(60));

  // The kernel log is read before cuInit: an Xid 79 that cuInit's failure came with is reported.
  gpuenv::testing::FakeSystem system;
  system.real_libraries["fake-libcuda"] = GPUENV_FAKE_CUDA_LIBRARY;
  const FakeCuda fake("init_result = 999\n");
  gpuenv::system::CommandResult before, after;
  before.exit_code = after.exit_code = 0;
  before.out = "[  1.0] nvidia: loading\n";
  after.out = before.out + "[ 20.0] NVRM: Xid (PCI:0000:1b:00): 79, pid=0, GPU has fallen off the bus.\n";
  system.command_queue["dmesg"] = {before, after};
  SmokeOptions options = small_options();
  options.library = "fake-libcuda";
  options.watch_kernel_log = true;
  auto report = run_smoke(system, options);
  REQUIRE(report);
  CHECK(system.commands_run == std::vector<std::string>{"dmesg", "dmesg"});
  const Finding* xid = find(report->findings, "smoke.xid");
  REQUIRE(xid != nullptr);
  CHECK(xid->status == Status::fail);
  CHECK(xid->message.find("Xid 79") != std::string::npos);
}

TEST_CASE("gpuenv smoke e2e: --init-timeout is an option", "[smoke][e2e]") {
  const FakeCuda fake("device_count = 0\n");
  const auto result = gpuenv::testing::run_gpuenv(
      {"smoke", "--init-timeout", "5"},
      {{"GPUENV_CUDA_LIBRARY", std::string(GPUENV_FAKE_CUDA_LIBRARY)}, {"GPUENV_FAKE_CUDA", fake.path()}});
  CHECK(result.exit_code == 1);
  CHECK(result.out.find("the driver reports 0 GPUs") != std::string::npos);
  CHECK(gpuenv::testing::run_gpuenv({"smoke", "--init-timeout", "0"}).exit_code == 2);
}

TEST_CASE("smoke: --memtest sees an address fault that aliases one chunk onto another", "[smoke]") {
  // Two 1 MiB chunks backed by the same memory at different addresses: a pattern of the index within a chunk writes
  // the same words into both and reads back clean; a pattern of the absolute address does not.
  SmokeOptions options = small_options();
  options.memtest_fraction = 0.5;
  options.memtest_chunk_bytes = 1 << 20;
  const SmokeReport clean = run_fake("free_memory = 4194304\n", options);
  CHECK(find(clean.devices.at(0).findings, "smoke.memtest")->status == Status::pass);
  const SmokeReport aliased = run_fake("free_memory = 4194304\nalias_allocations_of = 1048576\n", options);
  const Finding* memtest = find(aliased.devices.at(0).findings, "smoke.memtest");
  REQUIRE(memtest != nullptr);
  CHECK(memtest->status == Status::fail);
  CHECK(memtest->message.find("the first in the address hash pass at byte offset 0x0 ") != std::string::npos);
}

TEST_CASE("smoke: --memtest runs moving inversions and walking bits, and skips when nothing can be allocated",
          "[smoke]") {
  SmokeOptions options = small_options();
  options.memtest_fraction = 0.5;
  const SmokeReport flipped = run_fake("free_memory = 4194304\nmemtest_flip_word = 3\n", options);
  const Finding* bad = find(flipped.devices.at(0).findings, "smoke.memtest");
  REQUIRE(bad != nullptr);
  // The flipped word is seen by each of the five passes: address hash, moving inversions, walking ones, walking zeros,
  // second hash.
  CHECK(bad->message.find("5 wrong reads in 5 of 5 passes") != std::string::npos);

  // Out of memory at the first chunk: other tenants hold the memory; a skip with the reason, not a failure.
  const SmokeReport full = run_fake("free_memory = 4194304\nalloc_max_bytes = 1048576\n", options);
  const Finding* skipped = find(full.devices.at(0).findings, "smoke.memtest");
  REQUIRE(skipped != nullptr);
  CHECK(skipped->status == Status::skip);
  CHECK(skipped->message.find("not even a first chunk of 2 MiB could be allocated") != std::string::npos);
}

TEST_CASE("smoke: matmul checks: exact operands, a missing product fails, Freivalds covers the whole result",
          "[smoke]") {
  const int n = 96;
  std::vector<float> a(n * n), b(n * n);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = operand_value(i, 1);
    b[i] = operand_value(i, 2);
    CHECK(a[i] != 0.0f);
    CHECK(a[i] * 8.0f == static_cast<float>(static_cast<int>(a[i] * 8.0f)));  // eighths
    CHECK(bf16_to_float(float_to_bf16(a[i])) == a[i]);                        // exact in BF16
  }
  // FP32 accumulation in two different orders gives the identical (exact) result.
  std::vector<float> c(n * n), reversed(n * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      float forward = 0, backward = 0;
      for (int p = 0; p < n; ++p) forward += a[i * n + p] * b[p * n + j];
      for (int p = n - 1; p >= 0; --p) backward += a[i * n + p] * b[p * n + j];
      c[i * n + j] = forward;
      reversed[i * n + j] = backward;
    }
  }
  CHECK(c == reversed);
  const FreivaldsVector vector = freivalds_vector(a, b, n, n, n);
  CHECK(check_freivalds(vector, c).ok());
  CHECK(check_freivalds(vector, c).rows == static_cast<std::size_t>(n));

  // One element missing one product (a k-tile of one): the sampled check (it is a corner) and Freivalds both fail.
  std::vector<float> missing = c;
  missing[(n - 1) * n + (n - 1)] -= a[(n - 1) * n + 5] * b[5 * n + (n - 1)];
  CHECK_FALSE(check_gemm_samples(a, b, missing, n, n, n, 4, default_tolerance(Precision::bf16)).ok());
  // An element that is not sampled is still seen by Freivalds.
  std::vector<float> hidden = c;
  hidden[17 * n + 42] += 1.0f / 64;
  const FreivaldsCheck whole = check_freivalds(vector, hidden);
  CHECK_FALSE(whole.ok());
  CHECK(whole.wrong_rows == 1);
  CHECK(whole.wrong_columns == 1);
  CHECK(whole.first_wrong.find("row 17:") == 0);
  std::vector<float> nan = c;
  nan[5] = std::nanf("");
  CHECK_FALSE(check_freivalds(vector, nan).ok());

  // Issue 23 item 8: two swapped columns j, k leave C·x unchanged when x_j = x_k (x has 14 values, so among 96 columns
  // such a pair exists): only the left side yᵀ·C = (yᵀ·A)·B sees it. Likewise two swapped rows with y_i = y_k.
  auto equal_pair = [](const std::vector<double>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      for (std::size_t k = i + 1; k < v.size(); ++k) {
        if (v[i] == v[k]) return std::pair<std::size_t, std::size_t>{i, k};
      }
    }
    FAIL("no two equal entries");
    return std::pair<std::size_t, std::size_t>{};
  };
  const auto [cj, ck] = equal_pair(vector.x);
  std::vector<float> columns_swapped = c;
  for (int i = 0; i < n; ++i) std::swap(columns_swapped[i * n + cj], columns_swapped[i * n + ck]);
  REQUIRE(columns_swapped != c);
  const FreivaldsCheck swapped = check_freivalds(vector, columns_swapped);
  CHECK(swapped.wrong_rows == 0);  // what a right-sided check alone sees: nothing
  CHECK(swapped.wrong_columns >= 1);
  CHECK_FALSE(swapped.ok());
  CHECK(swapped.first_wrong.find("column ") == 0);
  const auto [ri, rk] = equal_pair(vector.y);
  std::vector<float> rows_swapped = c;
  for (int j = 0; j < n; ++j) std::swap(rows_swapped[ri * n + j], rows_swapped[rk * n + j]);
  const FreivaldsCheck rows = check_freivalds(vector, rows_swapped);
  CHECK(rows.wrong_columns == 0);
  CHECK(rows.wrong_rows >= 1);
  CHECK_FALSE(rows.ok());
}

TEST_CASE("smoke: a sporadic wrong result in one timed repetition fails the matmul", "[smoke]") {
  // Our FP32 GEMM's launches: 1 the reference, 2 the sizing launch, then one launch in each of two windows: launch 3
  // is the first window's; the last launch is right again.
  SmokeOptions options = small_options();
  options.cublas = false;
  const SmokeReport report = run_fake("gemm_fault_launch = 3\n", options);
  const Finding* sgemm = find(report.devices.at(0).findings, "smoke.sgemm_fp32");
  REQUIRE(sgemm != nullptr);
  CHECK(sgemm->status == Status::fail);
  CHECK(sgemm->message.find(
            "wrong results: 1 of 3 launches differ from the verified first result (compared bit for bit "
            "on the GPU); first window 1, launch 1: 1 element differs, first C[64][42]") != std::string::npos);
  CHECK(find(report.devices.at(0).findings, "smoke.gemm_bf16")->status != Status::fail);
}

TEST_CASE("smoke: step threads run on the GPU's NUMA node (sysfs local_cpulist) before pinned memory is allocated",
          "[smoke]") {
  CHECK(parse_cpu_list("0-3,8,10-11\n") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(parse_cpu_list("5") == std::vector<int>{5});
  CHECK(parse_cpu_list("3-1").empty());
  CHECK(parse_cpu_list("x").empty());

  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  GPUENV_SKIP_UNLESS(CPU_COUNT(&allowed) >= 2,
                     "this process may run on one CPU only, so placement on one CPU cannot be told apart");
  int first = 0;
  while (!CPU_ISSET(first, &allowed)) ++first;
  const LinkSysfsTree sysfs("16.0 GT/s PCIe x16", "16.0 GT/s PCIe x16", "16.0 GT/s PCIe x16");
  std::ofstream(sysfs.root() + "/bus/pci/devices/0000:1b:00.0/local_cpulist") << first << "\n";
  SmokeOptions options = small_options();
  options.sysfs_root = sysfs.root();
  const SmokeReport report = run_fake("", options);
  CHECK(report.devices.at(0).info.local_cpulist == std::to_string(first));
  CHECK(fake_counter("fake_cuda_alloc_host_cpus") == 1);
}

TEST_CASE("smoke: kernel images: the manifest, the image a driver gets, and --describe", "[smoke]") {
  const std::vector<KernelImage> images = parse_kernel_manifest(
      "smoke_kernels_legacy.fatbin 11.8 11000 compute_90 sm_70 sm_75 sm_80 sm_86 sm_89 sm_90\n"
      "smoke_kernels.fatbin 13.0 13000 compute_120 sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120\n"
      "broken line\n");
  REQUIRE(images.size() == 2);
  CHECK(images[0].cuda_version == "13.0");  // newest first
  CHECK(images[1].sass_archs.front() == "sm_70");
  CHECK(images[1].ptx_arch == "compute_90");
  // An R550 driver (CUDA 12.4) gets the 11.8 image first; an R580 driver (CUDA 13.0) the 13.0 image.
  CHECK(kernel_images_for(images, 12040).front()->file == "smoke_kernels_legacy.fatbin");
  CHECK(kernel_images_for(images, 13000).front()->file == "smoke_kernels.fatbin");
  CHECK(kernel_images_for(images, 13000).back()->file == "smoke_kernels_legacy.fatbin");
  CHECK(kernel_image_driver_range(images, 1) ==
        "drivers supporting CUDA 11.0 or newer, below CUDA 13.0 (its compute_90 PTX, for GPUs newer than its SASS, "
        "needs CUDA 11.8)");
  CHECK(kernel_image_driver_range(images, 0) == "drivers supporting CUDA 13.0 or newer");

  const KernelsInfo embedded = embedded_kernels_info();
  const auto text = gpuenv::testing::run_gpuenv({"smoke", "--describe"});
  CHECK(text.exit_code == 0);
  const auto json = gpuenv::testing::run_gpuenv({"smoke", "--describe", "--json"});
  CHECK(json.exit_code == 0);
  CHECK(json.out.find("\"images\": [") != std::string::npos);
  if (!embedded.embedded) {
    CHECK(text.out.find("built without nvcc") != std::string::npos);
    return;
  }
  CHECK(text.out.find("gpuenv smoke kernel images: " + std::to_string(embedded.images.size())) == 0);
  CHECK(text.out.find("smoke_kernels.fatbin: CUDA " + embedded.cuda_version + " toolkit, SASS sm_75") !=
        std::string::npos);
  CHECK(text.out.find("PTX compute_120") != std::string::npos);
  CHECK(text.out.find("drivers older than CUDA") != std::string::npos);
  CHECK(json.out.find("\"min_driver_cuda\": \"13.0\"") != std::string::npos);
}

namespace {

/// A GPU's concurrent rate (GB/s) beside its solo rate, its batch copied in the second [begin_s, begin_s + 1).
ConcurrentRate copied_in_second(int ordinal, double concurrent, double alone, double begin_s = 0) {
  return ConcurrentRate{ordinal, concurrent, alone, concurrent * 1e9, begin_s, begin_s + 1};
}

}  // namespace

TEST_CASE(
    "smoke: the concurrent H2D aggregate is all bytes over the wall time, so batches that did not overlap add "
    "nothing",
    "[smoke]") {
  // Three GPUs each at their solo 25 GB/s, one after another (drifted apart on a shared link): together 25 GB/s.
  const Finding serial = judge_concurrent_h2d(
      {copied_in_second(0, 25.0, 25.0, 0), copied_in_second(1, 25.0, 25.0, 1), copied_in_second(2, 25.0, 25.0, 2)});
  CHECK(serial.message.find("together 25.0 GB/s") != std::string::npos);
  CHECK(serial.message.find("the GPUs share one host link") != std::string::npos);
  // The same batches at once: 75 GB/s together.
  const Finding overlapping = judge_concurrent_h2d(
      {copied_in_second(0, 25.0, 25.0), copied_in_second(1, 25.0, 25.0), copied_in_second(2, 25.0, 25.0)});
  CHECK(overlapping.status == Status::pass);
  CHECK(overlapping.message.find("together 75.0 GB/s") != std::string::npos);
}

TEST_CASE("smoke: device copies are at least four times the L2 cache, so D2D and HBM measure memory, not the cache",
          "[smoke][system-test]") {
  CHECK(copy_bytes(SmokeOptions{}, 0) == 256 * mib);
  SmokeOptions quick;
  quick.quick = true;
  CHECK(copy_bytes(quick, 0) == 32 * mib);
  CHECK(copy_bytes(quick, 50 * mib) == 200 * mib);           // H100/H200: 50 MB L2 (issue 23 item 2: >= 4 x L2)
  CHECK(copy_bytes(quick, 60 * 1000 * 1000) == 229 * mib);   // rounded up to whole MiB
  CHECK(copy_bytes(SmokeOptions{}, 50 * mib) == 256 * mib);  // the full size already leaves it
  quick.copy_bytes = 64 * 1024;                              // the operator's size stands
  CHECK(copy_bytes(quick, 50 * mib) == 64 * 1024);

  // Through the runner: the fake GPU reports a 20 MiB L2, so quick device copies move 80 MiB (D2D counts read +
  // write); the host copies keep their 32 MiB (the L2 serves no copy through PCIe).
  SmokeOptions options = small_options();
  options.quick = true;
  options.copy_bytes = 0;
  options.repetitions = 1;
  options.cublas = false;
  const SmokeReport report = run_fake("l2_bytes = 20971520\nemulate_kernels = 0\n", options);
  const auto& metrics = report.devices.at(0).metrics;
  const auto d2d = std::find_if(metrics.begin(), metrics.end(), [](const Metric& m) { return m.id == "d2d"; });
  REQUIRE(d2d != metrics.end());
  CHECK(d2d->work == 2.0 * 80 * mib);
  const auto h2d = std::find_if(metrics.begin(), metrics.end(), [](const Metric& m) { return m.id == "h2d_pinned"; });
  REQUIRE(h2d != metrics.end());
  CHECK(h2d->work == 32.0 * mib);
  CHECK(report.devices.at(0).info.l2_bytes == 20 * mib);

  // Peer copies, one way and both ways, leave the L2 of either GPU too.
  const SmokeReport pair = run_fake("device_count = 2\nl2_bytes = 20971520\nemulate_kernels = 0\n", options);
  REQUIRE(pair.peers.size() == 2);
  CHECK(pair.peers[0].metric.work == 80.0 * mib);
  REQUIRE(pair.bidirectional.size() == 2);
  CHECK(pair.bidirectional[0].metric.work == 80.0 * mib);
}

TEST_CASE("smoke: pinned and device copies are timed as a queue behind a spin kernel (nvbandwidth)", "[smoke]") {
  // The fake's events report 1 ms for any interval: one copy per interval would read 1 MiB/ms; the queue of
  // copies_per_sample copies behind smoke_spin_wait reads copies_per_sample times that.
  SmokeOptions options = small_options();
  options.copy_bytes = mib;
  options.repetitions = 3;
  options.cublas = false;
  const int spins_before = fake_counter("fake_cuda_spin_launches");
  const SmokeReport report = run_fake("elapsed_ms = 1\n", options);
  const auto& metrics = report.devices.at(0).metrics;
  auto median = [&](const std::string& id) {
    const auto it = std::find_if(metrics.begin(), metrics.end(), [&](const Metric& m) { return m.id == id; });
    REQUIRE(it != metrics.end());
    return it->summary.median;
  };
  const double one_copy = mib / 1e-3 / 1e9;  // GB/s of one MiB in 1 ms
  CHECK(median("h2d_pinned") == Approx(copies_per_sample * one_copy));
  CHECK(median("d2h_pinned") == Approx(copies_per_sample * one_copy));
  CHECK(median("d2d") == Approx(2 * copies_per_sample * one_copy));  // read + write
  // Four event-timed copy steps (D2D, the stream copy, D2H and H2D), three samples each (the warm-up is not held).
  CHECK(fake_counter("fake_cuda_spin_launches") - spins_before == 12);
  for (const char* id : {"smoke.h2d_pinned", "smoke.d2h_pinned", "smoke.d2d", "smoke.h2d_pageable"}) {
    const Finding* copy = find(report.devices.at(0).findings, id);
    REQUIRE(copy != nullptr);
    CHECK(copy->message.find("corrupted") == std::string::npos);  // verified after the queue ran
  }
}

TEST_CASE("smoke: pinned H2D on every GPU at once, and GPUs that share one host link", "[smoke][system-test]") {
  // HGX-like: pairs behind a switch halve each other, but four switches still add up: shown, not warned.
  const Finding pairs = judge_concurrent_h2d({copied_in_second(0, 27.0, 54.0), copied_in_second(1, 27.5, 54.0),
                                              copied_in_second(2, 27.0, 53.5), copied_in_second(3, 26.8, 54.2),
                                              copied_in_second(4, 27.1, 54.0), copied_in_second(5, 27.0, 54.0)});
  CHECK(pairs.status == Status::pass);
  CHECK(pairs.message.find("pinned host->device on 6 GPUs at once: GPU 0 27.0 GB/s (0.50 x alone)") == 0);
  // Four GPUs behind one Gen4 uplink: together they move what one moves alone.
  const Finding shared = judge_concurrent_h2d({copied_in_second(0, 6.5, 25.0), copied_in_second(1, 6.4, 25.1),
                                               copied_in_second(2, 6.6, 24.9), copied_in_second(3, 6.3, 25.0)});
  // Said, not judged: the 1.25 x line is gpuenv's own, and some healthy shapes put every GPU behind one uplink by
  // design (issue 23 item 1: an uncalibrated line never changes the verdict).
  CHECK(shared.status == Status::pass);
  CHECK(shared.message.find("together 25.8 GB/s (all bytes over 1e+03 ms wall time") != std::string::npos);
  CHECK(shared.message.find("no more than one GPU alone (25.1 GB/s)") != std::string::npos);
  CHECK(shared.message.find("not judged (uncalibrated: check `nvidia-smi topo -m`") != std::string::npos);

  // Through the runner: every GPU runs its part (the fake's copies take the same time at once as alone).
  const int spins_before = fake_counter("fake_cuda_spin_launches");
  const int live_before = fake_counter("fake_cuda_live_allocations");
  // event_sleep: the host clock sees the time the fake's events report (the aggregate is taken from wall time).
  const SmokeReport report = run_fake("device_count = 3\nelapsed_ms = 20\nevent_sleep = 1\n");
  const Finding* together = find(report.findings, "smoke.h2d_concurrent");
  REQUIRE(together != nullptr);
  CHECK(together->status == Status::pass);
  CHECK(together->message.find("pinned host->device on 3 GPUs at once: GPU 0 ") == 0);
  CHECK(together->message.find("(1.00 x alone)") != std::string::npos);
  for (const DeviceResult& gpu : report.devices) {
    CHECK(std::count_if(gpu.metrics.begin(), gpu.metrics.end(),
                        [](const Metric& m) { return m.id == "h2d_concurrent"; }) == 1);
  }
  CHECK(fake_counter("fake_cuda_spin_launches") > spins_before);
  CHECK(fake_counter("fake_cuda_live_allocations") == live_before);  // its buffers and flags are freed
  // GPUs whose copies drift apart and take turns on the link each measure their solo rate: the sum of their rates
  // would pass, the bytes over the wall time do not.
  const SmokeReport turns = run_fake("device_count = 3\nelapsed_ms = 20\nevent_sleep = 1\nevent_sleep_serial = 1\n");
  const Finding* serial = find(turns.findings, "smoke.h2d_concurrent");
  REQUIRE(serial != nullptr);
  CHECK(serial->status == Status::pass);
  CHECK(serial->message.find("the GPUs share one host link") != std::string::npos);
  CHECK(serial->message.find("(1.00 x alone)") != std::string::npos);
  // One GPU: nothing to run together.
  CHECK(find(run_fake("elapsed_ms = 0.001\n").findings, "smoke.h2d_concurrent") == nullptr);
}
