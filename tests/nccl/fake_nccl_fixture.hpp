#pragma once
// The fake libnccl's configuration for a test's scope (tests/fake_nccl: GPUENV_FAKE_NCCL names the key=value file),
// and a FakeSystem that opens the fake libcuda and libnccl for real.

#include <string>

#include "support/fake_system.hpp"
#include "support/scoped_config_file.hpp"

namespace gpuenv::nccl::testing {

/// Writes the fake libnccl's configuration and points GPUENV_FAKE_NCCL at it for the scope.
class FakeNccl : public gpuenv::testing::ScopedConfigFile {
 public:
  explicit FakeNccl(const std::string& config) : ScopedConfigFile("GPUENV_FAKE_NCCL", "gpuenv-fake-nccl", config) {}
};

/// A FakeSystem whose load_library opens the fake libcuda and libnccl (by their paths) for real: the sweep runs
/// against the fakes, while its environment and files are the FakeSystem's, so the NCCL_* variables and the
/// /etc/nccl.conf of the machine running the tests never reach it.
inline void open_fake_libraries(gpuenv::testing::FakeSystem& system) {
  system.real_libraries[GPUENV_FAKE_CUDA_LIBRARY] = GPUENV_FAKE_CUDA_LIBRARY;
  system.real_libraries[GPUENV_FAKE_NCCL_LIBRARY] = GPUENV_FAKE_NCCL_LIBRARY;
}

}  // namespace gpuenv::nccl::testing
