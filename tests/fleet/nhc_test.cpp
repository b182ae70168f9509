// deploy/nhc/gpuenv.nhc sourced by a minimal NHC stand-in (tests/fleet/nhc_shim.sh: `die` as NHC defines it; NHC
// itself is not packaged in Debian 12): a node that is not ready dies with "gpuenv: <oneline>", a ready one passes.

#include <catch2/catch.hpp>

#include "fleet/fleet_support.hpp"
#include "util/strings.hpp"

namespace {

using namespace gpuenv::testing::fleet;

gpuenv::system::CommandResult run_check(const std::string& tree) {
  std::vector<std::string> argv{"env", std::string("GPUENV_BINARY=") + GPUENV_BINARY, "bash",
                                std::string(GPUENV_SOURCE_DIR) + "/tests/fleet/nhc_shim.sh",
                                std::string(GPUENV_SOURCE_DIR) + "/deploy/nhc/gpuenv.nhc"};
  const auto doctor = doctor_on_tree(tree, {});
  argv.insert(argv.end(), doctor.begin() + 1, doctor.end());  // the check adds `doctor` itself
  return run_tool(argv);
}

}  // namespace

TEST_CASE("nhc: check_gpuenv dies with a gpuenv: reason on a node that is not ready, passes on a ready one",
          "[fleet][nhc]") {
  const auto bad = run_check("no-driver");
  INFO(bad.out << bad.err);
  CHECK(bad.exit_code == 1);
  CHECK(gpuenv::util::starts_with(bad.out, "ERROR: nhc: Health check failed: gpuenv: NOT READY: driver.kernel_module"));
  CHECK(gpuenv::util::split_lines(bad.out).size() == 1);

  const auto good = run_check("healthy-8xh100");
  INFO(good.out << good.err);
  CHECK(good.exit_code == 0);
  CHECK(good.out == "nhc: all checks passed\n");
}
