// Every generated Dockerfile passes the offline linter dockerfile-utils@0.16.3 with zero errors and zero warnings,
// and gpuenv's own structural checks (tag published, stages, USER, package-manager discipline) where that linter
// is blind. The files: dockerfiles/, the golden files, and every valid cell of the test matrices and the shipped
// profiles, with and without --with-doctor.
//
// The linter is installed once per build tree from tests/dockerfile/lint's lock file (npm_ci_once, under a lock;
// later runs find it there). Without node and npm, or offline, the linter part is skipped with a visible warning;
// the structural checks always run.

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "dockerfile_support.hpp"
#include "support/npm_packages.hpp"
#include "support/skip.hpp"
#include "support/source_tree.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::testing::run_gpuenv;
using gpuenv::util::contains;

using gpuenv::testing::k_source;
/// GPUENV_BINARY is <build>/src/gpuenv.
const fs::path k_build = fs::path(GPUENV_BINARY).parent_path().parent_path();

/// Writes every valid cell of `profile` (a name or a path relative to the source tree) into a fresh subdirectory.
std::vector<fs::path> all_cells(const fs::path& root, const std::string& profile, bool with_doctor) {
  const fs::path dir = root / (fs::path(profile).stem().string() + (with_doctor ? "-doctor" : ""));
  fs::create_directories(dir);
  std::vector<std::string> args{"dockerfile", profile, "--all", "--out-dir", dir.string()};
  if (with_doctor) args.emplace_back("--with-doctor");
  const auto result = run_in_source(args);
  INFO(profile << ": " << result.err);
  CHECK((result.exit_code == 0 || result.exit_code == 1));  // 1: some fixtures hold cells that are refused on purpose
  std::vector<fs::path> out;
  for (const std::string& name : files_in(dir, ".Dockerfile")) out.push_back(dir / name);
  return out;
}

/// Every generated Dockerfile the tests know of.
std::vector<fs::path> generated_files(const fs::path& scratch) {
  std::vector<fs::path> files;
  for (const std::string& name : files_in(k_source / "dockerfiles", ".Dockerfile"))
    files.push_back(k_source / "dockerfiles" / name);
  const fs::path golden = k_source / "tests/fixtures/dockerfile/golden";
  for (const std::string& name : files_in(golden, ".Dockerfile")) files.push_back(golden / name);
  for (const std::string& name : files_in(k_source / "tests/fixtures/dockerfile", ".toml")) {
    const std::string path = "tests/fixtures/dockerfile/" + name;
    for (const fs::path& file : all_cells(scratch, path, false)) files.push_back(file);
    if (name != "matrix-1000.toml") {
      for (const fs::path& file : all_cells(scratch, path, true)) files.push_back(file);
    }
  }
  const auto list = run_gpuenv({"profile", "list"});
  for (std::string_view line : gpuenv::util::split_lines(list.out)) {
    const std::string name(line.substr(0, line.find(' ')));
    if (name.empty()) continue;
    for (const fs::path& file : all_cells(scratch, name, true)) files.push_back(file);
  }
  return files;
}

}  // namespace

TEST_CASE(
    "dockerfile lint: every generated Dockerfile passes gpuenv's structural checks and dockerfile-utils with zero "
    "errors and warnings",
    "[dockerfile][lint][system-test][engine]") {
  TempDir scratch;
  const std::vector<fs::path> files = generated_files(scratch.path());
  REQUIRE(files.size() >= 100);
  std::size_t problems = 0;
  for (const fs::path& file : files) {
    const auto found = own_problems(read_text(file));
    INFO(file.string() << "\n" << gpuenv::util::join(found, "\n"));
    CHECK(found.empty());
    problems += found.size();
  }
  WARN("gpuenv structural checks: " << files.size() << " Dockerfiles, " << problems << " problems");

  std::string why;
  const fs::path modules = gpuenv::testing::npm_ci_once(k_source / "tests/dockerfile/lint", k_build / "npm-lint", why);
  GPUENV_SKIP_UNLESS(!modules.empty(), "dockerfile-utils lint not run: " << why);
  std::vector<std::string> argv{"node", (k_source / "tests/dockerfile/dockerfile_lint.js").string(), modules.string()};
  for (const fs::path& file : files) argv.push_back(file.string());
  auto system = gpuenv::system::make_real_system();
  const auto run = system->run(argv, std::chrono::seconds(120));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto result = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE_FALSE(result.is_discarded());
  INFO(result.at("problems").dump(2));
  CHECK(result.at("files") == files.size());
  CHECK(result.at("errors") == 0);
  CHECK(result.at("warnings") == 0);
  CHECK(result.at("other") == 0);
  WARN("dockerfile-utils 0.16.3: " << files.size() << " Dockerfiles linted, " << result.at("errors") << " errors, "
                                   << result.at("warnings") << " warnings");

  // The linter is not blind to everything: a broken file is caught (guards against a silently failing setup).
  const fs::path broken = scratch.path() / "broken.Dockerfile";
  write_text(broken, "FROM nvidia/cuda:\nFRM x\nWORKDIR relative\nHEALTHCHECK --interval=abc CMD true\n");
  const auto bad = system->run(
      {"node", (k_source / "tests/dockerfile/dockerfile_lint.js").string(), modules.string(), broken.string()},
      std::chrono::seconds(60));
  const auto bad_result = nlohmann::json::parse(bad.out, nullptr, false);
  REQUIRE_FALSE(bad_result.is_discarded());
  CHECK(bad_result.at("errors").get<int>() >= 2);
  CHECK(bad_result.at("warnings").get<int>() >= 1);
  // And its own CLI agrees on a generated file (exit 0, JSON [] when clean).
  const auto cli = system->run({(modules / ".bin/dockerfile-utils").string(), "lint", "--json", files.front().string()},
                               std::chrono::seconds(60));
  CHECK(cli.exit_code == 0);
  CHECK(gpuenv::util::trim(cli.out) == "[]");
}
