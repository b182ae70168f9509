// deploy/github/images.yml, the CI recipe docs/ci.md prints: its structure (every action pinned by a full commit
// SHA, the matrix wired from `gpuenv matrix --format github`, build-push-action with push or load, registry login,
// metadata-action, registry cache, free-disk-space), docs/ci.md quoting it verbatim, and the real workflow
// validator @action-validator/cli 0.6.0 (installed with `npm ci` from tests/dockerfile/workflow/package-lock.json
// into the build directory) accepting it and rejecting a known-bad file.

#include <catch2/catch.hpp>
#include <chrono>
#include <regex>

#include "dockerfile_support.hpp"
#include "support/npm_packages.hpp"
#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::util::contains;

const fs::path k_source(GPUENV_SOURCE_DIR);
const fs::path k_workflow = k_source / "deploy/github/images.yml";

/// The action-validator executable, installed once per build directory; empty and `why` when it cannot be had.
fs::path ensure_validator(std::string& why) {
  const fs::path modules =
      gpuenv::testing::npm_ci_once(k_source / "tests/dockerfile/workflow",
                                   fs::path(GPUENV_BINARY).parent_path().parent_path() / "npm-workflow", why);
  if (modules.empty()) return {};
  const fs::path validator = modules / ".bin/action-validator";
  if (!fs::exists(validator)) {
    why = "npm installed no action-validator in " + modules.string();
    return {};
  }
  return validator;
}

/// Every `uses:` reference in the workflow ("owner/name@ref # comment").
std::vector<std::string> uses_lines(const std::string& text) {
  std::vector<std::string> out;
  const std::regex uses(R"(uses:\s*(\S+)(.*))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), uses); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str() + (*it)[2].str());
  return out;
}

}  // namespace

TEST_CASE("workflow: every action is pinned by a full commit SHA with its release in a comment",
          "[dockerfile][workflow]") {
  const std::string text = read_text(k_workflow);
  const auto lines = uses_lines(text);
  REQUIRE(lines.size() >= 8);
  const std::regex pinned(R"([a-z0-9-]+/[a-z0-9-]+@[0-9a-f]{40} # v[0-9]+\.[0-9]+\.[0-9]+)");
  for (const std::string& line : lines) {
    INFO(line);
    CHECK(std::regex_match(line, pinned));
  }
}

TEST_CASE("workflow: the matrix comes from gpuenv and each cell builds, loads or pushes, and caches",
          "[dockerfile][workflow]") {
  const std::string text = read_text(k_workflow);
  for (const char* needle :
       {"gpuenv matrix \"$PROFILE\" --format github", "matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}",
        "./gpuenv dockerfile \"$PROFILE\" ${{ matrix.set }} -o Dockerfile", "uses: jlumbroso/free-disk-space@",
        "uses: docker/login-action@", "uses: docker/metadata-action@", "uses: docker/build-push-action@",
        "push: ${{ github.event_name != 'pull_request' }}", "load: ${{ github.event_name == 'pull_request' }}",
        "labels: ${{ steps.meta.outputs.labels }}", "cache-from: type=registry,", "type=registry,ref={0}:cache-{1}",
        "packages: write", "npx --yes dockerfile-utils@0.16.3 lint Dockerfile"}) {
    INFO(needle);
    CHECK(contains(text, needle));
  }
  // The free-disk-space step comes before anything large is pulled.
  CHECK(text.find("free-disk-space@") < text.find("build-push-action@"));
}

TEST_CASE("workflow: docs/ci.md quotes deploy/github/images.yml verbatim", "[dockerfile][workflow]") {
  const std::string docs = read_text(k_source / "docs/ci.md");
  const std::string workflow = read_text(k_workflow);
  CHECK(contains(docs, "```yaml\n" + workflow + "```\n"));
}

TEST_CASE("workflow: @action-validator/cli accepts the workflow and rejects a broken one",
          "[dockerfile][workflow][system-test][engine]") {
  std::string why;
  const fs::path validator = ensure_validator(why);
  if (validator.empty()) {
    WARN("SKIPPED: " << why);
    return;
  }
  auto system = gpuenv::system::make_real_system();
  const auto good = system->run({validator.string(), k_workflow.string()}, std::chrono::seconds(120));
  INFO(good.out << good.err);
  CHECK(good.exit_code == 0);
  const auto bad =
      system->run({validator.string(), (k_source / "tests/fixtures/dockerfile/invalid-workflow.yml").string()},
                  std::chrono::seconds(120));
  CHECK(bad.exit_code != 0);
  CHECK(contains(bad.out + bad.err, "stepz"));
}
