// Issue 26, items 1-6: images that run as any uid in group 0. The environment that makes getpass.getuser() and
// torch.compile's caches work without an /etc/passwd entry, the torch.compile check run as such a uid at build time,
// g++ beside gcc (and no compiler where torch.compile refuses the Python), the read-only venv, the driver floor of
// the wheels beside the base tag's NVIDIA_REQUIRE_CUDA, the RDMA libraries, and the --with-doctor stage that fails
// with a message and is documented as a readiness probe. The build itself is tests/dockerfile/image_build_test.cpp.

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "compat/rules.hpp"
#include "dockerfile/dockerfile.hpp"
#include "dockerfile/layers.hpp"
#include "dockerfile_support.hpp"
#include "report/finding.hpp"
#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::profile::Profile;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::util::contains;

using Fields = std::vector<std::pair<std::string, std::string>>;

Profile any_uid_profile(const Fields& extra = {}) {
  Fields fields = {{"os.distro", "ubuntu"},       {"os.version", "24.04"},        {"cuda.version", "12.8.1"},
                   {"framework.name", "pytorch"}, {"framework.version", "2.9.1"}, {"framework.python", "3.12"}};
  fields.insert(fields.end(), extra.begin(), extra.end());
  return gpuenv::testing::dockerfile_tests::make_profile(fields);
}

std::vector<Finding> all_findings(const Profile& p) {
  auto out = gpuenv::compat::check_profile(p, kb(), gpuenv::compat::Purpose::dockerfile);
  auto own = gpuenv::dockerfile::check(p, kb(), data());
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings)
    if (f.id == id) return &f;
  return nullptr;
}

std::string render_checked(const Profile& p, bool with_doctor = false) {
  gpuenv::dockerfile::Options options;
  options.gpuenv_version = "0.0.0-test";
  options.profile_argument = "test-profile";
  options.with_doctor = with_doctor;
  auto text = gpuenv::dockerfile::render(p, kb(), data(), options);
  INFO((text ? std::string() : text.error().message));
  REQUIRE(text.has_value());
  CHECK(own_problems(*text).empty());
  return *text;
}

/// The instruction lines (first line of each) in order, for ordering checks.
std::size_t at(const std::string& text, const std::string& needle) {
  const std::size_t found = text.find(needle);
  INFO(needle);
  REQUIRE(found != std::string::npos);
  return found;
}

}  // namespace

TEST_CASE("any uid: USER, LOGNAME, HOME and torch.compile's caches are set, the caches group-writable",
          "[dockerfile][any-uid]") {
  const std::string text = render_checked(any_uid_profile());
  CHECK(contains(text,
                 "ENV HOME=/home/gpuenv \\\n    USER=gpuenv \\\n    LOGNAME=gpuenv \\\n"
                 "    TORCHINDUCTOR_CACHE_DIR=/home/gpuenv/.cache/torchinductor \\\n"
                 "    TRITON_CACHE_DIR=/home/gpuenv/.cache/triton\n"));
  // Created by root in the user's layer, before the home is made group-writable.
  CHECK(at(text, "mkdir -p /home/gpuenv/.cache/torchinductor /home/gpuenv/.cache/triton") <
        at(text, "chmod -R g=u /home/gpuenv"));
  CHECK(contains(text, "pytorch/pytorch#140765"));
  // TensorFlow and bare CUDA images get the user's names, not torch.compile's caches.
  const Profile tf = gpuenv::testing::dockerfile_tests::make_profile({{"os.distro", "ubuntu"},
                                                                      {"os.version", "22.04"},
                                                                      {"cuda.version", "12.5.1"},
                                                                      {"framework.name", "tensorflow"},
                                                                      {"framework.version", "2.20.0"},
                                                                      {"framework.python", "3.11"}});
  const std::string tf_text = render_checked(tf);
  CHECK(contains(tf_text, "ENV HOME=/home/gpuenv \\\n    USER=gpuenv \\\n    LOGNAME=gpuenv\n"));
  CHECK_FALSE(contains(tf_text, "TORCHINDUCTOR_CACHE_DIR"));
  CHECK_FALSE(contains(tf_text, "USER 1000650000"));
  // An image meant as a base stays root and sets none of it.
  const std::string root = render_checked(any_uid_profile({{"image.user", "root"}}));
  CHECK_FALSE(contains(root, "LOGNAME"));
  CHECK_FALSE(contains(root, "USER 1000650000"));
}

TEST_CASE("any uid: the build runs torch.compile as a uid without a passwd entry, then returns to uid 10001",
          "[dockerfile][any-uid]") {
  const std::string text = render_checked(any_uid_profile());
  const std::size_t check_user = at(text, "\nUSER 1000650000:0\nRUN python -c \"import getpass, os, pwd, torch;");
  CHECK(at(text, "TRITON_CACHE_DIR=") < check_user);
  CHECK(at(text, "'uid %d has an /etc/passwd entry' % uid") > check_user);
  CHECK(contains(text, "f = torch.compile(lambda x: torch.sin(x) + torch.cos(x))"));
  CHECK(contains(text, " && find /home/gpuenv /tmp -mindepth 1 -user 1000650000 -delete\n"));
  CHECK(text.rfind("\nUSER 10001\nWORKDIR /home/gpuenv\n") > check_user);
  // No compiler, no check: `[image] compiler = false`, PyTorch 1.x.
  CHECK_FALSE(contains(render_checked(any_uid_profile({{"image.compiler", "false"}})), "torch.compile("));
}

TEST_CASE("any uid: g++ beside gcc, and no compiler where torch.compile refuses the Python (torch 2.9, 3.14)",
          "[dockerfile][any-uid]") {
  CHECK(contains(render_checked(any_uid_profile()),
                 "apt-get install -y --no-install-recommends python3 python3-venv gcc g++ libc6-dev python3-dev"));
  const Profile ubi = gpuenv::testing::dockerfile_tests::make_profile({{"os.distro", "rockylinux"},
                                                                       {"os.version", "9"},
                                                                       {"cuda.version", "12.4.1"},
                                                                       {"framework.name", "pytorch"},
                                                                       {"framework.version", "2.5.1"},
                                                                       {"framework.python", "3.9"}});
  CHECK(contains(render_checked(ubi), "python3 python3-pip gcc gcc-c++ python3-devel"));

  const Profile py314 = any_uid_profile({{"cuda.version", "13.0.2"}, {"framework.python", "3.14"}});
  const auto findings = all_findings(py314);
  const Finding* compile = find(findings, "dockerfile.compile");
  REQUIRE(compile != nullptr);
  CHECK(compile->status == Status::warn);
  CHECK(contains(compile->message, "does not run on Python 3.14+"));
  CHECK(contains(compile->source, "torch.compile is not supported on Python 3.14+"));
  const std::string text = render_checked(py314);
  CHECK_FALSE(contains(text, "g++"));
  CHECK_FALSE(contains(text, "torch.compile(lambda"));
  CHECK(contains(text, "no compiler: torch.compile of PyTorch 2.9.1 does not run on Python 3.14+"));
  // Rows by series: 2.4-2.5 refuse 3.13, 2.6 accepts it.
  CHECK(data().compile_gap(*gpuenv::util::Version::parse("2.5.1"), *gpuenv::util::Version::parse("3.13")) != nullptr);
  CHECK(data().compile_gap(*gpuenv::util::Version::parse("2.6.0"), *gpuenv::util::Version::parse("3.13")) == nullptr);
  CHECK(data().compile_gap(*gpuenv::util::Version::parse("2.10.0"), *gpuenv::util::Version::parse("3.14")) == nullptr);
  CHECK(find(all_findings(any_uid_profile()), "dockerfile.compile") == nullptr);
}

TEST_CASE("any uid: the venv is read-only to the runtime uid unless [image] writable_venv = true",
          "[dockerfile][any-uid]") {
  const std::string text = render_checked(any_uid_profile());
  CHECK(contains(text, "torchaudio==2.9.1 \\\n && chmod -R g=rX /opt/venv\n"));
  CHECK(contains(unwrapped(text), "the Python environment is read-only to that uid"));
  const std::string writable = render_checked(any_uid_profile({{"image.writable_venv", "true"}}));
  CHECK(contains(writable, "torchaudio==2.9.1 \\\n && chmod -R g=u /opt/venv\n"));
  CHECK(contains(unwrapped(writable), "writable_venv = true"));
}

TEST_CASE("any uid: io.gpuenv.driver.min is where the image starts, the wheel's floor and the base's requirement apart",
          "[dockerfile][any-uid]") {
  // cu128: CUDA 12 minor-version compatibility, R525+ (data/compat/cuda.toml [[major]]), but the 12.8.1 base's
  // NVIDIA_REQUIRE_CUDA admits R535/R550/R560/R565 and R570+ only (tests/dockerfile/host_driver_test.cpp): the label
  // keeps the R535 and R550 LTS nodes and no longer names R525, where the toolkit refuses the image.
  const std::string text = render_checked(any_uid_profile());
  CHECK(contains(text, "io.gpuenv.driver.min=\"535\""));
  CHECK(contains(text, "io.gpuenv.framework.driver.min=\"525.60.13\""));
  CHECK(contains(text, "io.gpuenv.base.require_cuda=\"cuda>=12.8 brand=unknown,driver>=470,driver<471 "));
  CHECK(contains(text, "# Host driver: >= 535"));
  CHECK(contains(text, "NVIDIA_DISABLE_REQUIRE=true"));
  // cu130 wheels: CUDA 13's floor.
  CHECK(contains(render_checked(any_uid_profile({{"cuda.version", "13.0.2"}, {"framework.python", "3.13"}})),
                 "io.gpuenv.driver.min=\"580.65.06\""));
  // driver.min set by the user wins where the base admits it (R570 meets cuda>=12.8); no wheels (bare CUDA): the
  // toolkit release's requirement, which the base admits, and no framework floor.
  const std::string pinned = render_checked(any_uid_profile({{"driver.min", "570.86.10"}}));
  CHECK(contains(pinned, "io.gpuenv.driver.min=\"570.86.10\""));
  const std::string bare = render_checked(gpuenv::testing::dockerfile_tests::make_profile(
      {{"os.distro", "ubuntu"}, {"os.version", "24.04"}, {"cuda.version", "12.8.1"}}));
  CHECK(contains(bare, "io.gpuenv.driver.min=\"570.124.06\""));
  CHECK_FALSE(contains(bare, "io.gpuenv.framework.driver.min"));
}

TEST_CASE("any uid: [image] rdma = true adds the verbs libraries and documents the run flags",
          "[dockerfile][any-uid]") {
  CHECK_FALSE(contains(render_checked(any_uid_profile()), "libibverbs"));
  const std::string text = render_checked(any_uid_profile({{"image.rdma", "true"}}));
  CHECK(contains(text, "python3-dev libibverbs1 ibverbs-providers librdmacm1"));
  CHECK(contains(text, "--device=/dev/infiniband --cap-add=IPC_LOCK --ulimit memlock=-1"));
  const Profile rocky = gpuenv::testing::dockerfile_tests::make_profile(
      {{"os.distro", "rockylinux"}, {"os.version", "9"}, {"cuda.version", "12.8.1"}, {"image.rdma", "true"}});
  CHECK(contains(render_checked(rocky), "libibverbs librdmacm"));
}

TEST_CASE("any uid: --with-doctor is a readiness signal, never a liveness probe: no HEALTHCHECK",
          "[dockerfile][any-uid]") {
  // Swarm's executor stops the container of a task whose HEALTHCHECK turns unhealthy and fails the task with
  // ErrContainerUnhealthy, so the service replaces it (moby/moby daemon/cluster/executor/container/controller.go,
  // Wait; its test TestControllerWaitUnhealthy expects ContainerStop): any HEALTHCHECK in the image is a liveness
  // probe under Swarm, and a GPU fault would restart-loop the job. So the image declares none, on any path.
  const Profile cuda_only = gpuenv::testing::dockerfile_tests::make_profile(
      {{"os.distro", "ubuntu"}, {"os.version", "24.04"}, {"cuda.version", "12.8.1"}});
  for (const Profile& p : {any_uid_profile(), any_uid_profile({{"image.user", "root"}}), cuda_only}) {
    const std::string text = render_checked(p, true);
    INFO(p.name << " " << p.image_user);
    for (const auto& in : gpuenv::dockerfile::parse_instructions(text)) CHECK(in.keyword != "HEALTHCHECK");
    CHECK_FALSE(contains(text, "HEALTHCHECK --"));
    CHECK(contains(unwrapped(text), "never a liveness probe"));
    CHECK(contains(unwrapped(text), "declare the command as a startupProbe and readinessProbe"));
  }
  const std::string docs = read_text(fs::path(GPUENV_SOURCE_DIR) / "docs/dockerfile.md");
  CHECK(contains(docs, "readinessProbe:"));
  CHECK(contains(docs, "startupProbe:"));
  CHECK_FALSE(contains(docs, "livenessProbe:"));
}

namespace {

/// The download stage's RUN, as /bin/sh runs it, with /tmp/gpuenv moved into `dir`.
std::string download_script(const std::string& text, const fs::path& dir) {
  for (const auto& in : gpuenv::dockerfile::parse_instructions(text)) {
    if (in.keyword == "RUN" && contains(in.arguments, "TARGETARCH")) {
      std::string script = in.arguments;
      const std::string from = "/tmp/gpuenv";
      for (std::size_t pos = script.find(from); pos != std::string::npos; pos = script.find(from, pos)) {
        script.replace(pos, from.size(), (dir / "gpuenv").string());
        pos += (dir / "gpuenv").string().size();
      }
      return script;
    }
  }
  FAIL("no download RUN");
  return {};
}

gpuenv::system::CommandResult sh(const std::string& script, const std::vector<std::string>& environment) {
  std::vector<std::string> argv{"env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin"};
  argv.insert(argv.end(), environment.begin(), environment.end());
  argv.insert(argv.end(), {"sh", "-c", script});
  return gpuenv::system::make_real_system()->run(argv, std::chrono::seconds(60));
}

}  // namespace

TEST_CASE("any uid: the --with-doctor download takes the binary of the target architecture or fails with a message",
          "[dockerfile][any-uid]") {
  TempDir dir;
  const std::string script = download_script(render_checked(any_uid_profile(), true), dir.path());
  // A local "release": curl reads file:// URLs, sha256sum checks it as in the curl image.
  write_text(dir.path() / "release-arm64", "arm64 binary\n");
  write_text(dir.path() / "release-amd64", "amd64 binary\n");
  const auto sha = gpuenv::system::make_real_system()->run({"sha256sum", (dir.path() / "release-arm64").string()},
                                                           std::chrono::seconds(10));
  REQUIRE(sha.exit_code == 0);
  const std::string arm_sha = sha.out.substr(0, 64);
  const std::vector<std::string> urls{"GPUENV_URL_AMD64=file://" + (dir.path() / "release-amd64").string(),
                                      "GPUENV_URL_ARM64=file://" + (dir.path() / "release-arm64").string(),
                                      "GPUENV_SHA256_ARM64=" + arm_sha};

  std::vector<std::string> arm = urls;
  arm.push_back("TARGETARCH=arm64");
  const auto fetched = sh(script, arm);
  INFO(fetched.out << fetched.err);
  CHECK(fetched.exit_code == 0);
  CHECK(read_text(dir.path() / "gpuenv") == "arm64 binary\n");

  // amd64 has a URL but no checksum: refused before any download, naming the arguments.
  std::vector<std::string> amd = urls;
  amd.push_back("TARGETARCH=amd64");
  const auto missing = sh(script, amd);
  CHECK(missing.exit_code == 1);
  CHECK(contains(missing.err, "--with-doctor: set --build-arg GPUENV_URL_AMD64=<release URL> and GPUENV_SHA256_AMD64"));
  CHECK(contains(missing.err, "for linux/amd64"));

  std::vector<std::string> wrong = urls;
  wrong.push_back("TARGETARCH=amd64");
  wrong.push_back("GPUENV_SHA256_AMD64=" + arm_sha);  // the other binary's checksum
  CHECK(sh(script, wrong).exit_code != 0);

  std::vector<std::string> other = urls;
  other.push_back("TARGETARCH=ppc64le");
  const auto unknown = sh(script, other);
  CHECK(unknown.exit_code == 1);
  CHECK(contains(unknown.err, "no gpuenv binary for linux/ppc64le"));
}
