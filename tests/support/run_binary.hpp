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

/// Runs `gpuenv args...` with a 300 s bound, in this process's working directory and with its environment.
system::CommandResult run_gpuenv(const std::vector<std::string>& args);

/// The same with `environment` applied to this process's environment, and in `directory` when it is not empty.
system::CommandResult run_gpuenv(const std::vector<std::string>& args, const EnvironmentChanges& environment,
                                 const std::string& directory = "");

}  // namespace gpuenv::testing
