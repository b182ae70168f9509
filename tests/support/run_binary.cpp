#include "support/run_binary.hpp"

#include <filesystem>
#include <map>

#include "system/child_process.hpp"

namespace gpuenv::testing {

system::CommandResult run_gpuenv(const std::vector<std::string>& args) { return run_gpuenv(args, {}); }

system::CommandResult run_gpuenv(const std::vector<std::string>& args, const EnvironmentChanges& environment,
                                 const std::string& directory) {
  static auto real = system::make_real_system();
  // System::run gives every child a scrubbed environment and "/" (docs/security.md, "Child processes"); the binary
  // under test gets this process's environment with the changes, and its working directory, through env(1).
  std::map<std::string, std::string> variables;
  for (const auto& [name, value] : system::process_environment()) variables.emplace(name, value);
  for (const auto& [name, value] : environment) {
    if (value) {
      variables[name] = *value;
    } else {
      variables.erase(name);
    }
  }
  std::vector<std::string> argv{"env", "-i", "-C",
                                directory.empty() ? std::filesystem::current_path().string() : directory};
  for (const auto& [name, value] : variables) argv.push_back(name + "=" + value);
  argv.emplace_back(GPUENV_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  // A bound for a binary that hangs, not a performance limit: an ASan build on a loaded 2-core machine has taken
  // more than 30 s for a --quick run through the fakes.
  return real->run(argv, std::chrono::seconds(300));
}

}  // namespace gpuenv::testing
