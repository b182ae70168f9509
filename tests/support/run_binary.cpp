#include "support/run_binary.hpp"

namespace gpuenv::testing {

system::CommandResult run_gpuenv(const std::vector<std::string>& args) {
  static auto real = system::make_real_system();
  std::vector<std::string> argv{GPUENV_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return real->run(argv, std::chrono::seconds(30));
}

}  // namespace gpuenv::testing
