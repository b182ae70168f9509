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

#include "smoke/smoke.hpp"
#include "support/scoped_config_file.hpp"
#include "system/system.hpp"

namespace gpuenv::smoke::testing {

using report::Finding;

/// Writes the fake's configuration and points GPUENV_FAKE_CUDA at it for the scope.
class FakeCuda : public gpuenv::testing::ScopedConfigFile {
 public:
  explicit FakeCuda(const std::string& config) : ScopedConfigFile("GPUENV_FAKE_CUDA", "gpuenv-fake-cuda", config) {}
};

inline SmokeOptions small_options() {
  SmokeOptions options;
  options.library = GPUENV_FAKE_CUDA_LIBRARY;
  options.copy_bytes = 64 * 1024;
  options.sgemm_size = 64;
  options.tensor_size = 64;
  options.sgemm_floor_size = options.tensor_floor_size = 64;  // judge these small matmuls like full-size ones
  options.repetitions = 2;
  // The emulated GEMMs are slow: one launch a window, two windows (sustained windows are the window tests').
  options.gemm_window = std::chrono::milliseconds(0);
  options.gemm_windows = 2;
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

/// The fake NVML's fixture for a scope (GPUENV_FAKE_NVML; the fake re-reads it at nvmlInit).
class FakeNvml : public gpuenv::testing::ScopedConfigFile {
 public:
  /// `gpu_keys` for GPU 0 (00000000:1B:00.0); `more_gpus` are whole "[gpu]" sections after it.
  explicit FakeNvml(const std::string& gpu_keys, const std::string& more_gpus = "")
      : ScopedConfigFile("GPUENV_FAKE_NVML", "gpuenv-smoke-nvml",
                         "[gpu]\npci_bus_id = 00000000:1B:00.0\n" + gpu_keys + more_gpus) {}
};

inline SmokeOptions with_nvml(SmokeOptions options = small_options()) {
  options.nvml_library = GPUENV_FAKE_NVML_LIBRARY;
  return options;
}

inline SmokeReport run_with_nvml(const std::string& nvml_keys, const std::string& cuda_config, SmokeOptions options) {
  const FakeNvml nvml(nvml_keys);
  return run_fake(cuda_config, with_nvml(options));
}

/// A sysfs tree with one GPU's link files, its upstream port's maxima, and its NUMA CPUs; removed at scope end.
class SysfsTree {
 public:
  SysfsTree(const std::string& bus_id, const std::string& max_speed, int max_width, const std::string& cpus = "") {
    m_root = std::filesystem::temp_directory_path() /
             ("gpuenv-smoke-sysfs-" + std::to_string(::getpid()) + "-" + std::to_string(++counter()));
    const std::filesystem::path bridge = m_root / "devices/pci0000:00/0000:00:01.0";
    const std::filesystem::path device = bridge / bus_id;
    std::filesystem::create_directories(device);
    std::filesystem::create_directories(m_root / "bus/pci/devices");
    std::filesystem::create_directory_symlink(device, m_root / "bus/pci/devices" / bus_id);
    std::ofstream(bridge / "max_link_speed") << max_speed << "\n";
    std::ofstream(bridge / "max_link_width") << max_width << "\n";
    std::ofstream(device / "max_link_speed") << max_speed << "\n";
    std::ofstream(device / "max_link_width") << max_width << "\n";
    std::ofstream(device / "current_link_speed") << max_speed << "\n";
    std::ofstream(device / "current_link_width") << max_width << "\n";
    if (!cpus.empty()) std::ofstream(device / "local_cpulist") << cpus << "\n";
    m_speed = device / "current_link_speed";
  }
  /// Another GPU under the same upstream port, on the CPUs `cpus`.
  void add(const std::string& bus_id, const std::string& cpus) {
    const std::filesystem::path device = m_root / "devices/pci0000:00/0000:00:01.0" / bus_id;
    std::filesystem::create_directories(device);
    std::filesystem::create_directory_symlink(device, m_root / "bus/pci/devices" / bus_id);
    std::ofstream(device / "local_cpulist") << cpus << "\n";
  }
  ~SysfsTree() {
    std::error_code ignored;
    std::filesystem::remove_all(m_root, ignored);
  }
  SysfsTree(const SysfsTree&) = delete;
  SysfsTree& operator=(const SysfsTree&) = delete;
  std::string root() const { return m_root.string(); }
  std::string speed_file() const { return m_speed.string(); }

 private:
  static int& counter() {
    static int value = 0;
    return value;
  }
  std::filesystem::path m_root, m_speed;
};

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
