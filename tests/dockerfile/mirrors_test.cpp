// [mirrors] in generated Dockerfiles: nothing changes without them (every shipped profile, an empty table), the
// profile hash ignores them, each location is a build argument, and the torch wheels come in the mirror's style.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compat/rules.hpp"
#include "dockerfile/dockerfile.hpp"
#include "dockerfile/lint.hpp"
#include "dockerfile_support.hpp"
#include "profile/catalog.hpp"
#include "profile/parser.hpp"

namespace {

using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::profile::Profile;
using gpuenv::util::contains;

/// Tokens only a Dockerfile with mirrors holds.
const char* const k_mirror_tokens[] = {"GPUENV_REGISTRY",          "PIP_INDEX_URL",
                                       "UV_DEFAULT_INDEX",         "GPUENV_TORCH_WHEELS",
                                       "UV_PYTHON_INSTALL_MIRROR", "[mirrors]"};

gpuenv::dockerfile::Options mirror_options() {
  gpuenv::dockerfile::Options out;
  out.gpuenv_version = "0.0.0-test";
  out.profile_argument = "test-profile";
  return out;
}

/// The Dockerfile of a profile that passes the checks (render's precondition).
std::string render_with_mirrors(const Profile& p) {
  for (const auto& f : gpuenv::compat::check_profile(p, kb(), gpuenv::compat::Purpose::dockerfile)) {
    INFO(f.id << ": " << f.message);
    REQUIRE(f.status != gpuenv::report::Status::fail);
  }
  auto text = gpuenv::dockerfile::render(p, kb(), data(), mirror_options());
  INFO((text ? std::string() : text.error().message));
  REQUIRE(text.has_value());
  return *text;
}

Profile parse(const std::string& text) {
  auto parsed = gpuenv::profile::parse_profile(text, "t.toml");
  INFO((parsed ? std::string() : parsed.error().message));
  REQUIRE(parsed.has_value());
  return parsed->base;
}

Profile shipped(const std::string& name) {
  for (const auto& row : gpuenv::profile::shipped_profiles()) {
    if (row.name == name) return parse(row.text);
  }
  FAIL("no shipped profile " << name);
  return {};
}

/// A torch profile on Ubuntu 24.04 (the OS's Python 3.12) or UBI 8 (uv installs 3.11).
Profile torch(const std::string& version, const std::string& cuda, bool uv, const std::string& mirrors) {
  std::string text = "schema = 1\nname = \"t\"\n";
  text += uv ? "[os]\ndistro = \"ubi\"\nversion = \"8\"\n" : "[os]\ndistro = \"ubuntu\"\nversion = \"22.04\"\n";
  text +=
      "[cuda]\nversion = \"" + cuda + "\"\n[cudnn]\nversion = \"" + (cuda.rfind("12.", 0) == 0 ? "9" : "8") + "\"\n";
  text +=
      "[framework]\nname = \"pytorch\"\nversion = \"" + version + "\"\npython = \"" + (uv ? "3.11" : "3.10") + "\"\n";
  return parse(text + "[mirrors]\n" + mirrors);
}

/// Lines of `text` that hold `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  for (std::string_view line : gpuenv::util::split_lines(text)) {
    if (contains(line, needle)) out.emplace_back(line);
  }
  return out;
}

const std::string k_aliyun = "pytorch = \"https://mirrors.aliyun.com/pytorch-wheels\"\n";
const std::string k_tuna = "pypi = \"https://pypi.tuna.tsinghua.edu.cn/simple\"\n";
const std::string k_netrc = "--mount=type=secret,id=netrc,target=/root/.netrc,required=false";

}  // namespace

TEST_CASE("mirrors: a shipped profile without [mirrors] gets no mirror argument, and an empty table changes no byte",
          "[dockerfile][mirrors]") {
  std::size_t rendered = 0;
  for (const auto& row : gpuenv::profile::shipped_profiles()) {
    const Profile p = parse(row.text);
    if (!p.mirrors.empty()) continue;
    auto text = gpuenv::dockerfile::render(p, kb(), data(), mirror_options());
    if (!text) continue;  // a profile that cannot have a Dockerfile (an install-only Debian profile)
    ++rendered;
    INFO(row.name);
    for (const char* token : k_mirror_tokens) CHECK_FALSE(contains(*text, token));
    CHECK(lines_with(*text, "FROM nvidia/cuda:").size() == 1);
    // The same profile with an empty [mirrors] table (appended: it is the last table) renders the same bytes.
    CHECK(gpuenv::dockerfile::render(parse(row.text + "\n[mirrors]\n"), kb(), data(), mirror_options()).value() ==
          *text);
  }
  CHECK(rendered >= 14);
}

TEST_CASE("mirrors: the -cn profile builds the same image as its upstream twin: same hash, same packages",
          "[dockerfile][mirrors]") {
  const Profile cn = shipped("pytorch-2.9-cu128-cn");
  const Profile upstream = shipped("pytorch-2.9-cu128");
  CHECK(gpuenv::dockerfile::profile_hash(cn) == gpuenv::dockerfile::profile_hash(upstream));
  const std::string text = render_with_mirrors(cn);
  CHECK(lines_with(text, "torch==2.9.1 torchvision==0.24.1 torchaudio==2.9.1") ==
        lines_with(render_with_mirrors(upstream), "torch==2.9.1 torchvision==0.24.1 torchaudio==2.9.1"));
  CHECK(own_problems(text).empty());
}

TEST_CASE("mirrors: the registry is a global build argument in front of nvidia/cuda", "[dockerfile][mirrors]") {
  const std::string text =
      render_with_mirrors(torch("2.4.1", "12.4.1", false, "registry = \"m.daocloud.io/docker.io\"\n"));
  const std::size_t arg = text.find("\nARG GPUENV_REGISTRY=m.daocloud.io/docker.io\n");
  const std::size_t from = text.find("\nFROM ${GPUENV_REGISTRY}/nvidia/cuda:12.4.1-base-ubuntu22.04\n");
  REQUIRE(arg != std::string::npos);
  REQUIRE(from != std::string::npos);
  CHECK(arg < text.find("\nFROM "));
  CHECK(contains(unwrapped(text),
                 "Upstream instead: --build-arg GPUENV_REGISTRY=docker.io --build-arg "
                 "BUILDKIT_SYNTAX=docker/dockerfile:1."));
  // The label names the image, not where it was pulled from.
  CHECK(contains(text, "org.opencontainers.image.base.name=\"docker.io/nvidia/cuda:12.4.1-base-ubuntu22.04\""));
  CHECK_FALSE(contains(text, "PIP_INDEX_URL"));  // only what the profile sets
  CHECK(own_problems(text).empty());
}

TEST_CASE("mirrors: torch 2.x wheels: --find-links for a flat listing, --index-url for an index",
          "[dockerfile][mirrors]") {
  const std::string flat =
      render_with_mirrors(torch("2.4.1", "12.4.1", false, k_tuna + k_aliyun + "pytorch_style = \"find-links\"\n"));
  CHECK(contains(flat, "\nARG PIP_INDEX_URL=https://pypi.tuna.tsinghua.edu.cn/simple\n"));
  CHECK(contains(flat,
                 "\nARG GPUENV_TORCH_WHEELS=https://mirrors.aliyun.com/pytorch-wheels/cu124/\n"
                 "RUN --mount=type=cache,target=/root/.cache/pip \\\n    " +
                     k_netrc +
                     " \\\n    pip install --find-links \"${GPUENV_TORCH_WHEELS}\" \\\n"
                     "      torch==2.4.1 torchvision==0.19.1 torchaudio==2.4.1 \\\n && chmod -R g=rX /opt/venv\n"));
  CHECK_FALSE(contains(flat, "download.pytorch.org/whl/cu124 \\"));
  // PIP_INDEX_URL is declared before the first pip runs.
  CHECK(flat.find("ARG PIP_INDEX_URL=") < flat.find("pip install pip=="));

  const std::string index =
      render_with_mirrors(torch("2.4.1", "12.4.1", false, k_tuna + k_aliyun + "pytorch_style = \"index\"\n"));
  CHECK(contains(index,
                 "\nARG GPUENV_TORCH_WHEELS=https://mirrors.aliyun.com/pytorch-wheels/cu124\n"
                 "RUN --mount=type=cache,target=/root/.cache/pip \\\n    " +
                     k_netrc +
                     " \\\n    pip install --index-url "
                     "\"${GPUENV_TORCH_WHEELS}\" --extra-index-url "
                     "\"${PIP_INDEX_URL}\" \\\n"));
  CHECK(contains(index, "--build-arg GPUENV_TORCH_WHEELS=https://download.pytorch.org/whl/cu124"));

  // An index without a PyPI mirror: every package from it, as upstream's --index-url.
  const std::string alone =
      render_with_mirrors(torch("2.4.1", "12.4.1", false, k_aliyun + "pytorch_style = \"index\"\n"));
  CHECK(contains(alone, "RUN --mount=type=cache,target=/root/.cache/pip \\\n    " + k_netrc +
                            " \\\n    pip install --index-url "
                            "\"${GPUENV_TORCH_WHEELS}\" \\\n"));
  CHECK_FALSE(contains(alone, "PIP_INDEX_URL"));
  for (const std::string& text : {flat, index, alone}) CHECK(own_problems(text).empty());
}

TEST_CASE("mirrors: torch 1.13 (+cuXYZ pins on PyPI): --extra-index-url or --find-links, the pins kept",
          "[dockerfile][mirrors]") {
  const std::string index =
      render_with_mirrors(torch("1.13.1", "11.7.1", false, k_aliyun + "pytorch_style = \"index\"\n"));
  CHECK(contains(index, "RUN --mount=type=cache,target=/root/.cache/pip \\\n    " + k_netrc +
                            " \\\n    pip install --extra-index-url "
                            "\"${GPUENV_TORCH_WHEELS}\" \\\n"
                            "      torch==1.13.1+cu117 torchvision==0.14.1+cu117"));
  const std::string flat =
      render_with_mirrors(torch("1.13.1", "11.7.1", false, k_aliyun + "pytorch_style = \"find-links\"\n"));
  CHECK(contains(flat, "RUN --mount=type=cache,target=/root/.cache/pip \\\n    " + k_netrc +
                           " \\\n    pip install --find-links \"${GPUENV_TORCH_WHEELS}\" \\\n"
                           "      torch==1.13.1+cu117"));
  for (const std::string& text : {flat, index}) CHECK(own_problems(text).empty());
}

TEST_CASE("mirrors: uv takes the PyPI mirror and the Python-download mirror, the OS's Python ignores the latter",
          "[dockerfile][mirrors]") {
  const std::string python = "python_downloads = \"https://mirror.example.com/pbs/\"\n";
  const std::string uv = render_with_mirrors(torch("2.7.1", "11.8.0", true, k_tuna + python));
  const std::size_t index = uv.find("\nARG UV_DEFAULT_INDEX=${PIP_INDEX_URL}\n");
  const std::size_t downloads = uv.find("\nARG UV_PYTHON_INSTALL_MIRROR=https://mirror.example.com/pbs\n");
  REQUIRE(index != std::string::npos);
  REQUIRE(downloads != std::string::npos);
  CHECK(uv.find("ARG PIP_INDEX_URL=") < index);
  CHECK(downloads < uv.find("uv python install 3.11"));
  CHECK(contains(uv,
                 "UV_PYTHON_INSTALL_MIRROR=https://github.com/astral-sh/python-build-standalone/"
                 "releases/download"));
  CHECK(own_problems(uv).empty());

  const std::string os_python = render_with_mirrors(torch("2.4.1", "12.4.1", false, python));
  for (const char* token : k_mirror_tokens) CHECK_FALSE(contains(os_python, token));
}

TEST_CASE("mirrors: the structural check resolves global ARGs in FROM and refuses what docker would misread",
          "[dockerfile][mirrors][lint]") {
  const std::string tail = "/nvidia/cuda:12.4.1-runtime-ubuntu22.04\nUSER app\n";
  CHECK(gpuenv::dockerfile::structural_problems("ARG R=docker.m.daocloud.io\nFROM ${R}" + tail, {}).empty());
  CHECK(gpuenv::dockerfile::structural_problems("FROM registry.internal:5000/mirror" + tail, {}).empty());
  const auto undefined = gpuenv::dockerfile::structural_problems("FROM ${R}" + tail, {});
  REQUIRE_FALSE(undefined.empty());
  CHECK(contains(undefined[0], "which no ARG before the first FROM defines"));
  const auto namespace_only = gpuenv::dockerfile::structural_problems("FROM mirror" + tail, {});
  REQUIRE(namespace_only.size() == 1);
  CHECK(contains(namespace_only[0], "`mirror` before nvidia/cuda is not a registry host"));
  const auto bad_tag = gpuenv::dockerfile::structural_problems(
      "ARG R=docker.m.daocloud.io\nFROM ${R}/nvidia/cuda:12.4-runtime\nUSER app\n", {});
  REQUIRE(bad_tag.size() == 1);
  CHECK(contains(bad_tag[0], "does not follow the nvidia/cuda tag grammar"));
}

TEST_CASE("mirrors: the -cn image needs nothing outside the mirrors: frontend, base, apt sources, wheels, PyPI",
          "[dockerfile][mirrors]") {
  const Profile cn = shipped("pytorch-2.9-cu128-cn");
  const std::string text = render_with_mirrors(cn);
  // The syntax directive is read before any ARG: the mirror is written out; BUILDKIT_SYNTAX undoes it.
  CHECK(gpuenv::util::starts_with(text, "# syntax=docker.m.daocloud.io/docker/dockerfile:1\n"));
  CHECK(contains(unwrapped(text), "--build-arg BUILDKIT_SYNTAX=docker/dockerfile:1"));
  // apt: Ubuntu's archive, its security pocket and NVIDIA's CUDA repository rewritten before apt-get update.
  CHECK(contains(text,
                 "\nARG GPUENV_DISTRO_ARCHIVE=https://mirrors.tuna.tsinghua.edu.cn/ubuntu\n"
                 "ARG GPUENV_CUDA_REPO=https://mirrors.aliyun.com/nvidia-cuda\n"));
  const std::string rewrite =
      "find /etc/apt \\( -name sources.list -o -name '*.sources' -o -name 'cuda*.list' \\) -exec sed -i"
      " -e \"s|http://archive.ubuntu.com/ubuntu|${GPUENV_DISTRO_ARCHIVE}|g\""
      " -e \"s|http://security.ubuntu.com/ubuntu|${GPUENV_DISTRO_ARCHIVE}|g\""
      " -e \"s|http://ports.ubuntu.com/ubuntu-ports|${GPUENV_DISTRO_ARCHIVE}-ports|g\""
      " -e \"s|https://developer.download.nvidia.com/compute/cuda/repos|${GPUENV_CUDA_REPO}|g\" {} +";
  CHECK(contains(text, rewrite));
  CHECK(text.find(rewrite) < text.find("apt-get update"));
  CHECK(contains(unwrapped(text), "--build-arg GPUENV_DISTRO_ARCHIVE=http://archive.ubuntu.com/ubuntu"));
  CHECK(own_problems(text).empty());
  // --with-doctor's curl image comes through the registry mirror too.
  gpuenv::dockerfile::Options doctor = mirror_options();
  doctor.with_doctor = true;
  const std::string with_doctor = gpuenv::dockerfile::render(cn, kb(), data(), doctor).value();
  CHECK(contains(with_doctor, "\nFROM ${GPUENV_REGISTRY}/curlimages/curl:8.11.1 AS gpuenv-download\n"));
  CHECK(own_problems(with_doctor).empty());
  // Without distro_archive and cuda_repo the sources stay as the base image has them.
  CHECK_FALSE(contains(render_with_mirrors(shipped("pytorch-2.9-cu128")), "find /etc/apt"));
}
