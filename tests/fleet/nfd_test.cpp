// node-feature-discovery feature file: `gpuenv.io/<name>=<value>` lines whose values are valid label values, written
// by `doctor --nfd FILE` through a hidden temporary and a rename (NFD ignores dot files).

#include "fleet/nfd.hpp"

#include <catch2/catch.hpp>

#include "fleet/fleet_support.hpp"
#include "support/run_binary.hpp"

namespace {

using namespace gpuenv::testing::fleet;

}  // namespace

TEST_CASE("nfd: label values are <= 63 chars of [A-Za-z0-9._-], alphanumeric at both ends", "[fleet][nfd]") {
  CHECK(gpuenv::fleet::nfd_label_value("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3");
  CHECK(gpuenv::fleet::nfd_label_value("NOT READY") == "NOT-READY");
  CHECK(gpuenv::fleet::nfd_label_value(" (Tesla) T4 ") == "Tesla-T4");
  CHECK(gpuenv::fleet::nfd_label_value("550.54.15") == "550.54.15");
  CHECK(gpuenv::fleet::nfd_label_value("--") == "");
  CHECK(gpuenv::fleet::nfd_label_value(std::string(100, 'a')).size() == 63);
}

TEST_CASE("nfd: the feature file names readiness, versions and GPUs, and leaves out empty facts", "[fleet][nfd]") {
  gpuenv::fleet::NodeFeatures features{true, "READY", "550.54.15", "12.4", "NVIDIA H100 80GB HBM3", 8};
  CHECK(gpuenv::fleet::nfd_feature_file(features) ==
        "# Written by `gpuenv doctor --nfd`; rewritten on every run.\n"
        "gpuenv.io/ready=true\n"
        "gpuenv.io/verdict=READY\n"
        "gpuenv.io/driver-version=550.54.15\n"
        "gpuenv.io/cuda-version=12.4\n"
        "gpuenv.io/gpu-model=NVIDIA-H100-80GB-HBM3\n"
        "gpuenv.io/gpu-count=8\n");
  gpuenv::fleet::NodeFeatures none{false, "NOT READY", "", "", "", 0};
  CHECK(gpuenv::fleet::nfd_feature_file(none) ==
        "# Written by `gpuenv doctor --nfd`; rewritten on every run.\n"
        "gpuenv.io/ready=false\ngpuenv.io/verdict=NOT-READY\ngpuenv.io/gpu-count=0\n");
}

TEST_CASE("nfd: the expiry directive comes before the labels, in RFC 3339 UTC as NFD parses it", "[fleet][nfd]") {
  // kubernetes-sigs/node-feature-discovery source/local/local.go: time.Parse(time.RFC3339, value); the directive
  // applies to the lines after it (docs/usage/customization-guide.md, "Input format").
  CHECK(gpuenv::fleet::rfc3339_utc(0) == "1970-01-01T00:00:00Z");
  CHECK(gpuenv::fleet::rfc3339_utc(1764556800) == "2025-12-01T02:40:00Z");
  gpuenv::fleet::NodeFeatures features{true, "READY", "", "", "", 1, 1764556800 + 900};
  CHECK(gpuenv::fleet::nfd_feature_file(features) ==
        "# Written by `gpuenv doctor --nfd`; rewritten on every run.\n"
        "# +expiry-time=2025-12-01T02:55:00Z\n"
        "gpuenv.io/ready=true\ngpuenv.io/verdict=READY\ngpuenv.io/gpu-count=1\n");
}

TEST_CASE("nfd: doctor --nfd writes the file atomically and only the file", "[fleet][nfd]") {
  TempDir features_d;
  const auto file = features_d.path() / "gpuenv";
  const auto ready = gpuenv::testing::run_gpuenv(doctor_on_tree("healthy-8xh100", {"--quick", "--nfd", file.string()}));
  INFO(ready.out << ready.err);
  REQUIRE(ready.exit_code == 0);
  const std::string text = read_text(file);
  CHECK(text.find("gpuenv.io/ready=true\n") != std::string::npos);
  CHECK(text.find("gpuenv.io/gpu-model=NVIDIA-H100-80GB-HBM3\n") != std::string::npos);
  CHECK(text.find("gpuenv.io/gpu-count=8\n") != std::string::npos);
  CHECK(text.find("\n# +expiry-time=20") != std::string::npos);  // default: 900 s from now
  const auto forever = gpuenv::testing::run_gpuenv(
      doctor_on_tree("healthy-8xh100", {"--quick", "--nfd", file.string(), "--nfd-expiry", "0"}));
  CHECK(forever.exit_code == 0);
  CHECK(read_text(file).find("expiry-time") == std::string::npos);

  const auto bad = gpuenv::testing::run_gpuenv(doctor_on_tree("xid79", {"--quick", "--nfd", file.string()}));
  CHECK(bad.exit_code == 1);
  CHECK(read_text(file).find("gpuenv.io/ready=false\n") != std::string::npos);
  CHECK(names_in(features_d.path()) == std::vector<std::string>{"gpuenv"});

  const auto hidden =
      gpuenv::testing::run_gpuenv(doctor_on_tree("xid79", {"--quick", "--nfd", (features_d.path() / ".x").string()}));
  CHECK(hidden.exit_code == 2);
}
