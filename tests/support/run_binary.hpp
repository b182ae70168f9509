#pragma once
// Runs the built gpuenv binary for end-to-end tests (through the real System seam, never a shell).

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "system/system.hpp"

namespace gpuenv::testing {

/// Environment changes for one run: a value sets the variable, nullopt removes it.
using EnvironmentChanges = std::vector<std::pair<std::string, std::optional<std::string>>>;

/// Runs `gpuenv args...` with a 30 s timeout from the source directory; returns exit code and output.
system::CommandResult run_gpuenv(const std::vector<std::string>& args);

/// The same with `environment` applied: the variables are set (or unset) in this process around the call, so the
/// child inherits them, and restored afterwards. Not thread-safe (tests run serially).
system::CommandResult run_gpuenv(const std::vector<std::string>& args, const EnvironmentChanges& environment);

}  // namespace gpuenv::testing
