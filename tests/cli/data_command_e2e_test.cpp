// `gpuenv data check`, `gpuenv data show`, the global --data-dir and `gpuenv --version --verbose`, end to end with
// the built binary and overlay files in a temporary directory.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::EnvironmentChanges;
using gpuenv::testing::run_gpuenv;

using gpuenv::testing::TempDir;

/// No overlay from the environment of the test run itself.
const EnvironmentChanges k_no_env = {{"GPUENV_DATA_DIR", std::nullopt}};

/// A replacement of CUDA 12.4.1's row (the CUDA of the shipped pytorch-2.4-cu124 profile), on line 2.
constexpr const char* k_cuda_row =
    "# a corrected row\n[[release]]\nversion = \"12.4.1\"\ndriver_min = \"550.54.15\"\nstatus = \"verified\"\n"
    "source = \"https://docs.nvidia.com/cuda/archive/12.4.1/cuda-toolkit-release-notes/\"\n";

}  // namespace

TEST_CASE("data check: a valid overlay is exit 0, a bad one exit 2 naming file:line", "[cli][data][e2e]") {
  TempDir good("good");
  good.write("cuda.toml", k_cuda_row);
  const auto ok = run_gpuenv({"data", "check", good.str()}, k_no_env);
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("1 overlay file(s) valid: cuda.toml"));

  TempDir bad("bad");
  bad.write("cuda.toml", "\n\n[[release]]\nversion = \"12.4.1\"\nstatus = \"verified\"\n");
  const auto missing = run_gpuenv({"data", "check", bad.str()}, k_no_env);
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains(bad.str() + "/cuda.toml:3: [[release]]: missing `source`"));
  CHECK_THAT(missing.err, Catch::Contains("fix: "));

  TempDir misnamed("misnamed");
  misnamed.write("cudaa.toml", k_cuda_row);
  const auto name = run_gpuenv({"data", "check", misnamed.str()}, k_no_env);
  CHECK(name.exit_code == 2);
  CHECK_THAT(name.err, Catch::Contains("`cudaa.toml` is not a gpuenv data table"));
  CHECK_THAT(name.err, Catch::Contains("rename it to cuda.toml"));

  CHECK(run_gpuenv({"data", "check", good.str() + "/nowhere"}, k_no_env).exit_code == 2);
}

TEST_CASE("global data-dir option: findings that used an overlay row say so", "[cli][data][e2e]") {
  TempDir dir("profile");
  dir.write("cuda.toml", k_cuda_row);
  const auto result =
      run_gpuenv({"--data-dir", dir.str(), "profile", "check", "pytorch-2.4-cu124", "--json"}, k_no_env);
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  auto json = nlohmann::json::parse(result.out);
  if (json.is_array()) json = json[0];
  bool found = false;
  for (const auto& finding : json["cells"][0]["findings"]) {
    if (finding["id"] == "cuda.release") {
      found = true;
      CHECK(finding["source"].get<std::string>().find("(from overlay " + dir.str() + "/cuda.toml:2)") !=
            std::string::npos);
    }
  }
  CHECK(found);
  const auto text = run_gpuenv({"--data-dir", dir.str(), "profile", "check", "pytorch-2.4-cu124"}, k_no_env);
  CHECK_THAT(text.out, Catch::Contains("(from overlay " + dir.str() + "/cuda.toml:2)"));
  // The same through $GPUENV_DATA_DIR.
  const auto env = run_gpuenv({"profile", "check", "pytorch-2.4-cu124"}, {{"GPUENV_DATA_DIR", dir.str()}});
  CHECK_THAT(env.out, Catch::Contains("(from overlay " + dir.str() + "/cuda.toml:2)"));
}

TEST_CASE("global data-dir option: a bad overlay is exit 2 for any command", "[cli][data][e2e]") {
  TempDir dir("any");
  dir.write("gpus.toml", "[[gpu]]\nmodel = \"Zeta\"\ncompute_capability = \"12.0\"\nstatus = \"verified\"\n");
  const auto result = run_gpuenv({"--data-dir", dir.str(), "profile", "check", "pytorch-2.4-cu124"}, k_no_env);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains(dir.str() + "/gpus.toml:1: [[gpu]]: missing `source`"));
}

TEST_CASE("data show: the merged table as TOML or JSON", "[cli][data][e2e]") {
  TempDir dir("show");
  dir.write("cuda.toml", k_cuda_row);
  const auto toml = run_gpuenv({"--data-dir", dir.str(), "data", "show", "cuda"}, k_no_env);
  INFO(toml.err);
  REQUIRE(toml.exit_code == 0);
  CHECK_THAT(toml.out, Catch::Contains("as_of = \""));
  CHECK_THAT(toml.out,
             Catch::Contains("# from overlay " + dir.str() + "/cuda.toml:2\n[[release]]\ndriver_min = \"550.54.15\""));
  const auto json = run_gpuenv({"--data-dir", dir.str(), "data", "show", "cuda.toml", "--json"}, k_no_env);
  REQUIRE(json.exit_code == 0);
  const auto parsed = nlohmann::json::parse(json.out);
  int overlay_rows = 0;
  for (const auto& row : parsed["release"]) overlay_rows += row.contains("overlay") ? 1 : 0;
  CHECK(overlay_rows == 1);
  const auto unknown = run_gpuenv({"data", "show", "cudaa"}, k_no_env);
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("no data table cudaa.toml"));
}

TEST_CASE("version with verbose prints each table's horizon", "[cli][data][e2e]") {
  const auto result = run_gpuenv({"--version", "--verbose"}, k_no_env);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Catch::StartsWith("gpuenv "));
  for (const char* line :
       {"cuda.toml: CUDA up to ", "cudnn.toml: cuDNN up to ", "pytorch.toml: torch up to ",
        "tensorflow.toml: TensorFlow up to ", "images.toml: nvidia/cuda images at CUDA up to ", ", data as of 20"}) {
    CHECK_THAT(result.out, Catch::Contains(line));
  }
  TempDir dir("version");
  dir.write("cuda.toml", "[[release]]\nversion = \"99.1.2\"\nstatus = \"unverified\"\nsource = \"test\"\n");
  const auto with_overlay = run_gpuenv({"--version", "--verbose", "--data-dir", dir.str()}, k_no_env);
  CHECK_THAT(with_overlay.out, Catch::Contains("cuda.toml: CUDA up to 99.1.2"));
  CHECK_THAT(with_overlay.out, Catch::Contains("overlay: " + dir.str() + "/cuda.toml"));
}
