#pragma once
// The fake libnccl's configuration for a test's scope (tests/fake_nccl: GPUENV_FAKE_NCCL names the key=value file).

#include <string>

#include "support/scoped_config_file.hpp"

namespace gpuenv::nccl::testing {

/// Writes the fake libnccl's configuration and points GPUENV_FAKE_NCCL at it for the scope.
class FakeNccl : public gpuenv::testing::ScopedConfigFile {
 public:
  explicit FakeNccl(const std::string& config) : ScopedConfigFile("GPUENV_FAKE_NCCL", "gpuenv-fake-nccl", config) {}
};

}  // namespace gpuenv::nccl::testing
