#pragma once
// Runs the built gpuenv binary for end-to-end tests (through the real System seam, never a shell).

#include <string>
#include <vector>

#include "system/system.hpp"

namespace gpuenv::testing {

/// Runs `gpuenv args...` with a 30 s timeout from the source directory; returns exit code and output.
system::CommandResult run_gpuenv(const std::vector<std::string>& args);

}  // namespace gpuenv::testing
