// The smoke benchmark's runs (scripts/bench times them; no test asserts a wall-clock time). Hidden: run only when
// named, `gpuenv_tests "[.smoke-bench]"`. The fake libcuda models an H100 node's GPU time at 1/256 of the sizes: copies
// of 1 MiB at a 256th of H100 bandwidths (host 52 GB/s, device 1.3 TB/s, NVLink 370 GB/s), each event interval slept
// (event_sleep), and every matmul launch 2 ms (elapsed_ms and gemm_sleep_ms), in sustained windows of 200 ms as on a
// GPU. What a GPU does in that time costs the fake no CPU time: GEMM results memoized, the 1 MiB copies move no data,
// the fill, check, compare and stream kernels and bulk memsets are modelled, not emulated (model_only), so on a
// machine with few cores the emulation does not serialise the GPUs that a node runs in parallel. Eight GPUs on two
// NUMA nodes of four.

#include <catch2/catch.hpp>

#include "smoke/fake_cuda_fixture.hpp"
#include "smoke/smoke.hpp"

using namespace gpuenv::smoke;
using namespace gpuenv::smoke::testing;

namespace {

SmokeReport run_bench(int gpus) {
  SysfsTree sysfs("0000:1b:00.0", "32.0 GT/s PCIe", 16, "0");
  for (int gpu = 1; gpu < gpus; ++gpu) sysfs.add("0000:1b:0" + std::to_string(gpu) + ".0", gpu < 4 ? "0" : "1");
  SmokeOptions options = small_options();
  options.copy_bytes = std::size_t{1} << 20;
  options.sgemm_size = options.tensor_size = 128;
  options.repetitions = 0;                              // the defaults: 10 copy samples,
  options.gemm_window = std::chrono::milliseconds(-1);  // 5 windows of 200 ms per matmul
  options.gemm_windows = 0;
  options.sysfs_root = sysfs.root();
  return run_fake("device_count = " + std::to_string(gpus) +
                      "\nhost_gbs = 0.2\ndevice_gbs = 5\npeer_gbs = 1.45\nevent_sleep = 1\nelapsed_ms = 2\n"
                      "gemm_sleep_ms = 2\ngemm_memoize = 1\nmodel_copies_from_bytes = 1048576\n"
                      "model_only = smoke_fill_words,smoke_check_words,smoke_compare_words,smoke_stream_copy,memset\n",
                  options);
}

}  // namespace

TEST_CASE("smoke bench: one GPU", "[.smoke-bench]") { CHECK(run_bench(1).devices.size() == 1); }

TEST_CASE("smoke bench: eight GPUs", "[.smoke-bench]") {
  const SmokeReport report = run_bench(8);
  CHECK(report.devices.size() == 8);
  CHECK(report.peers.size() == 56);
}
