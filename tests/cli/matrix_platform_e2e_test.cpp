// `gpuenv matrix --format github` for a multi-architecture image workflow (issue 26, item 7): each valid cell
// carries its Docker platform, the GitHub-hosted runner of that architecture (arm64 natively on
// ubuntu-24.04-arm, GitHub's Linux arm64 hosted runner label), the file `gpuenv dockerfile --all` writes for it
// and an image tag; the files and the matrix agree.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using gpuenv::testing::fixture_path;
using gpuenv::testing::run_gpuenv;

}  // namespace

TEST_CASE("matrix --format github: an os.arch axis gives each cell its platform and runner", "[cli][e2e][matrix]") {
  const std::string profile = fixture_path("profiles/valid/matrix-arch.toml");
  const auto result = run_gpuenv({"matrix", profile, "--format", "github"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto include = nlohmann::json::parse(result.out).at("include");
  REQUIRE(include.size() == 2);
  CHECK(include[0].at("os.arch") == "x86_64");
  CHECK(include[0].at("platform") == "linux/amd64");
  CHECK(include[0].at("runner") == "ubuntu-24.04");
  CHECK(include[1].at("os.arch") == "arm64");
  CHECK(include[1].at("platform") == "linux/arm64");
  CHECK(include[1].at("runner") == "ubuntu-24.04-arm");
  CHECK(include[1].at("file") == "matrix-arch_os.arch-arm64.Dockerfile");
  CHECK(include[1].at("tag") == "matrix-arch_os.arch-arm64");

  // The files the workflow builds are the ones `--all` writes.
  const fs::path dir = fs::temp_directory_path() / ("gpuenv-matrix-arch-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto all = run_gpuenv({"dockerfile", profile, "--all", "--out-dir", dir.string()});
  INFO(all.err);
  CHECK(all.exit_code == 0);
  for (const auto& cell : include) CHECK(fs::exists(dir / cell.at("file").get<std::string>()));
  fs::remove_all(dir);
}

TEST_CASE("matrix --format github: a profile without os.arch builds for linux/amd64", "[cli][e2e][matrix]") {
  const auto result = run_gpuenv({"matrix", "pytorch-matrix", "--format", "github"});
  REQUIRE(result.exit_code == 0);
  const auto matrix = nlohmann::json::parse(result.out);  // the loop below reads into it
  for (const auto& cell : matrix.at("include")) {
    CHECK(cell.at("platform") == "linux/amd64");
    CHECK(cell.at("runner") == "ubuntu-24.04");
    const std::string tag = cell.at("tag");
    CHECK(tag.size() <= 128);
    CHECK(cell.at("file") == tag + ".Dockerfile");
  }
}

TEST_CASE("matrix: an os.arch cell without a wheel for its architecture is invalid and left out of the build matrix",
          "[cli][e2e][matrix]") {
  // PyTorch 2.4.1 published no Linux aarch64 CUDA wheel (pytorch/pytorch issue 134790: none on PyPI for 2.4.0,
  // cu124 aarch64 builds only in the nightlies; data/compat/pytorch.toml aarch64_variants = []).
  const std::string profile = fixture_path("profiles/invalid/matrix-arch-no-aarch64-wheel.toml");
  const auto json = run_gpuenv({"matrix", profile, "--format", "json"});
  INFO(json.out << json.err);
  const auto cells = nlohmann::json::parse(json.out).at("cells");
  REQUIRE(cells.size() == 2);
  for (const auto& cell : cells) {
    const bool arm64 = cell.at("cell").at("os.arch") == "arm64";
    CHECK(cell.at("valid") == !arm64);
  }
  CHECK(json.out.find("aarch64") != std::string::npos);  // the finding says why

  const auto github = run_gpuenv({"matrix", profile, "--format", "github"});
  REQUIRE(github.exit_code == 0);
  const auto include = nlohmann::json::parse(github.out).at("include");
  REQUIRE(include.size() == 1);
  CHECK(include[0].at("platform") == "linux/amd64");
}
