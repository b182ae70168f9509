#pragma once
// The fake libnccl's configuration for a test's scope (tests/fake_nccl: GPUENV_FAKE_NCCL names the key=value file).

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuenv::nccl::testing {

/// Writes the fake libnccl's configuration and points GPUENV_FAKE_NCCL at it for the scope.
class FakeNccl {
 public:
  explicit FakeNccl(const std::string& config) {
    m_path = std::filesystem::temp_directory_path() / ("gpuenv-fake-nccl-" + std::to_string(::getpid()) + ".conf");
    std::ofstream(m_path) << config;
    ::setenv("GPUENV_FAKE_NCCL", m_path.c_str(), 1);
  }
  ~FakeNccl() {
    ::unsetenv("GPUENV_FAKE_NCCL");
    std::error_code ignored;
    std::filesystem::remove(m_path, ignored);
  }
  FakeNccl(const FakeNccl&) = delete;
  FakeNccl& operator=(const FakeNccl&) = delete;

 private:
  std::filesystem::path m_path;
};

}  // namespace gpuenv::nccl::testing
