#pragma once
// The fake libcuda (tests/fake_cuda) for smoke tests: its configuration file for a scope, small sizes, a runner call,
// and the fake's own counters of what is still allocated.

#include <dlfcn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "smoke/runner.hpp"
#include "system/system.hpp"

namespace gpuenv::smoke::testing {

using report::Finding;

/// Writes the fake's configuration and points GPUENV_FAKE_CUDA at it for the scope.
class FakeCuda {
 public:
  explicit FakeCuda(const std::string& config) {
    static int counter = 0;
    m_path = std::filesystem::temp_directory_path() /
             ("gpuenv-fake-cuda-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + ".conf");
    std::ofstream(m_path) << config;
    ::setenv("GPUENV_FAKE_CUDA", m_path.c_str(), 1);
  }
  ~FakeCuda() {
    ::unsetenv("GPUENV_FAKE_CUDA");
    std::error_code ignored;
    std::filesystem::remove(m_path, ignored);
  }
  FakeCuda(const FakeCuda&) = delete;
  FakeCuda& operator=(const FakeCuda&) = delete;
  std::string path() const { return m_path.string(); }

 private:
  std::filesystem::path m_path;
};

inline SmokeOptions small_options() {
  SmokeOptions options;
  options.library = GPUENV_FAKE_CUDA_LIBRARY;
  options.copy_bytes = 64 * 1024;
  options.sgemm_size = 64;
  options.tensor_size = 64;
  options.sgemm_floor_size = options.tensor_floor_size = 64;  // judge these small matmuls like full-size ones
  options.repetitions = 2;
  options.gemm_burst = std::chrono::milliseconds(0);  // the emulated GEMMs are slow: bursts are the burst tests'
  options.gemm_samples = 32;
  options.step_timeout = std::chrono::seconds(20);
  options.cublas_library = GPUENV_FAKE_CUDA_LIBRARY;  // the fake exports cuBLAS too
  options.nvml_library = "";                          // NVML is the nvml tests' (smoke_nvml_test)
  options.watch_kernel_log = false;  // this machine's kernel log is not the test's (smoke_xid_test covers it)
  return options;
}

inline SmokeReport run_fake(const std::string& config, SmokeOptions options = small_options()) {
  const FakeCuda fake(config);
  auto real = gpuenv::system::make_real_system();
  auto report = run_smoke(*real, options);
  REQUIRE(report);
  return *report;
}

inline const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& finding : findings) {
    if (finding.id == id) return &finding;
  }
  return nullptr;
}

/// A counter the fake libcuda exports (fake_cuda_live_allocations, fake_cuda_live_contexts); the library stays loaded
/// for the process, so counts carry over between runs: compare before and after.
inline int fake_counter(const char* name) {
  static void* const library = ::dlopen(GPUENV_FAKE_CUDA_LIBRARY, RTLD_NOW);
  REQUIRE(library != nullptr);
  auto* counter = reinterpret_cast<int (*)()>(::dlsym(library, name));
  REQUIRE(counter != nullptr);
  return counter();
}

}  // namespace gpuenv::smoke::testing
