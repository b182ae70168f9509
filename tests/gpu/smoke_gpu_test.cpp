// GPU-only: the real smoke run on a real libcuda (hidden tag [.gpu]: run with `gpuenv_tests "[.gpu]"`).
// Skips with a reason when no driver or GPU is present.

#include <catch2/catch.hpp>

#include "smoke/smoke.hpp"
#include "support/skip.hpp"

TEST_CASE("smoke gpu: --quick on the real driver verifies copies and matmuls on every GPU", "[.gpu][smoke]") {
  auto real = gpuenv::system::make_real_system();
  gpuenv::smoke::SmokeOptions options;
  options.quick = true;
  auto report = gpuenv::smoke::run_smoke(*real, options);
  REQUIRE(report);
  GPUENV_SKIP_UNLESS(report->driver_loaded && !report->devices.empty(),
                     "no NVIDIA driver or GPU here (" +
                         (report->findings.empty() ? std::string("?") : report->findings.front().message) + ")");
  for (const auto& device : report->devices) {
    for (const auto& finding : device.findings) {
      CAPTURE(device.index, finding.id, finding.message);
      // Correctness must hold everywhere; throughput verdicts may warn on busy or unknown GPUs.
      CHECK(finding.message.find("data corrupted") == std::string::npos);
      CHECK(finding.message.find("wrong results") == std::string::npos);
      CHECK(finding.message.find("hang:") == std::string::npos);
    }
    CHECK(device.metrics.size() >= 5);
  }
}
