#include "support/run_binary.hpp"

#include <cstdlib>

namespace gpuenv::testing {

system::CommandResult run_gpuenv(const std::vector<std::string>& args) {
  static auto real = system::make_real_system();
  std::vector<std::string> argv{GPUENV_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  // A bound for a binary that hangs, not a performance limit: an ASan build on a loaded 2-core machine has taken
  // more than 30 s for a --quick run through the fakes.
  return real->run(argv, std::chrono::seconds(300));
}

system::CommandResult run_gpuenv(const std::vector<std::string>& args, const EnvironmentChanges& environment) {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  for (const auto& [name, value] : environment) {
    const char* old = std::getenv(name.c_str());
    saved.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  system::CommandResult result = run_gpuenv(args);
  // Restore in reverse order, so a name listed twice ends with its original value.
  for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
    if (it->second) {
      ::setenv(it->first.c_str(), it->second->c_str(), 1);
    } else {
      ::unsetenv(it->first.c_str());
    }
  }
  return result;
}

}  // namespace gpuenv::testing
