// deploy/github/images.yml, the CI recipe docs/ci.md prints: its structure (every action pinned by a full commit
// SHA; the released gpuenv downloaded and checked, nothing of this repository built; the matrix from `gpuenv matrix
// --format github` with its exit code kept; per-platform runners; cache-only pull requests; SBOM, provenance, scan
// and signature on pushes; the GPU job as an arbitrary uid), the plan step's shell run by bash, docs/ci.md quoting it
// verbatim, and the real workflow validator @action-validator/cli 0.6.0 (installed with `npm ci` from
// tests/dockerfile/workflow/package-lock.json into the build directory) accepting it and rejecting a known-bad file.

#include <catch2/catch.hpp>
#include <chrono>
#include <regex>

#include "dockerfile_support.hpp"
#include "support/npm_packages.hpp"
#include "support/skip.hpp"
#include "support/source_tree.hpp"
#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::util::contains;

using gpuenv::testing::k_source;
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

/// The text of one job under `jobs:` (from "  <name>:" to the next job at the same indent), or "".
std::string job_text(const std::string& text, const std::string& name) {
  const std::size_t start = text.find("\n  " + name + ":\n");
  if (start == std::string::npos) return {};
  static const std::regex next_job(R"(\n  [a-z][a-z0-9-]*:\n)");
  const auto from = text.begin() + static_cast<std::ptrdiff_t>(start + 1);
  std::smatch match;
  if (!std::regex_search(from, text.end(), match, next_job)) return std::string(from, text.end());
  return std::string(from, match[0].first + 1);
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

TEST_CASE("workflow: portable: the released gpuenv by URL and SHA-256, nothing of this repository built",
          "[dockerfile][workflow]") {
  const std::string text = read_text(k_workflow);
  for (const char* needle : {"GPUENV_URL: ", "GPUENV_SHA256: ", "curl -fsSL --retry 3 -o gpuenv \"$GPUENV_URL\"",
                             "echo \"$GPUENV_SHA256  gpuenv\" | sha256sum -c -"}) {
    INFO(needle);
    CHECK(contains(text, needle));
  }
  for (const char* absent : {"scripts/", "cmake", "build/release", "regen-dockerfiles"}) {
    INFO(absent);
    CHECK_FALSE(contains(text, absent));
  }
}

TEST_CASE("workflow: the matrix comes from gpuenv, each cell builds on its platform's runner, and main ships it",
          "[dockerfile][workflow]") {
  const std::string text = read_text(k_workflow);
  for (const char* needle : {"matrix=$(./gpuenv matrix \"$PROFILE\" --format github)\n          echo "
                             "\"matrix=$matrix\" >> \"$GITHUB_OUTPUT\"",
                             "./gpuenv dockerfile \"$PROFILE\" --all --out-dir images",
                             "matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}",
                             "runs-on: ${{ matrix.runner }}",
                             "platforms: ${{ matrix.platform }}",
                             "file: images/${{ matrix.file }}",
                             "concurrency:",
                             "uses: jlumbroso/free-disk-space@",
                             "uses: docker/login-action@",
                             "uses: docker/metadata-action@",
                             "uses: docker/build-push-action@",
                             "labels: ${{ steps.meta.outputs.labels }}",
                             "cache-from: type=registry,",
                             "cache-to: type=registry,ref=${{ env.IMAGE_REF }}:cache-${{ matrix.tag }},mode=max",
                             "uses: anchore/scan-action@",
                             "severity-cutoff: critical",
                             "uses: sigstore/cosign-installer@",
                             "cosign sign --yes \"$IMAGE_REF@$DIGEST\"",
                             "SOURCE_DATE_EPOCH=$(git log -1",
                             "npx --yes dockerfile-utils@0.16.3 lint"}) {
    INFO(needle);
    CHECK(contains(text, needle));
  }
  // The free-disk-space step comes before anything large is pulled; the scan and the signature come after the push.
  CHECK(text.find("free-disk-space@") < text.find("build-push-action@"));
  CHECK(text.find("build-push-action@") < text.find("anchore/scan-action@"));
  CHECK(text.find("build-push-action@") < text.find("cosign sign --yes"));
}

TEST_CASE("workflow: pull requests build with a read-only token, only push events get packages/id-token write",
          "[dockerfile][workflow]") {
  // A job's `permissions:` takes only read, write or none per scope, never an expression (GitHub's workflow syntax,
  // jobs.<job_id>.permissions), so the write permissions must sit in a job whose `if:` excludes pull_request.
  const std::string text = read_text(k_workflow);
  // The job-level `if:` (four spaces in), not a step's (eight).
  const std::string pull_request_only = "\n    if: github.event_name == 'pull_request'\n";
  const std::string never_pull_request = "\n    if: github.event_name != 'pull_request'\n";
  const std::regex job_name(R"(\n  ([a-z][a-z0-9-]*):\n    )");
  const std::string jobs = text.substr(text.find("\njobs:\n"));
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(jobs.begin(), jobs.end(), job_name); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1].str());
  CHECK(names == std::vector<std::string>{"plan", "pr-build", "image", "gpu"});
  for (const std::string& name : names) {
    INFO(name);
    const std::string job = job_text(text, name);
    REQUIRE_FALSE(job.empty());
    const bool writes = contains(job, ": write");
    if (writes) CHECK(contains(job, never_pull_request));
    if (!contains(job, never_pull_request)) {
      CHECK_FALSE(writes);  // a job a pull request runs
      CHECK_FALSE(contains(job, "push: true"));
      CHECK_FALSE(contains(job, "cosign sign"));
    }
  }
  // The top-level default is read-only, so a job without its own block (plan) writes nothing either.
  CHECK(contains(text, "\npermissions:\n  contents: read\n\n"));
  const std::string pr = job_text(text, "pr-build");
  CHECK(contains(pr, pull_request_only));
  CHECK(contains(pr, "      contents: read\n      packages: read"));
  CHECK(contains(pr, "push: false\n          outputs: type=cacheonly\n"));
  CHECK_FALSE(contains(pr, "cache-to:"));
  const std::string image = job_text(text, "image");
  CHECK(contains(image, never_pull_request));
  CHECK(contains(image, "      packages: write\n      id-token: write"));
  for (const char* needle : {"push: true", "sbom: true", "provenance: mode=max", "cosign sign --yes"}) {
    INFO(needle);
    CHECK(contains(image, needle));
  }
  // Beyond its `if:`, nothing in it depends on the event.
  CHECK(image.find("github.event_name") == image.find(never_pull_request) + std::string("\n    if: ").size());
  CHECK(image.find("github.event_name", image.find(never_pull_request) + 10) == std::string::npos);
}

TEST_CASE("workflow: the GPU job runs the pushed digest as an arbitrary uid and checks CUDA, a matmul, torch.compile",
          "[dockerfile][workflow]") {
  const std::string text = read_text(k_workflow);
  const std::size_t gpu = text.find("\n  gpu:\n");
  REQUIRE(gpu != std::string::npos);
  const std::string job = text.substr(gpu);
  CHECK(contains(job, "if: github.event_name != 'pull_request'"));
  CHECK(contains(
      job, "runs-on: [self-hosted, linux, \"${{ matrix.platform == 'linux/arm64' && 'ARM64' || 'X64' }}\", gpu]"));
  CHECK(contains(job,
                 "docker run --rm --user 1000650000:0 --gpus all --ipc=host \"$IMAGE_REF@$digest\" python -c "
                 "\"$RUNTIME_CHECK\""));
  for (const char* needle : {"assert torch.cuda.is_available()", "a @ a", "torch.cuda.synchronize()",
                             "torch.compile(lambda x:", "for device in ('cuda', 'cpu'):", "getpass.getuser()"}) {
    INFO(needle);
    CHECK(contains(text, needle));
  }
}

TEST_CASE("workflow: every job that uses the image reference lowercases it first, as bash runs the step",
          "[dockerfile][workflow]") {
  // OCI references are lowercase; github.repository keeps the owner's capitals, so ghcr.io/My-Org/... fails the cache
  // export, the push, cosign and docker run ("repository name must be lowercase": docker/build-push-action#424).
  const std::string text = read_text(k_workflow);
  const std::string step = "run: echo \"IMAGE_REF=${IMAGE,,}\" >> \"$GITHUB_ENV\"";
  for (const char* name : {"\n  pr-build:\n", "\n  image:\n", "\n  gpu:\n"}) {
    INFO(name);
    const std::size_t job = text.find(name);
    REQUIRE(job != std::string::npos);
    const std::size_t lowered = text.find(step, job);
    REQUIRE(lowered != std::string::npos);
    const std::size_t first_use = text.find("IMAGE_REF", job);
    CHECK(first_use > text.rfind("\n", lowered));  // nothing reads IMAGE_REF before the step sets it
  }
  // Only the lowercasing steps read the raw IMAGE.
  CHECK_FALSE(contains(text, "env.IMAGE }}"));
  CHECK_FALSE(contains(text, "env.IMAGE,"));
  CHECK_FALSE(contains(text, "$IMAGE@"));
  // The step's command, run by bash -e as GitHub runs it.
  TempDir dir;
  write_text(dir.path() / "step.sh", step.substr(std::string("run: ").size()) + "\n");
  const auto result = gpuenv::system::make_real_system()->run(
      {"env", "-i", "PATH=/usr/bin:/bin", "IMAGE=ghcr.io/My-Org/GPU-Images/pytorch",
       "GITHUB_ENV=" + (dir.path() / "env").string(), "bash", "-e", (dir.path() / "step.sh").string()},
      std::chrono::seconds(30));
  CHECK(result.exit_code == 0);
  CHECK(read_text(dir.path() / "env") == "IMAGE_REF=ghcr.io/my-org/gpu-images/pytorch\n");
}

TEST_CASE("workflow: the plan step fails when gpuenv matrix fails (bash -e, as GitHub runs a step)",
          "[dockerfile][workflow]") {
  // The step's script as written, run by bash -e (GitHub's default shell on Linux runners) with a stand-in for the
  // downloaded binary that prints a matrix or fails: exactly the shell semantics the step relies on.
  const std::string text = read_text(k_workflow);
  const std::string marker = "        id: plan\n        run: |\n";
  const std::size_t at = text.find(marker);
  REQUIRE(at != std::string::npos);
  std::string script;
  for (std::size_t line = at + marker.size(); text.compare(line, 10, "          ") == 0;) {
    const std::size_t end = text.find('\n', line);
    script += text.substr(line + 10, end - line - 10) + "\n";
    line = end + 1;
  }
  REQUIRE(contains(script, "gpuenv matrix"));
  TempDir dir;
  write_text(dir.path() / "step.sh", script);
  auto system = gpuenv::system::make_real_system();
  const auto run_step = [&](const std::string& stand_in) {
    write_text(dir.path() / "gpuenv", "#!/bin/sh\n" + stand_in);
    fs::permissions(dir.path() / "gpuenv", fs::perms::owner_all);
    fs::remove(dir.path() / "output");
    return system->run(
        {"env", "-i", "PATH=/usr/bin:/bin", "PROFILE=p", "GITHUB_OUTPUT=" + (dir.path() / "output").string(), "sh",
         "-c", "cd \"$0\" && exec bash -e step.sh", dir.str()},
        std::chrono::seconds(30));
  };
  const auto ok = run_step("echo '{\"include\":[]}'\n");
  CHECK(ok.exit_code == 0);
  CHECK(read_text(dir.path() / "output") == "matrix={\"include\":[]}\n");
  const auto failing = run_step("echo 'partial'\nexit 1\n");
  CHECK(failing.exit_code != 0);
  CHECK_FALSE(fs::exists(dir.path() / "output"));
  // The form the step avoids: the echo's status hides the command substitution's.
  write_text(dir.path() / "step.sh",
             "echo \"matrix=$(./gpuenv matrix \"$PROFILE\" --format github)\" >> \"$GITHUB_OUTPUT\"\n");
  CHECK(run_step("exit 1\n").exit_code == 0);
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
  GPUENV_SKIP_UNLESS(!validator.empty(), why);
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
