// `gpuenv profile check` end to end on the fixtures under tests/fixtures/profiles/{invalid,valid}: one row per file
// with the exit code and the rule id (exit 0/1) or a key part of the error message (exit 2).

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "support/fake_system.hpp"
#include "support/run_binary.hpp"

namespace {

using gpuenv::testing::fixture_path;
using gpuenv::testing::run_gpuenv;

/// One fixture and what `profile check --json` must say about it.
struct Row {
  const char* file;     ///< relative to tests/fixtures/profiles
  int exit_code;        ///< 0 ok (warnings allowed), 1 incompatible, 2 bad input
  const char* rule;     ///< exit 0/1: a finding id that must appear with `status`; nullptr for exit 2
  const char* status;   ///< "fail", "warn", "skip" (ignored for exit 2)
  const char* excerpt;  ///< exit 0/1: part of that finding's message; exit 2: part of stderr
};

// clang-format off
const Row k_rows[] = {
    // ---- bad input: exit 2, message on stderr ------------------------------------------------------------------
    {"invalid/bad-syntax.toml",                 2, nullptr, "", "bad-syntax.toml:3:"},
    {"invalid/unknown-key.toml",                2, nullptr, "", "did you mean `version`"},
    {"invalid/unknown-top-level-key.toml",      2, nullptr, "", "did you mean `description`"},
    {"invalid/unknown-table.toml",              2, nullptr, "", "did you mean `framework`"},
    {"invalid/version-as-number.toml",          2, nullptr, "", "`cuda.version` must be a string, not a number"},
    {"invalid/python-as-number.toml",           2, nullptr, "", "python-as-number.toml:11:10: `framework.python` must be a string"},
    {"invalid/cuda-version-two-parts.toml",     2, nullptr, "", "`cuda.version` = \"12.4\" is not valid"},
    {"invalid/driver-min-malformed.toml",       2, nullptr, "", "`driver.min` = \"r550\" is not valid"},
    {"invalid/name-invalid-characters.toml",    2, nullptr, "", "`name` = \"PyTorch 2.4\" is not valid"},
    {"invalid/distro-unknown.toml",             2, nullptr, "", "one of ubuntu, debian, rockylinux, rhel, ubi, amzn"},
    {"invalid/image-flavor-unknown.toml",       2, nullptr, "", "`image.flavor` = \"cudnn-runtime\" is not valid"},
    {"invalid/compute-capability-malformed.toml", 2, nullptr, "", "\"sm_90\", which is not a compute capability"},
    {"invalid/gpu-models-empty.toml",           2, nullptr, "", "`gpu.models` is empty"},
    {"invalid/missing-schema.toml",             2, nullptr, "", "missing required key `schema`"},
    {"invalid/schema-2.toml",                   2, nullptr, "", "schema-2.toml:1:10: unsupported schema 2"},
    {"invalid/schema-as-string.toml",           2, nullptr, "", "unsupported schema a string"},
    {"invalid/missing-os.toml",                 2, nullptr, "", "missing required field `os.distro`"},
    {"invalid/missing-cuda.toml",               2, nullptr, "", "missing required field `cuda.version`"},
    {"invalid/missing-name.toml",               2, nullptr, "", "missing required field `name`"},
    {"invalid/framework-without-python.toml",   2, nullptr, "", "[framework] is missing `python`"},
    {"invalid/variant-on-tensorflow.toml",      2, nullptr, "", "`framework.variant` applies to pytorch only"},
    {"invalid/matrix-empty.toml",               2, nullptr, "", "the matrix is empty"},
    {"invalid/matrix-key-not-a-field.toml",     2, nullptr, "", "`cuda.verison` is not a profile field; did you mean `cuda.version`"},
    {"invalid/matrix-name-axis.toml",           2, nullptr, "", "matrix: `name` cannot vary"},
    {"invalid/matrix-duplicate-value.toml",     2, nullptr, "", "lists \"12.4.1\" twice"},
    {"invalid/matrix-number-value.toml",        2, nullptr, "", "values of `framework.python` must be strings"},
    {"invalid/matrix-bad-exclude-value.toml",   2, nullptr, "", "matrix: `cuda.version` = \"12.6\" is not valid"},
    {"invalid/mirrors-pypi-http.toml",          2, nullptr, "", "mirrors-pypi-http.toml:12:8: `mirrors.pypi` = \"http://pypi.tuna.tsinghua.edu.cn/simple\" is not valid: it is plain http"},
    {"invalid/mirrors-registry-with-scheme.toml", 2, nullptr, "", "mirrors-registry-with-scheme.toml:13:12: `mirrors.registry` = \"https://docker.m.daocloud.io\" is not valid: it has a scheme"},
    {"invalid/mirrors-pytorch-without-style.toml", 2, nullptr, "", "mirrors-pytorch-without-style.toml:12:11: `mirrors.pytorch` needs `mirrors.pytorch_style`"},
    // ---- incompatible: exit 1, a failing finding -----------------------------------------------------------------
    {"invalid/cuda-12.7-not-a-release.toml",    1, "cuda.release",               "fail", "the nearest are 12.6.3 and 12.8.0"},
    {"invalid/driver-below-floor.toml",         1, "driver.cuda_minimum",        "fail", "below the CUDA 12.x floor 525.60.13"},
    {"invalid/driver-branch-below-min.toml",    1, "driver.branch",              "fail", "driver.branch 535 cannot satisfy driver.min 550.54.15"},
    {"invalid/cudnn-9.17-cuda-11.8.toml",       1, "cudnn.cuda_major",           "fail", "cuDNN 9.17 has no build for CUDA 11.x"},
    {"invalid/torch-2.4-python-3.13.toml",      1, "pytorch.python",             "fail", "supports Python 3.8-3.12, not 3.13"},
    {"invalid/torch-2.4.1-cuda-12.6.toml",      1, "pytorch.variant",            "fail", "torch 2.4.1 has no cu126 wheel"},
    {"invalid/torch-2.4.1-driver-470.toml",     1, "pytorch.driver",             "fail", "the cu124 wheel"},
    {"invalid/torch-release-unknown.toml",      1, "pytorch.release",            "fail", "torch 1.14.0 is not a PyTorch release"},
    {"invalid/torch-not-built-for-volta.toml",  1, "pytorch.compute_capability", "fail", "not built for compute capability 7.0"},
    {"invalid/tensorflow-2.15-cuda-11.8.toml",  1, "tensorflow.cuda",            "fail", "CUDA 12.2 / cuDNN 8.9, not CUDA 11.8.0"},
    {"invalid/tensorflow-python-out-of-range.toml", 1, "tensorflow.python",      "fail", "supports Python 3.7-3.10, not 3.12"},
    {"invalid/tensorflow-cudnn-8-on-2.20.toml", 1, "tensorflow.cudnn",           "fail", "not cuDNN 8"},
    {"invalid/image-os-not-published.toml",     1, "image.tag",                  "fail", "12.4.1-runtime-ubuntu24.04 was never published"},
    {"invalid/cudnn-with-base-flavor.toml",     1, "image.tag",                  "fail", "no cuDNN variant of `base` images"},
    {"invalid/cudnn9-on-cuda-12.2.2-image.toml", 1, "image.cudnn",               "fail", "carries cuDNN 8.9.6.50, not cuDNN 9"},
    {"invalid/cuda13-on-v100.toml",             1, "gpu.cuda_support",           "fail", "CUDA 13.0.2 dropped compute capability 7.0 (Volta)"},
    {"invalid/cuda13-on-cc-7.0.toml",           1, "gpu.cuda_support",           "fail", "the last CUDA to support it is 12.9"},
    {"invalid/gpu-model-unknown.toml",          1, "gpu.model",                  "fail", "did you mean `H100`"},
    {"invalid/compute-capability-4.2.toml",     1, "gpu.cuda_support",           "fail", "compute capability 4.2 is not a known NVIDIA architecture"},
    {"invalid/matrix-with-invalid-cell.toml",   1, "pytorch.python",             "fail", "not 3.13"},
    {"invalid/matrix-arch-no-aarch64-wheel.toml", 1, "pytorch.variant",          "fail", "publishes no Linux aarch64 cu124 wheel"},  // the arm64 cell of an os.arch axis
    // ---- usable: exit 0, possibly with a warning -----------------------------------------------------------------
    {"valid/torch-1.13.1-cu117.toml",           0, "pytorch.variant",            "pass", "torch 1.13.1+cu117 exists"},
    {"valid/driver-between-floor-and-minimum.toml", 0, "driver.cuda_minimum",    "warn", "at or above the CUDA 12.x minor-version-compatibility floor"},
    {"valid/driver-branch-below-cuda-minimum.toml", 0, "driver.branch",          "warn", "driver branch 550 is below CUDA 12.5.1's minimum 555.42.06"},
    {"valid/tensorflow-2.15-cuda-12.4.toml",    0, "tensorflow.cuda",            "warn", "CUDA 12.4.1 is an untested pairing"},
    {"valid/cuda-eol-image.toml",               0, "image.tag",                  "warn", "12.1.0-runtime-ubuntu22.04 is end-of-life"},
    {"valid/cudnn-minor-not-in-image.toml",     0, "image.cudnn",                "warn", "carries cuDNN 9.1.0.70, not 9.5"},
    {"valid/cudnn-8-on-cuda-12.4.toml",         0, "cudnn.cuda_version",         "warn", "not listed as supported with CUDA 12.4"},
    {"valid/torch-variant-other-cuda-major.toml", 0, "pytorch.variant_cuda",     "warn", "two CUDA runtimes of different majors"},
    {"valid/debian-install-only.toml",          0, "image.os",                   "skip", "no nvidia/cuda images for debian"},
    {"valid/rhel-maps-to-ubi.toml",             0, "image.tag",                  "pass", "nvidia/cuda:12.4.1-cudnn-runtime-ubi9 is published"},
    {"valid/matrix-exclude-include.toml",       0, "image.tag",                  "warn", "nvidia/cuda:11.8.0-base-ubuntu22.04 is due for deletion"},  // PyTorch: base by default; CUDA 11 is past NVIDIA's two supported majors
    {"valid/matrix-arch.toml",                  0, "image.tag",                  "warn", "nvidia/cuda:12.8.1-base-ubuntu24.04 is end-of-life"},  // an os.arch axis: both architectures; 12.8.2 supersedes 12.8.1
    {"valid/matrix-no-arch.toml",               0, "image.tag",                  "warn", "nvidia/cuda:12.8.1-base-ubuntu24.04 is end-of-life"},  // no os.arch: every cell x86_64
};
// clang-format on

/// Every finding of every cell in a `profile check --json` document.
std::vector<nlohmann::json> all_findings(const nlohmann::json& result) {
  std::vector<nlohmann::json> out;
  for (const auto& cell : result.at("cells")) {
    for (const auto& finding : cell.at("findings")) out.push_back(finding);
  }
  return out;
}

bool has_finding(const std::vector<nlohmann::json>& findings, const std::string& id, const std::string& status,
                 const std::string& excerpt) {
  return std::any_of(findings.begin(), findings.end(), [&](const nlohmann::json& f) {
    return f.at("id") == id && f.at("status") == status &&
           f.at("message").get<std::string>().find(excerpt) != std::string::npos;
  });
}

/// "invalid/x.toml", ... for the .toml files in tests/fixtures/profiles/<relative>.
std::vector<std::string> toml_files_under(const std::string& relative) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_path("profiles/" + relative))) {
    if (entry.path().extension() == ".toml") out.push_back(relative + "/" + entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("profile check gives each fixture its exit code, rule id and message", "[cli][e2e][system-test]") {
  for (const Row& row : k_rows) {
    INFO("fixture " << row.file);
    const auto result = run_gpuenv({"profile", "check", "--json", fixture_path(std::string("profiles/") + row.file)});
    INFO("stdout: " << result.out);
    INFO("stderr: " << result.err);
    CHECK(result.exit_code == row.exit_code);
    if (row.exit_code == 2) {
      CHECK(result.out.find("findings") == std::string::npos);  // no check result, at most an empty `[]`
      CHECK(result.err.find(row.excerpt) != std::string::npos);
      continue;
    }
    const auto json = nlohmann::json::parse(result.out, nullptr, false);
    REQUIRE_FALSE(json.is_discarded());
    CHECK(json.at("valid") == (row.exit_code == 0));
    CHECK(has_finding(all_findings(json), row.rule, row.status, row.excerpt));
    if (row.exit_code == 0) {
      // Exit 0 means no cell has a failing finding.
      for (const auto& f : all_findings(json)) CHECK(f.at("status") != "fail");
    }
  }
}

TEST_CASE("parse errors point at file:line:column", "[cli][e2e]") {
  const auto result = run_gpuenv({"profile", "check", fixture_path("profiles/invalid/bad-syntax.toml")});
  CHECK(result.exit_code == 2);
  // "…/bad-syntax.toml:3:4: Error while parsing table header …", then the remedy.
  CHECK(result.err.find("bad-syntax.toml:3:4: ") != std::string::npos);
  CHECK(result.err.find("fix: ") != std::string::npos);
}

TEST_CASE("a failing check prints each failed rule with its remedy", "[cli][e2e]") {
  const auto result = run_gpuenv({"profile", "check", fixture_path("profiles/invalid/cuda-12.7-not-a-release.toml")});
  CHECK(result.exit_code == 1);
  CHECK(result.out.find("FAIL  cuda.release") != std::string::npos);
  CHECK(result.out.find("set cuda.version to 12.6.3 or 12.8.0") != std::string::npos);
  CHECK(result.out.find("verdict: INCOMPATIBLE") != std::string::npos);
}

TEST_CASE("a warning alone keeps exit 0 and says so in the verdict", "[cli][e2e]") {
  const auto result = run_gpuenv({"profile", "check", fixture_path("profiles/valid/tensorflow-2.15-cuda-12.4.toml")});
  CHECK(result.exit_code == 0);
  CHECK(result.out.find("WARN  tensorflow.cuda") != std::string::npos);
  CHECK(result.out.find("verdict: OK (with warnings) (0 failed, 1 warnings)") != std::string::npos);
}

TEST_CASE("checking several files exits with the worst result", "[cli][e2e]") {
  const std::string ok = fixture_path("profiles/valid/torch-1.13.1-cu117.toml");
  const std::string incompatible = fixture_path("profiles/invalid/torch-2.4-python-3.13.toml");
  const std::string bad = fixture_path("profiles/invalid/unknown-key.toml");
  CHECK(run_gpuenv({"profile", "check", ok, incompatible}).exit_code == 1);
  CHECK(run_gpuenv({"profile", "check", incompatible, bad, ok}).exit_code == 2);
  CHECK(run_gpuenv({"profile", "check", ok, ok}).exit_code == 0);
}

TEST_CASE("every fixture has a row in the table and a line in the README", "[cli][e2e]") {
  std::set<std::string> in_table;
  for (const Row& row : k_rows) in_table.insert(row.file);
  const std::string readme = gpuenv::testing::read_fixture("profiles/README.md");
  std::vector<std::string> files = toml_files_under("invalid");
  const std::vector<std::string> valid = toml_files_under("valid");
  files.insert(files.end(), valid.begin(), valid.end());
  CHECK(toml_files_under("invalid").size() >= 30);
  for (const std::string& file : files) {
    INFO(file);
    CHECK(in_table.count(file) == 1);
    CHECK(readme.find("`" + file + "`") != std::string::npos);
  }
  CHECK(in_table.size() == files.size());
}
