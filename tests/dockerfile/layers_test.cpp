// Issue 12: Dockerfiles a platform team would ship. Lean base by default for frameworks with their own CUDA
// wheels (and the duplicate_libraries warning otherwise), the cuDNN the framework really loads, gcc for
// torch.compile, the numeric group-0 user, no library shadowing, and the --with-doctor stages.

#include "dockerfile/layers.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compat/derive.hpp"
#include "compat/rules.hpp"
#include "dockerfile/dockerfile.hpp"
#include "dockerfile_support.hpp"
#include "profile/parser.hpp"
#include "report/finding.hpp"
#include "support/minimal_profile.hpp"

namespace {

using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::profile::Profile;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::util::contains;

using Fields = std::vector<std::pair<std::string, std::string>>;

/// PyTorch 2.9.1 cu128 on Ubuntu 24.04 with [cudnn] 9 and no image.flavor, plus `extra`.
Profile torch29(const Fields& extra = {}) {
  Fields fields = {{"os.distro", "ubuntu"},     {"os.version", "24.04"},       {"cuda.version", "12.8.1"},
                   {"cudnn.version", "9"},      {"framework.name", "pytorch"}, {"framework.version", "2.9.1"},
                   {"framework.python", "3.12"}};
  fields.insert(fields.end(), extra.begin(), extra.end());
  return make_profile(fields);
}

std::vector<Finding> findings_of(const Profile& p) {
  auto out = gpuenv::compat::check_profile(p, kb(), gpuenv::compat::Purpose::dockerfile);
  auto own = gpuenv::dockerfile::check(p, kb(), data());
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id, Status status) {
  for (const Finding& f : findings)
    if (f.id == id && f.status == status) return &f;
  return nullptr;
}

std::string render_passing(const Profile& p, bool with_doctor = false) {
  for (const Finding& f : findings_of(p)) {
    INFO(f.id << ": " << f.message);
    REQUIRE(f.status != Status::fail);
  }
  gpuenv::dockerfile::Options options;
  options.gpuenv_version = "0.0.0-test";
  options.profile_argument = "test-profile";
  options.with_doctor = with_doctor;
  auto text = gpuenv::dockerfile::render(p, kb(), data(), options);
  INFO((text ? std::string() : text.error().message));
  REQUIRE(text.has_value());
  return *text;
}

}  // namespace

TEST_CASE("layers: a framework with its own CUDA wheels gets the base image unless image.flavor says otherwise",
          "[dockerfile][layers]") {
  CHECK(gpuenv::compat::effective_image_flavor(torch29(), kb()) == "base");
  CHECK(gpuenv::compat::derive(torch29(), kb()).image_tag == "12.8.1-base-ubuntu24.04");
  const std::string text = render_passing(torch29());
  CHECK(contains(text, "\nFROM nvidia/cuda:12.8.1-base-ubuntu24.04\n"));
  CHECK_FALSE(contains(text, "cudnn-runtime"));
  CHECK(find(findings_of(torch29()), "dockerfile.duplicate_libraries", Status::warn) == nullptr);

  // TensorFlow before [and-cuda] loads the image's libraries: runtime stays its default.
  const Profile tf = make_profile({{"os.distro", "ubuntu"},
                                   {"os.version", "20.04"},
                                   {"cuda.version", "11.2.2"},
                                   {"cudnn.version", "8"},
                                   {"framework.name", "tensorflow"},
                                   {"framework.version", "2.10.1"},
                                   {"framework.python", "3.8"}});
  CHECK(gpuenv::compat::effective_image_flavor(tf, kb()) == "runtime");
  CHECK_FALSE(gpuenv::compat::framework_brings_cuda_libraries(tf, kb()));
  // No framework: runtime, as before.
  CHECK(gpuenv::compat::effective_image_flavor(
            make_profile({{"os.distro", "ubuntu"}, {"os.version", "22.04"}, {"cuda.version", "12.4.1"}}), kb()) ==
        "runtime");
}

TEST_CASE("layers: an explicit runtime or cuDNN image for a wheel framework warns duplicate_libraries with the cost",
          "[dockerfile][layers]") {
  const auto findings = findings_of(torch29({{"image.flavor", "runtime"}}));
  const Finding* warn = find(findings, "dockerfile.duplicate_libraries", Status::warn);
  REQUIRE(warn != nullptr);
  CHECK(contains(warn->message, "cudnn-runtime"));
  CHECK(contains(warn->message, "GB"));
  CHECK(contains(warn->remedy, "image.flavor = \"base\""));
  // devel without [cudnn] is a choice for nvcc, not duplication.
  Profile devel = torch29({{"image.flavor", "devel"}});
  devel.cudnn_version.clear();
  CHECK(find(findings_of(devel), "dockerfile.duplicate_libraries", Status::warn) == nullptr);
}

TEST_CASE("layers: image.flavor=base with [cudnn] passes image.tag for wheel frameworks, still fails for the rest",
          "[dockerfile][layers]") {
  CHECK(find(findings_of(torch29({{"image.flavor", "base"}})), "image.tag", Status::fail) == nullptr);
  const Profile bare = make_profile({{"os.distro", "ubuntu"},
                                     {"os.version", "22.04"},
                                     {"cuda.version", "12.4.1"},
                                     {"cudnn.version", "9"},
                                     {"image.flavor", "base"}});
  const auto findings = findings_of(bare);  // kept alive: `find` points into it
  const Finding* fail = find(findings, "image.tag", Status::fail);
  REQUIRE(fail != nullptr);
  CHECK(contains(fail->message, "no cuDNN variant of `base`"));
}

TEST_CASE("layers: labels and header state the cuDNN and CUDA the wheels load, from sourced data",
          "[dockerfile][layers]") {
  const auto* row = data().cudnn_of_torch(*gpuenv::util::Version::parse("2.7.1"), "cu118");
  REQUIRE(row != nullptr);
  CHECK(row->cudnn == "9.1.0.70");
  CHECK(contains(row->provenance.source, "https://github.com/pytorch/pytorch/"));
  const Profile ubi8 = make_profile({{"os.distro", "ubi"},
                                     {"os.version", "8"},
                                     {"cuda.version", "11.8.0"},
                                     {"cudnn.version", "9"},
                                     {"framework.name", "pytorch"},
                                     {"framework.version", "2.7.1"},
                                     {"framework.python", "3.11"},
                                     {"framework.variant", "cu118"}});
  const std::string text = render_passing(ubi8);
  CHECK(contains(text, "io.gpuenv.cudnn=\"9.1.0.70\""));
  CHECK(contains(text, "io.gpuenv.framework.cuda=\"11.8\""));
  CHECK(contains(text, "CUDA 11.8 and cuDNN 9.1.0.70 from its own wheels"));
  CHECK_FALSE(contains(text, "cuDNN 8"));
}

TEST_CASE("layers: PyTorch >= 2.0 gets gcc, g++ and Python headers unless image.compiler is false",
          "[dockerfile][layers]") {
  // Ubuntu 24.04's own Python 3.12: python3-dev too.
  const std::string os_python = render_passing(torch29());
  CHECK(contains(os_python,
                 "apt-get install -y --no-install-recommends python3 python3-venv gcc g++ libc6-dev python3-dev"));
  // uv's Python carries its headers: the compilers and libc6-dev only.
  const std::string uv = render_passing(torch29({{"framework.python", "3.11"}}));
  CHECK(contains(uv, "--no-install-recommends gcc g++ libc6-dev \\\n"));
  const std::string off = render_passing(torch29({{"image.compiler", "false"}}));
  CHECK_FALSE(contains(off, "gcc"));
  // PyTorch 1.x has no torch.compile.
  const Profile old = make_profile({{"os.distro", "ubuntu"},
                                    {"os.version", "22.04"},
                                    {"cuda.version", "11.7.1"},
                                    {"framework.name", "pytorch"},
                                    {"framework.version", "1.13.1"},
                                    {"framework.python", "3.10"}});
  CHECK_FALSE(gpuenv::dockerfile::wants_compiler(old, data()));
}

TEST_CASE("layers: a numeric group-0 user with a group-writable home and a read-only venv, or root when asked",
          "[dockerfile][layers]") {
  const std::string text = render_passing(torch29());
  CHECK(contains(text, "useradd --uid 10001 --gid 0 --home-dir /home/gpuenv"));
  CHECK(contains(text, "chgrp -R 0 /home/gpuenv"));
  CHECK(contains(text, "chmod -R g=u /home/gpuenv"));
  // The venv's permissions change in the install layer itself (no second copy of the wheels).
  CHECK(contains(text, "torchaudio==2.9.1 \\\n && chmod -R g=rX /opt/venv\n"));
  CHECK(contains(text, "\nUSER 10001\n"));
  CHECK_FALSE(contains(text, "USER gpuenv"));
  const std::string root = render_passing(torch29({{"image.user", "root"}}));
  CHECK(contains(root, "\nUSER root\n"));
  CHECK_FALSE(contains(root, "useradd"));
  CHECK(gpuenv::dockerfile::structural_problems(root, {data().uv.image}).size() == 1);  // root refused by default
}

TEST_CASE("layers: wheel frameworks keep /usr/local/cuda/lib64 off LD_LIBRARY_PATH and prove where libraries load",
          "[dockerfile][layers]") {
  const std::string text = render_passing(torch29());
  CHECK(contains(text, "ENV LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64\n"));
  CHECK_FALSE(contains(text, "cuda/lib64:"));
  CHECK(contains(text, "open('/proc/self/maps')"));
  CHECK(contains(text, "not p.startswith('/opt/venv/')"));
  CHECK(contains(text, "not a CUDA build of the framework"));
}

TEST_CASE("layers: --with-doctor downloads the portable binary with its SHA-256 or copies it, and runs it at build",
          "[dockerfile][layers]") {
  const std::string text = render_passing(torch29(), true);
  CHECK(contains(text, "ARG GPUENV_FROM=download\n"));
  CHECK(text.find("ARG GPUENV_FROM=download") < text.find("FROM "));
  CHECK(contains(text, "ARG TARGETARCH\nARG GPUENV_URL_AMD64\nARG GPUENV_SHA256_AMD64\nARG GPUENV_URL_ARM64\n"));
  CHECK(contains(text, "sha256sum -c /tmp/gpuenv.sha256"));
  CHECK_FALSE(contains(text, " | "));  // no pipe in a RUN (hadolint DL4006)
  CHECK(contains(text, "FROM gpuenv-${GPUENV_FROM} AS gpuenv-binary\n"));
  CHECK(contains(text, "COPY --from=gpuenv-binary --chmod=0755 /tmp/gpuenv /usr/local/bin/gpuenv\n"));
  CHECK(contains(text, "RUN gpuenv --version\n"));
}

TEST_CASE("layers: image.compiler takes a TOML boolean, other fields still refuse one", "[dockerfile][layers]") {
  const std::string base = gpuenv::testing::minimal_profile("ubuntu", "24.04", "12.8.1") + "[image]\n";
  const auto off = gpuenv::profile::parse_profile(base + "compiler = false\nuser = \"root\"\n", "t.toml");
  REQUIRE(off.has_value());
  CHECK(off->base.image_compiler == "false");
  CHECK(off->base.image_user == "root");
  const auto bad = gpuenv::profile::parse_profile(base + "flavor = true\n", "t.toml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(contains(bad.error().message, "must be a string, not a boolean"));
  CHECK_FALSE(gpuenv::profile::parse_profile(base + "user = \"nobody\"\n", "t.toml").has_value());
}
