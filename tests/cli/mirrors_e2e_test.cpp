// [mirrors] through the binary: `profile show` prints the effective sources, `profile check` and `dockerfile`
// refuse a bad mirror (from a file or from --set) with exit 2 and a message naming the place and the field.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "support/fake_system.hpp"
#include "support/run_binary.hpp"

namespace {

using gpuenv::testing::fixture_path;
using gpuenv::testing::run_gpuenv;

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("mirrors e2e: profile show lists the effective sources of a profile with [mirrors], none without",
          "[cli][e2e][mirrors]") {
  const auto text = run_gpuenv({"profile", "show", "pytorch-2.9-cu128-cn"});
  REQUIRE(text.exit_code == 0);
  CHECK(has(text.out, "\nmirrors.registry: docker.m.daocloud.io\n"));
  CHECK(has(text.out, "\nsources ([mirrors] applied):\n"));
  CHECK(has(text.out, "\n  image: docker.m.daocloud.io/nvidia/cuda:12.8.1-base-ubuntu24.04\n"));
  CHECK(has(text.out, "\n  torch_wheels: https://mirrors.aliyun.com/pytorch-wheels/cu128/\n"));
  CHECK(has(text.out, "\n  torch_wheels_style: find-links\n"));

  const auto json = nlohmann::json::parse(run_gpuenv({"profile", "show", "--json", "pytorch-2.9-cu128-cn"}).out);
  const auto& sources = json.at("sources");
  CHECK(sources.at("cuda_repo") == "https://mirrors.aliyun.com/nvidia-cuda");
  CHECK(sources.at("container_toolkit") == "https://mirrors.ustc.edu.cn/libnvidia-container");
  CHECK(sources.at("pypi") == "https://pypi.tuna.tsinghua.edu.cn/simple");
  // No python_downloads in the profile: uv's default.
  CHECK(sources.at("python_downloads") == "https://github.com/astral-sh/python-build-standalone/releases/download");

  const auto upstream = nlohmann::json::parse(run_gpuenv({"profile", "show", "--json", "pytorch-2.9-cu128"}).out);
  CHECK_FALSE(upstream.contains("sources"));
  CHECK_FALSE(has(run_gpuenv({"profile", "show", "pytorch-2.9-cu128"}).out, "sources"));
}

TEST_CASE("mirrors e2e: a bad mirror is bad input (exit 2) naming file:line, the field and the fix",
          "[cli][e2e][mirrors]") {
  const std::string file = fixture_path("profiles/invalid/mirrors-pypi-http.toml");
  for (const char* command : {"profile", "dockerfile"}) {
    INFO(command);
    const auto result =
        std::string(command) == "profile" ? run_gpuenv({"profile", "check", file}) : run_gpuenv({"dockerfile", file});
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK(has(result.err,
              "mirrors-pypi-http.toml:12:8: `mirrors.pypi` = \"http://pypi.tuna.tsinghua.edu.cn/simple\" "
              "is not valid: it is plain http; a mirror must be https"));
    CHECK(has(result.err, "fix: write the https URL of a PyPI simple index"));
  }
}

TEST_CASE("mirrors e2e: --set reaches [mirrors], validated the same way", "[cli][e2e][mirrors]") {
  const auto good = run_gpuenv({"dockerfile", "pytorch-2.9-cu128", "--set", "mirrors.registry=docker.m.daocloud.io"});
  REQUIRE(good.exit_code == 0);
  CHECK(has(good.out, "\nFROM ${GPUENV_REGISTRY}/nvidia/cuda:12.8.1-base-ubuntu24.04\n"));

  const auto bad = run_gpuenv({"dockerfile", "pytorch-2.9-cu128", "--set", "mirrors.registry=docker.m.daocloud.io;id"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.out.empty());
  CHECK(has(bad.err, "`mirrors.registry` = \"docker.m.daocloud.io;id\" is not valid: it contains `;`"));
}
