// The Dockerfile generator as a library: Python plans, the generator's own findings, the rendered text's
// promises (issue 5), the profile hash, file names, and the structural checks where dockerfile-utils is blind.

#include "dockerfile/dockerfile.hpp"

#include <catch2/catch.hpp>
#include <regex>
#include <string>
#include <vector>

#include "compat/derive.hpp"
#include "compat/rules.hpp"
#include "dockerfile/lint.hpp"
#include "dockerfile_support.hpp"
#include "report/finding.hpp"

namespace {

using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::dockerfile::Options;
using gpuenv::dockerfile::PythonPlan;
using gpuenv::profile::Profile;
using gpuenv::report::Status;
using gpuenv::util::contains;

using Fields = std::vector<std::pair<std::string, std::string>>;

Profile torch_profile(const Fields& extra = {}) {
  Fields fields = {{"os.distro", "ubuntu"},      {"os.version", "22.04"},       {"cuda.version", "12.4.1"},
                   {"cudnn.version", "9"},       {"framework.name", "pytorch"}, {"framework.version", "2.4.1"},
                   {"framework.python", "3.11"}, {"image.flavor", "runtime"},   {"image.compiler", "false"}};
  // runtime and no compiler: the pre-issue-12 image these cases were written for; the defaults (base, gcc) are
  // covered by layers_test.cpp.
  // An empty value removes the field.
  for (const auto& field : extra) {
    auto it = std::find_if(fields.begin(), fields.end(), [&field](const auto& f) { return f.first == field.first; });
    if (field.second.empty()) {
      if (it != fields.end()) fields.erase(it);
    } else if (it != fields.end()) {
      it->second = field.second;
    } else {
      fields.push_back(field);
    }
  }
  return make_profile(fields);
}

Options options(const std::string& argument = "test-profile") {
  Options out;
  out.gpuenv_version = "0.0.0-test";
  out.profile_argument = argument;
  return out;
}

std::string render(const Profile& p, const Options& o = options()) {
  // Precondition of render(): the profile passes the checks a Dockerfile needs.
  auto findings = gpuenv::compat::check_profile(p, kb(), gpuenv::compat::Purpose::dockerfile);
  auto own = gpuenv::dockerfile::check(p, kb(), data());
  findings.insert(findings.end(), own.begin(), own.end());
  for (const auto& f : findings) {
    INFO(f.id << ": " << f.message);
    REQUIRE(f.status != Status::fail);
  }
  auto text = gpuenv::dockerfile::render(p, kb(), data(), o);
  INFO((text ? std::string() : text.error().message));
  REQUIRE(text.has_value());
  return *text;
}

std::size_t position(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  INFO("looking for: " << needle);
  REQUIRE(at != std::string::npos);
  return at;
}

}  // namespace

TEST_CASE("dockerfile: the generator's data parses and every row has a source", "[dockerfile]") {
  const auto& d = data();
  CHECK(d.os_python.size() >= 8);
  for (const auto& row : d.os_python) {
    INFO(row.os);
    CHECK_FALSE(row.provenance.source.empty());
    CHECK_FALSE(row.packages.empty());
    // Each OS is one nvidia/cuda publishes images for.
    const bool published = std::any_of(kb().images.begin(), kb().images.end(), [&row](const auto& image) {
      return std::find(image.os.begin(), image.os.end(), row.os) != image.os.end();
    });
    CHECK(published);
  }
  CHECK(d.uv.image == "ghcr.io/astral-sh/uv:" + d.uv.version);
  CHECK(d.uv.python_min.str() == "3.8");
  CHECK(d.uv.python_max.str() == "3.14");
  CHECK(d.numpy.size() == 2);
}

TEST_CASE("dockerfile: a bad data file is an internal error naming the file and the row", "[dockerfile]") {
  const gpuenv::util::EmbeddedFile bad[] = {
      {"python.toml",
       "[uv]\nversion = \"1\"\nimage = \"x:1\"\npython_min = \"3.8\"\n"
       "python_max = \"3.14\"\nstatus = \"verified\"\nsource = \"s\"\nextra = 1\n"}};
  auto parsed = gpuenv::dockerfile::parse_data(bad);
  REQUIRE_FALSE(parsed.has_value());
  CHECK(contains(parsed.error().message, "python.toml"));
  CHECK(contains(parsed.error().message, "unexpected key `extra`"));
}

TEST_CASE("dockerfile: Python: the OS's own python3 when it matches, otherwise uv", "[dockerfile]") {
  struct Row {
    const char* distro;
    const char* version;
    const char* python;
    PythonPlan::Method method;
  };
  const Row rows[] = {
      // packages.ubuntu.com: focal 3.8, jammy 3.10, noble 3.12.
      {"ubuntu", "20.04", "3.8", PythonPlan::Method::os},
      {"ubuntu", "22.04", "3.10", PythonPlan::Method::os},
      {"ubuntu", "24.04", "3.12", PythonPlan::Method::os},
      {"ubuntu", "22.04", "3.11", PythonPlan::Method::uv},
      {"ubuntu", "24.04", "3.10", PythonPlan::Method::uv},
      {"ubuntu", "18.04", "3.6", PythonPlan::Method::uv},
      // Red Hat's RHEL 8/9/10 docs: python3 is 3.6 / 3.9 / 3.12; rhel is imaged as ubi.
      {"ubi", "8", "3.6", PythonPlan::Method::os},
      {"rhel", "9", "3.9", PythonPlan::Method::os},
      {"rockylinux", "9", "3.9", PythonPlan::Method::os},
      {"rockylinux", "9", "3.11", PythonPlan::Method::uv},
      {"ubi", "10", "3.12", PythonPlan::Method::os},
      {"amzn", "2023", "3.9", PythonPlan::Method::os},
      {"amzn", "2023", "3.12", PythonPlan::Method::uv},
  };
  for (const Row& row : rows) {
    INFO(row.distro << " " << row.version << " python " << row.python);
    const Profile p =
        torch_profile({{"os.distro", row.distro}, {"os.version", row.version}, {"framework.python", row.python}});
    const PythonPlan plan = gpuenv::dockerfile::plan_python(p, data());
    CHECK(plan.method == row.method);
    CHECK(plan.version == row.python);
    if (row.method == PythonPlan::Method::uv) {
      CHECK(contains(plan.why, "uv " + data().uv.version));
      CHECK(contains(plan.why, "python-build-standalone"));
    } else {
      CHECK(contains(plan.why, "own python3"));
      CHECK(plan.interpreter == "python3");
    }
  }
  CHECK(gpuenv::dockerfile::plan_python(
            make_profile({{"os.distro", "ubuntu"}, {"os.version", "22.04"}, {"cuda.version", "12.4.1"}}), data())
            .method == PythonPlan::Method::none);
}

TEST_CASE("dockerfile.python fails for a Python neither the OS nor uv provides", "[dockerfile]") {
  for (const char* python : {"3.15", "3.7", "2.7"}) {
    INFO(python);
    const auto findings = gpuenv::dockerfile::check(torch_profile({{"framework.python", python}}), kb(), data());
    const auto it =
        std::find_if(findings.begin(), findings.end(), [](const auto& f) { return f.id == "dockerfile.python"; });
    REQUIRE(it != findings.end());
    CHECK(it->status == Status::fail);
    CHECK(contains(it->message, python));
    CHECK(contains(it->remedy, "3.8-3.14"));
    CHECK(contains(it->remedy, "3.10 (Ubuntu 22.04's own)"));
  }
  const auto ok = gpuenv::dockerfile::check(torch_profile(), kb(), data());
  REQUIRE(ok.size() == 2);  // + dockerfile.duplicate_libraries: torch_profile() asks for a cuDNN runtime image
  CHECK(ok[0].status == Status::pass);
  CHECK(ok[1].id == "dockerfile.duplicate_libraries");
  CHECK(gpuenv::dockerfile::check(torch_profile({{"framework.python", "3.10"}}), kb(), data())[0].status ==
        Status::pass);
}

TEST_CASE("dockerfile.libraries warns when TensorFlow without [and-cuda] lacks the image's libraries", "[dockerfile]") {
  const Fields tf = {{"framework.name", "tensorflow"}, {"framework.version", "2.10.0"}, {"framework.python", "3.10"},
                     {"os.version", "20.04"},          {"cuda.version", "11.2.2"},      {"cudnn.version", "8"}};
  Fields base = tf;
  base.emplace_back("image.flavor", "base");
  auto findings = gpuenv::dockerfile::check(torch_profile(base), kb(), data());
  REQUIRE(findings.size() == 2);
  CHECK(findings[1].id == "dockerfile.libraries");
  CHECK(findings[1].status == Status::warn);
  CHECK(contains(findings[1].message, "`base` image"));
  Fields no_cudnn = tf;
  no_cudnn.emplace_back("cudnn.version", "");
  findings = gpuenv::dockerfile::check(torch_profile(no_cudnn), kb(), data());
  REQUIRE(findings.size() == 2);
  CHECK(contains(findings[1].message, "no [cudnn]"));
  findings = gpuenv::dockerfile::check(torch_profile(tf), kb(), data());
  REQUIRE(findings.size() == 1);  // a cuDNN runtime image: nothing missing
}

TEST_CASE(
    "dockerfile: render writes the model Dockerfile: base tag, venv, pinned wheels, build-time CUDA check, user, "
    "labels",
    "[dockerfile]") {
  const Profile p = torch_profile({{"driver.min", "550.54.15"}, {"description", "demo \"quoted\" $HOME"}});
  const std::string text = render(p);
  const auto derived = gpuenv::compat::derive(p, kb());

  CHECK(gpuenv::util::starts_with(
      text, "# syntax=docker/dockerfile:1\n# Generated by gpuenv 0.0.0-test from profile \"test-profile\""));
  CHECK(contains(text, "# Regenerate with: gpuenv dockerfile test-profile\n"));
  CHECK(contains(text, "\nFROM nvidia/cuda:" + derived.image_tag + "\n"));
  CHECK(derived.image_tag == "12.4.1-cudnn-runtime-ubuntu22.04");
  // Python 3.11 on Ubuntu 22.04 (python3 3.10) comes from the pinned uv, mounted, never copied into the image.
  CHECK(contains(text, "FROM " + data().uv.image + " AS uv\n"));
  CHECK(contains(
      text,
      "RUN --mount=from=uv,source=/uv,target=/usr/local/bin/uv \\\n    --mount=type=cache,target=/root/.cache/uv "
      "\\\n    --mount=type=cache,target=/root/.cache/pip \\\n"
      "    --mount=type=secret,id=netrc,target=/root/.netrc,required=false \\\n    uv python install 3.11 \\\n"
      " && uv venv --seed --python 3.11 /opt/venv \\\n && /opt/venv/bin/python -m pip install pip==26.2.1\n"));
  CHECK(contains(text, "ARG UV_PYTHON_INSTALL_DIR=/opt/python\n"));
  CHECK(contains(text, "ENV VIRTUAL_ENV=/opt/venv \\\n    PATH=/opt/venv/bin:$PATH \\\n    PYTHONUNBUFFERED=1\n"));
  CHECK(contains(text,
                 "RUN --mount=type=cache,target=/root/.cache/pip \\\n"
                 "    --mount=type=secret,id=netrc,target=/root/.netrc,required=false \\\n    pip install --index-url "
                 "https://download.pytorch.org/whl/cu124 \\\n"
                 "      torch==2.4.1 torchvision==0.19.1 torchaudio==2.4.1 \\\n && chmod -R g=rX /opt/venv\n"));
  CHECK(contains(text, "assert v.split('.')[:2] == ['12', '4']"));
  CHECK_FALSE(contains(text, "numpy<2"));  // torch 2.4 supports NumPy 2
  // Non-root user, last; labels with the hash and escaped free text.
  CHECK(contains(text, "useradd --uid 10001 --gid 0 --home-dir /home/gpuenv --create-home --no-log-init"));
  CHECK(gpuenv::util::ends_with(text, "\nUSER 10001\nWORKDIR /home/gpuenv\n"));
  CHECK(position(text, "ENV HOME=/home/gpuenv \\\n    USER=gpuenv") < position(text, "LABEL "));
  CHECK(contains(text, "io.gpuenv.profile.hash=\"" + gpuenv::dockerfile::profile_hash(p) + "\""));
  CHECK(contains(text, "org.opencontainers.image.description=\"demo \\\"quoted\\\" \\$HOME\""));
  CHECK(
      contains(text, "org.opencontainers.image.base.name=\"docker.io/nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\""));
  CHECK(contains(text, "io.gpuenv.driver.min=\"550.54.15\""));
  // Base image's NVIDIA_* variables are kept (documented, never overridden); no apt at all on this path.
  CHECK(contains(text, "NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES stay as NVIDIA's base image sets them"));
  CHECK_FALSE(contains(text, "ENV NVIDIA_"));
  CHECK_FALSE(contains(text, "apt-get"));
  CHECK_FALSE(contains(text, "HEALTHCHECK"));
  // Labels come after the heavy layers.
  CHECK(position(text, "pip install --index-url") < position(text, "LABEL "));
  CHECK(own_problems(text).empty());
}

TEST_CASE("dockerfile: render is deterministic and has no clock in it", "[dockerfile]") {
  const Profile p = torch_profile();
  const std::string first = render(p);
  for (int i = 0; i < 3; ++i) CHECK(render(p) == first);
  CHECK_FALSE(std::regex_search(first, std::regex("[0-9]{2}:[0-9]{2}:[0-9]{2}")));
}

TEST_CASE("dockerfile: the OS's own Python comes from apt or dnf with the package-manager discipline", "[dockerfile]") {
  SECTION("Ubuntu: ARG DEBIAN_FRONTEND, --no-install-recommends, lists removed in the same layer") {
    const std::string text = render(torch_profile({{"framework.python", "3.10"}}));
    CHECK(contains(text, "ARG DEBIAN_FRONTEND=noninteractive\n"));
    CHECK_FALSE(contains(text, "ENV DEBIAN_FRONTEND"));
    CHECK(contains(text,
                   "RUN --mount=type=cache,target=/root/.cache/pip \\\n"
                   "    --mount=type=secret,id=netrc,target=/root/.netrc,required=false \\\n    apt-get update \\\n"
                   " && apt-get install -y --no-install-recommends python3 python3-venv \\\n"
                   " && rm -rf /var/lib/apt/lists/* \\\n && useradd --uid 10001"));  // the user in the same layer
    CHECK(position(text, "ARG DEBIAN_FRONTEND") < position(text, "apt-get install"));
    CHECK(contains(text,
                   " && chmod -R g=u /home/gpuenv \\\n && python3 -m venv /opt/venv \\\n"
                   " && /opt/venv/bin/python -m pip install pip==26.2.1\n"));  // the venv in the same layer too
    CHECK_FALSE(contains(text, "uv python install"));
    CHECK_FALSE(contains(text, "AS uv"));
    CHECK(own_problems(text).empty());
  }
  SECTION("RHEL family: dnf without weak dependencies, cache cleaned in the same layer; shadow-utils for useradd") {
    const std::string text =
        render(torch_profile({{"os.distro", "ubi"}, {"os.version", "9"}, {"framework.python", "3.9"}}));
    CHECK(contains(text, "FROM nvidia/cuda:12.4.1-cudnn-runtime-ubi9\n"));
    CHECK(contains(text,
                   "RUN --mount=type=cache,target=/root/.cache/pip \\\n"
                   "    --mount=type=secret,id=netrc,target=/root/.netrc,required=false \\\n"
                   "    dnf install -y --setopt=install_weak_deps=False --nodocs python3 python3-pip shadow-utils \\\n"
                   " && dnf clean all \\\n && rm -rf /var/cache/dnf \\\n && useradd --uid 10001"));
    CHECK_FALSE(contains(text, "DEBIAN_FRONTEND"));
    CHECK(own_problems(text).empty());
  }
  SECTION("Amazon Linux 2023 uses dnf too") {
    const std::string text = render(torch_profile({{"os.distro", "amzn"},
                                                   {"os.version", "2023"},
                                                   {"cuda.version", "12.6.3"},
                                                   {"cudnn.version", ""},
                                                   {"framework.version", "2.6.0"},
                                                   {"framework.python", "3.9"}}));
    CHECK(contains(text, "FROM nvidia/cuda:12.6.3-runtime-amzn2023\n"));
    CHECK(contains(text, "dnf install -y --setopt=install_weak_deps=False --nodocs python3 python3-pip shadow-utils"));
    CHECK(own_problems(text).empty());
  }
  SECTION("UBI 7 has yum") {
    const std::string text = render(torch_profile({{"os.distro", "ubi"},
                                                   {"os.version", "7"},
                                                   {"cuda.version", "11.8.0"},
                                                   {"cudnn.version", "8"},
                                                   {"framework.python", "3.10"}}));
    CHECK(contains(text,
                   "RUN yum install -y --setopt=tsflags=nodocs shadow-utils \\\n && yum clean all \\\n && rm -rf "
                   "/var/cache/yum \\\n && useradd --uid 10001"));
    CHECK(contains(text, "uv python install 3.10"));
    CHECK(own_problems(text).empty());
  }
}

TEST_CASE(
    "dockerfile: PyTorch install forms follow the release: --index-url from 2.0, --extra-index-url with +cu labels "
    "before",
    "[dockerfile]") {
  SECTION("1.13: extra index, local version labels as PyTorch documents, numpy<2") {
    const std::string text = render(torch_profile({{"cuda.version", "11.7.1"},
                                                   {"cudnn.version", "8"},
                                                   {"framework.version", "1.13.1"},
                                                   {"framework.python", "3.10"},
                                                   {"framework.variant", "cu117"}}));
    CHECK(contains(
        text,
        "RUN --mount=type=cache,target=/root/.cache/pip \\\n"
        "    --mount=type=secret,id=netrc,target=/root/.netrc,required=false \\\n    pip install --extra-index-url "
        "https://download.pytorch.org/whl/cu117 \\\n"
        "      torch==1.13.1+cu117 torchvision==0.14.1+cu117 torchaudio==0.13.1 \"numpy<2\" \\\n"
        " && chmod -R g=rX /opt/venv\n"));
    CHECK(contains(text, "== ['11', '7']"));
  }
  SECTION("2.1: index URL, numpy<2 (NumPy 2 support starts with torch 2.3)") {
    const std::string text = render(torch_profile({{"cuda.version", "12.1.1"},
                                                   {"cudnn.version", "8"},
                                                   {"framework.version", "2.1.2"},
                                                   {"framework.python", "3.10"}}));
    CHECK(contains(text,
                   "--index-url https://download.pytorch.org/whl/cu121 \\\n      torch==2.1.2 torchvision==0.16.2 "
                   "torchaudio==2.1.2 \"numpy<2\" \\\n"));
  }
  SECTION("a series-level release: torch X.Y is X.Y.0 (as pip and the rules read it), companions unknown") {
    const std::string text = render(torch_profile({{"os.version", "24.04"},
                                                   {"cuda.version", "13.0.2"},
                                                   {"framework.version", "2.12"},
                                                   {"framework.python", "3.12"}}));
    CHECK(contains(text, "--index-url https://download.pytorch.org/whl/cu130 \\\n      torch==2.12.0 \\\n"));
    CHECK(contains(text, "torchvision and torchaudio are not pinned"));
    CHECK(contains(text, "== ['13', '0']"));
  }
  SECTION("an explicit variant sets the index and the CUDA line asserted") {
    const std::string text = render(
        torch_profile({{"cuda.version", "12.6.3"}, {"framework.version", "2.6.0"}, {"framework.variant", "cu124"}}));
    CHECK(contains(text, "whl/cu124"));
    CHECK(contains(text, "== ['12', '4']"));
    CHECK(contains(text, "io.gpuenv.torch.variant=\"cu124\""));
  }
}

TEST_CASE("dockerfile: TensorFlow: [and-cuda] where the release has it, plain before, with a build-time CUDA check",
          "[dockerfile]") {
  SECTION("2.20 with [and-cuda]") {
    const std::string text = render(torch_profile({{"framework.name", "tensorflow"},
                                                   {"framework.version", "2.20.0"},
                                                   {"framework.python", "3.12"},
                                                   {"cuda.version", "12.5.1"}}));
    CHECK(contains(text,
                   "RUN --mount=type=cache,target=/root/.cache/pip \\\n"
                   "    --mount=type=secret,id=netrc,target=/root/.netrc,required=false \\\n    pip install "
                   "\"tensorflow[and-cuda]==2.20.0\" \\\n && chmod -R g=rX /opt/venv\n"));
    CHECK(contains(text, "tf.test.is_built_with_cuda()"));
    CHECK(contains(text, "== ['12', '5']"));
    CHECK_FALSE(contains(text, "numpy<2"));
  }
  SECTION("2.10 plain, with numpy<2") {
    const std::string text = render(torch_profile({{"framework.name", "tensorflow"},
                                                   {"framework.version", "2.10.0"},
                                                   {"framework.python", "3.10"},
                                                   {"os.version", "20.04"},
                                                   {"cuda.version", "11.2.2"},
                                                   {"cudnn.version", "8"}}));
    CHECK(contains(text,
                   "RUN --mount=type=cache,target=/root/.cache/pip \\\n"
                   "    --mount=type=secret,id=netrc,target=/root/.netrc,required=false \\\n    pip install "
                   "tensorflow==2.10.0 \"numpy<2\" "
                   "\\\n && chmod -R g=rX /opt/venv\n"));
    CHECK(contains(text, "== ['11', '2']"));
    CHECK(contains(text, "end-of-life"));  // 11.2.2 images are EOL: said in the header
  }
}

TEST_CASE("dockerfile: a bare CUDA profile gets no Python, only the user and labels", "[dockerfile]") {
  const std::string text = render(make_profile(
      {{"os.distro", "ubuntu"}, {"os.version", "24.04"}, {"cuda.version", "13.0.2"}, {"image.flavor", "base"}}));
  CHECK(contains(text, "\nFROM nvidia/cuda:13.0.2-base-ubuntu24.04\n"));
  CHECK_FALSE(contains(text, "pip"));
  CHECK_FALSE(contains(text, "venv"));
  CHECK_FALSE(contains(text, "io.gpuenv.python"));
  CHECK(contains(text, "USER 10001"));
  CHECK(own_problems(text).empty());
}

TEST_CASE("dockerfile: with-doctor adds the gpuenv stage and binary, and no HEALTHCHECK", "[dockerfile]") {
  Options o = options();
  o.with_doctor = true;
  o.selection = {{"cuda.version", "12.4.1"}};
  const std::string text = render(torch_profile(), o);
  CHECK(contains(text, "FROM scratch AS gpuenv-context\nCOPY gpuenv /tmp/gpuenv\n"));
  CHECK(contains(text, "COPY --from=gpuenv-binary --chmod=0755 /tmp/gpuenv /usr/local/bin/gpuenv\n"));
  CHECK(contains(text, "RUN gpuenv --version\n"));
  CHECK(contains(text, "# Regenerate with: gpuenv dockerfile test-profile --set cuda.version=12.4.1 --with-doctor\n"));
  CHECK(contains(text, "io.gpuenv.cell=\"cuda.version=12.4.1\""));
  CHECK(own_problems(text).empty());
}

TEST_CASE("dockerfile: render refuses a tag NVIDIA never published, whatever the caller checked", "[dockerfile]") {
  const Profile cases[] = {
      torch_profile({{"os.distro", "debian"}, {"os.version", "12"}}),       // no nvidia/cuda images for Debian
      torch_profile({{"os.version", "24.04"}}),                             // 12.4.1 has no ubuntu24.04 images
      torch_profile({{"cuda.version", "12.2.0"}, {"cudnn.version", "8"}}),  // 12.2.0 had no cuDNN variant
      // no cuDNN `base` images (a framework with its own cuDNN wheels takes `base` without one)
      torch_profile(
          {{"image.flavor", "base"}, {"framework.name", ""}, {"framework.version", ""}, {"framework.python", ""}}),
      torch_profile({{"cuda.version", "12.7.0"}}),  // no such release
  };
  for (const Profile& p : cases) {
    INFO(p.os_distro << p.os_version << " " << p.cuda_version << " " << p.image_flavor);
    auto text = gpuenv::dockerfile::render(p, kb(), data(), options());
    REQUIRE_FALSE(text.has_value());
    CHECK(contains(text.error().message, "not a published tag"));
  }
}

TEST_CASE("dockerfile: profile_hash is FNV-1a 64 over the canonical fields and ignores name and description",
          "[dockerfile]") {
  CHECK(gpuenv::dockerfile::fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(gpuenv::dockerfile::fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(gpuenv::dockerfile::fnv1a64("foobar") == 0x85944171f73967e8ULL);
  Profile p = torch_profile();
  const std::string hash = gpuenv::dockerfile::profile_hash(p);
  CHECK(std::regex_match(hash, std::regex("fnv1a64:[0-9a-f]{16}")));
  CHECK(gpuenv::dockerfile::canonical_fields(p) ==
        "os.distro=ubuntu\nos.version=22.04\ncuda.version=12.4.1\ncudnn.version=9\nimage.flavor=runtime\nimage."
        "compiler=false\n"
        "framework.name=pytorch\nframework.version=2.4.1\nframework.python=3.11\n");
  p.name = "other";
  p.description = "other words";
  CHECK(gpuenv::dockerfile::profile_hash(p) == hash);
  p.framework_python = "3.12";
  CHECK(gpuenv::dockerfile::profile_hash(p) != hash);
  p.framework_python = "3.11";
  p.gpu_models = {"H100"};
  CHECK(gpuenv::dockerfile::profile_hash(p) != hash);
}

TEST_CASE("dockerfile: cell file names are predictable and file-name safe", "[dockerfile]") {
  CHECK(gpuenv::dockerfile::cell_file_name("pytorch-2.4-cu124", {}) == "pytorch-2.4-cu124.Dockerfile");
  CHECK(gpuenv::dockerfile::cell_file_name("pytorch-matrix",
                                           {{"cuda.version", "12.6.3"}, {"framework.python", "3.10"}}) ==
        "pytorch-matrix_cuda.version-12.6.3_framework.python-3.10.Dockerfile");
  CHECK(gpuenv::dockerfile::cell_file_name("m", {{"description", "a b/c"}}) == "m_description-a-b-c.Dockerfile");
}

TEST_CASE("dockerfile: --all names each cell's file once, labels it and repeats the --set that picks it",
          "[dockerfile]") {
  std::set<std::string> taken;
  // "a b" and "a/b" both become "a-b": the second and third get a number.
  CHECK(gpuenv::dockerfile::unique_cell_file_name("m", {{"description", "a b"}}, taken) ==
        "m_description-a-b.Dockerfile");
  CHECK(gpuenv::dockerfile::unique_cell_file_name("m", {{"description", "a/b"}}, taken) ==
        "m_description-a-b-2.Dockerfile");
  CHECK(gpuenv::dockerfile::unique_cell_file_name("m", {{"description", "a:b"}}, taken) ==
        "m_description-a-b-3.Dockerfile");
  CHECK(gpuenv::dockerfile::unique_cell_file_name("m", {}, taken) == "m.Dockerfile");
  CHECK(taken.size() == 4);

  const gpuenv::profile::Assignments cell{{"cuda.version", "12.6.3"}, {"framework.python", "3.10"}};
  CHECK(gpuenv::dockerfile::cell_label("m", cell) == "cuda.version=12.6.3,framework.python=3.10");
  CHECK(gpuenv::dockerfile::cell_label("m", {}) == "m");
  CHECK(gpuenv::dockerfile::set_arguments(cell) == "--set cuda.version=12.6.3 --set framework.python=3.10");
  CHECK(gpuenv::dockerfile::set_arguments({}).empty());
}

TEST_CASE("dockerfile: structural checks catch what dockerfile-utils does not", "[dockerfile][lint]") {
  const std::vector<std::string> allowed{"ghcr.io/astral-sh/uv:0.11.23"};
  const auto problems = [&allowed](const std::string& text) {
    return gpuenv::dockerfile::structural_problems(text, allowed);
  };
  const auto has = [](const std::vector<std::string>& found, const std::string& needle) {
    INFO(gpuenv::util::join(found, "\n"));
    return std::any_of(found.begin(), found.end(), [&needle](const std::string& p) { return contains(p, needle); });
  };
  const std::string tail = "USER app\n";
  CHECK(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n" + tail).empty());
  CHECK(has(problems("FROM NVIDIA/cuda:12.4.1-runtime-ubuntu22.04\n" + tail), "not lower case"));
  CHECK(has(problems("FROM nvidia/cuda:12.4-runtime-ubuntu22.04\n" + tail), "tag grammar"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime\n" + tail), "tag grammar"));
  CHECK(has(problems("FROM nvidia/cuda:latest\n" + tail), "tag grammar"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-cudnn-base-ubuntu22.04\n" + tail), "tag grammar"));
  CHECK(has(problems("FROM ubuntu:22.04\n" + tail), "not an image gpuenv uses"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCOPY --from=builder /a /b\n" + tail),
            "names no earlier stage"));
  CHECK(has(
      problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN --mount=from=uv,source=/uv,target=/uv uv\n" + tail),
      "names no earlier stage"));
  CHECK(problems("FROM ghcr.io/astral-sh/uv:0.11.23 AS uv\nFROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
                 "RUN --mount=from=uv,source=/uv,target=/uv uv\nCOPY --from=uv /uv /uv\n" +
                 tail)
            .empty());
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04 AS Build\n" + tail), "stage name"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"), "no USER"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nUSER root\n"), "USER is root"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nUSER 0:0\n"), "USER is root"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
                     "--no-install-recommends x \\\n"
                     " && rm -rf /var/lib/apt/lists/*\n" +
                     tail),
            "DEBIAN_FRONTEND"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nARG DEBIAN_FRONTEND=noninteractive\n"
                     "RUN apt-get update && apt-get install -y x\n" +
                     tail),
            "--no-install-recommends"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nARG DEBIAN_FRONTEND=noninteractive\n"
                     "RUN apt-get update && apt-get install -y --no-install-recommends x\n" +
                     tail),
            "apt lists"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nENV DEBIAN_FRONTEND=noninteractive\n" + tail),
            "use ARG"));
  CHECK(
      has(problems("FROM nvidia/cuda:12.4.1-runtime-ubi9\nRUN dnf install -y python3\n" + tail), "install_weak_deps"));
  CHECK(has(
      problems("FROM nvidia/cuda:12.4.1-runtime-ubi9\nRUN dnf install -y --setopt=install_weak_deps=False x\n" + tail),
      "dnf clean all"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install torch\n" + tail), "--no-cache-dir"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install --no-cache-dir torch\n" + tail),
            "`torch` is not pinned"));
  CHECK_FALSE(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install --no-cache-dir --index-url "
                           "https://x/y torch==2.4.1 \"numpy<2\"\n" +
                           tail),
                  "pinned"));
  CHECK(has(problems("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get upgrade -y\n" + tail), "upgrading"));
  CHECK(has(problems("RUN true\nFROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n" + tail), "before the first FROM"));
  CHECK(has(problems("# nothing\n"), "no FROM"));
}

TEST_CASE("dockerfile: parse_instructions joins continuations and skips comments inside them", "[dockerfile][lint]") {
  const auto instructions =
      gpuenv::dockerfile::parse_instructions("# c\nFROM a AS b\nrun x \\\n# inner\n  && y\n\nUSER z\n");
  REQUIRE(instructions.size() == 3);
  CHECK(instructions[0].keyword == "FROM");
  CHECK(instructions[1].keyword == "RUN");
  CHECK(instructions[1].arguments == "x && y");
  CHECK(instructions[1].line == 3);
  CHECK(instructions[2].line == 7);
  CHECK(gpuenv::dockerfile::is_cuda_tag("12.2.2-cudnn8-devel-rockylinux8"));
  CHECK(gpuenv::dockerfile::is_cuda_tag("13.0.2-base-amzn2023"));
  CHECK_FALSE(gpuenv::dockerfile::is_cuda_tag("13.0.2-base-debian12"));
}
