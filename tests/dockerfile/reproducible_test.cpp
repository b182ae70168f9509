// Reproducibility options (docs/dockerfile.md "Reproducible builds"): digests and the digest lock, hashed
// requirements and the framework pin they must carry, cache mounts, pip pinned; the structural checks that
// guard them; and the options end to end through the binary (exit 2 naming the problem, --all with a lock).

#include "dockerfile/reproducible.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "compat/rules.hpp"
#include "dockerfile/dockerfile.hpp"
#include "dockerfile_support.hpp"
#include "support/source_tree.hpp"

namespace {

namespace fs = std::filesystem;
namespace df = gpuenv::dockerfile;
using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::util::contains;
using gpuenv::util::ErrorKind;

using gpuenv::testing::k_source;
const std::string k_hex = "c931d08eb2dc2b60b4d7faafdad6562e9fd1373f0412370d09cf6232681b8d5b";
const std::string k_digest = "sha256:" + k_hex;
const std::string k_requirements = "tests/fixtures/dockerfile/requirements-torch-2.9.1-cu128.txt";

std::string hash_of(char c) { return "--hash=sha256:" + std::string(64, c); }

gpuenv::profile::Profile torch_29() {
  return make_profile({{"os.distro", "ubuntu"},
                       {"os.version", "24.04"},
                       {"cuda.version", "12.8.1"},
                       {"framework.name", "pytorch"},
                       {"framework.version", "2.9.1"},
                       {"framework.python", "3.12"}});
}

df::Options base_options() {
  df::Options out;
  out.gpuenv_version = "0.0.0-test";
  out.profile_argument = "test-profile";
  return out;
}

std::string render_ok(const gpuenv::profile::Profile& p, const df::Options& options) {
  auto text = df::render(p, kb(), data(), options);
  INFO((text ? std::string() : text.error().message));
  REQUIRE(text.has_value());
  return *text;
}

df::HashedRequirements requirements(const std::string& text, const std::string& path = "requirements.txt") {
  auto parsed = df::parse_hashed_requirements(text, path);
  INFO((parsed ? std::string() : parsed.error().message));
  REQUIRE(parsed.has_value());
  return *parsed;
}

}  // namespace

TEST_CASE("reproducible: a digest is sha256 and 64 lower-case hex digits, anything else names the problem",
          "[dockerfile][reproducible]") {
  CHECK(df::is_digest(k_digest));
  CHECK(df::parse_digest(k_digest).has_value());
  const auto no_prefix = df::parse_digest(k_hex);
  REQUIRE_FALSE(no_prefix.has_value());
  CHECK(no_prefix.error().kind == ErrorKind::usage);
  CHECK(contains(no_prefix.error().message, "does not start with `sha256:`"));
  const auto short_one = df::parse_digest("sha256:abc");
  REQUIRE_FALSE(short_one.has_value());
  CHECK(contains(short_one.error().message, "has 3 hex digits after `sha256:`, not 64"));
  const auto upper = df::parse_digest("sha256:" + std::string(64, 'A'));
  REQUIRE_FALSE(upper.has_value());
  CHECK(contains(upper.error().message, "lower-case hex"));
  CHECK_FALSE(df::is_digest("sha512:" + k_hex));
}

TEST_CASE("reproducible: the digest lock maps images to digests, bad lines name file and line",
          "[dockerfile][reproducible]") {
  const auto lock = df::parse_digest_lock("# comment\n\nnvidia/cuda:12.8.1-base-ubuntu24.04 " + k_digest +
                                              "\n  nvidia/cuda:13.0.2-base-ubuntu24.04   " +
                                              "sha256:" + std::string(64, '0') + "  \n",
                                          "d.txt");
  REQUIRE(lock.has_value());
  REQUIRE(lock->find("nvidia/cuda:12.8.1-base-ubuntu24.04") != nullptr);
  CHECK(*lock->find("nvidia/cuda:12.8.1-base-ubuntu24.04") == k_digest);
  CHECK(lock->find("nvidia/cuda:12.6.3-base-ubuntu24.04") == nullptr);

  const auto error_of = [](const std::string& text) {
    const auto parsed = df::parse_digest_lock(text, "d.txt");
    REQUIRE_FALSE(parsed.has_value());
    CHECK(parsed.error().kind == ErrorKind::input);
    return parsed.error().message;
  };
  CHECK(contains(error_of("# c\nnvidia/cuda:12.8.1-base-ubuntu24.04\n"), "d.txt:2: expected `<image> <digest>`"));
  // Helper images are lockable too (docker/dockerfile:1, ghcr.io/astral-sh/uv:<tag>); a reference needs a tag.
  CHECK(df::parse_digest_lock("docker/dockerfile:1 " + k_digest + "\nghcr.io/astral-sh/uv:0.11.23 " + k_digest + "\n",
                              "d.txt")
            .has_value());
  CHECK(contains(error_of("ubuntu " + k_digest + "\n"), "d.txt:1: `ubuntu` is not an image reference with a tag"));
  CHECK(contains(error_of("Ubuntu:24.04 " + k_digest + "\n"), "is not an image reference with a tag"));
  CHECK(contains(error_of("ubuntu:24.04@" + k_digest + " " + k_digest + "\n"), "is not an image reference"));
  CHECK(contains(error_of("nvidia/cuda:12.8.1-base-ubuntu24.04 sha256:12\n"), "d.txt:1: the digest of"));
  CHECK(contains(error_of("nvidia/cuda:x " + k_digest + "\nnvidia/cuda:x sha256:" + std::string(64, '1') + "\n"),
                 "d.txt:2: nvidia/cuda:x is listed twice"));
  CHECK(contains(error_of("# nothing\n"), "no `<image>:<tag> sha256:<hex>` line"));
}

TEST_CASE("reproducible: hashed requirements: pins with hashes only, in the build context",
          "[dockerfile][reproducible]") {
  const df::HashedRequirements fixture = requirements(read_text(k_source / k_requirements), k_requirements);
  CHECK(fixture.pins.size() == 7);
  REQUIRE(fixture.find("torch") != nullptr);
  CHECK(fixture.find("torch")->version == "2.9.1+cu128");
  REQUIRE(fixture.find("nvidia-cudnn-cu12") != nullptr);  // a marker after the pin
  CHECK(fixture.find("nvidia-cudnn-cu12")->version == "9.10.2.21");
  CHECK(requirements("Torch_Vision[extra]==1.0 " + hash_of('a') + "\n").find("torch-vision") != nullptr);

  const auto error_of = [](const std::string& text, const std::string& path = "r.txt") {
    const auto parsed = df::parse_hashed_requirements(text, path);
    REQUIRE_FALSE(parsed.has_value());
    return parsed.error().message;
  };
  CHECK(contains(error_of("torch>=2.9 " + hash_of('a') + "\n"), "r.txt:1: `torch>=2.9` is not pinned with =="));
  CHECK(contains(error_of("# x\ntorch==2.9.1\n"), "r.txt:2: torch==2.9.1 has no --hash"));
  CHECK(contains(error_of("torch==2.9.1 --hash=md5:abc\n"), "is not --hash=sha256:<64 hex digits>"));
  CHECK(contains(error_of("-r other.txt\n"), "r.txt:1: option `-r`"));
  CHECK(contains(error_of("--index-url https://x\n"), "option `--index-url`"));
  CHECK(contains(error_of("# only comments\n"), "no requirements"));
  CHECK(contains(error_of("torch==1 " + hash_of('a') + "\n", "/abs/r.txt"), "is absolute"));
  CHECK(contains(error_of("torch==1 " + hash_of('a') + "\n", "../r.txt"), "leaves the build context"));
  CHECK(contains(error_of("torch==1 " + hash_of('a') + "\n", "my reqs.txt"), "has the character ` `"));
  CHECK(df::parse_hashed_requirements("torch==1 " + hash_of('a') + "\n", "/abs").error().kind == ErrorKind::usage);
}

TEST_CASE("reproducible: the hashed file must pin the framework release the profile installs",
          "[dockerfile][reproducible]") {
  const auto pin = [](const std::string& text, const std::string& cap = "") {
    return df::check_framework_pin(requirements(text), "torch", "2.9.1", "cu128", cap);
  };
  CHECK(pin("torch==2.9.1 " + hash_of('a') + "\n").has_value());
  CHECK(pin("torch==2.9.1+cu128 " + hash_of('a') + "\n").has_value());
  const auto other_variant = pin("torch==2.9.1+cu126 " + hash_of('a') + "\n");
  REQUIRE_FALSE(other_variant.has_value());
  CHECK(other_variant.error().kind == ErrorKind::input);
  CHECK(contains(other_variant.error().message,
                 "requirements.txt:1: torch==2.9.1+cu126, but the profile installs torch==2.9.1 (the cu128 wheel)"));
  CHECK(contains(pin("torch==2.8.0 " + hash_of('a') + "\n").error().message, "torch==2.8.0, but"));
  CHECK(contains(pin("numpy==1.26.4 " + hash_of('a') + "\n").error().message, "no torch pin"));
  CHECK(pin("torch==2.9.1 " + hash_of('a') + "\nnumpy==1.26.4 " + hash_of('b') + "\n", "numpy<2").has_value());
  CHECK(
      contains(pin("torch==2.9.1 " + hash_of('a') + "\nnumpy==2.1.0 " + hash_of('b') + "\n", "numpy<2").error().message,
               "requirements.txt:2: numpy==2.1.0, but torch 2.9.1 was built against NumPy 1.x"));
}

TEST_CASE("reproducible: pip itself is pinned to a release the venv's Python can run", "[dockerfile][reproducible]") {
  const auto pip = [](const char* python) {
    const df::PipPin* row = df::pip_for(data(), *gpuenv::util::Version::parse(python));
    return row == nullptr ? std::string() : row->version;
  };
  CHECK(pip("3.6") == "21.3.1");
  CHECK(pip("3.7") == "24.0");
  CHECK(pip("3.8.20") == "25.0.1");
  CHECK(pip("3.9") == "26.0.1");  // pip 26.1 dropped 3.9
  CHECK(pip("3.10") == "26.2.1");
  CHECK(pip("3.14") == "26.2.1");
  CHECK(pip("3.15").empty());
  for (const df::PipPin& row : data().pip) CHECK_FALSE(row.provenance.source.empty());
  // CVE-2025-8869 is fixed in pip 25.3: only the pins for Pythons no later pip supports carry it.
  REQUIRE(data().pip_advisory.has_value());
  CHECK(data().pip_advisory->id == "CVE-2025-8869");
  CHECK(data().pip_advisory->fixed == *gpuenv::util::Version::parse("25.3"));
  for (const df::PipPin& row : data().pip) {
    INFO(row.version);
    CHECK((df::pip_advisory_of(data(), row) != nullptr) == (row.python_max < *gpuenv::util::Version::parse("3.9")));
  }
  CHECK_FALSE(data().as_of.empty());
}

TEST_CASE("reproducible: a digest pins FROM as image:tag@digest, labelled and in the regenerate line",
          "[dockerfile][reproducible]") {
  df::Options options = base_options();
  options.base_digest = k_digest;
  options.digest_argument = "--digest " + k_digest;
  const std::string text = render_ok(torch_29(), options);
  CHECK(contains(text, "\nFROM nvidia/cuda:12.8.1-base-ubuntu24.04@" + k_digest + "\n"));
  CHECK(contains(text, "# Regenerate with: gpuenv dockerfile test-profile --digest " + k_digest + "\n"));
  CHECK(contains(text, "org.opencontainers.image.base.digest=\"" + k_digest + "\""));
  CHECK(contains(text, "gpuenv cannot reach a registry, so it does not check that the digest belongs to the"));
  CHECK(own_problems(text).empty());
  // Without a digest, nothing of it.
  const std::string plain = render_ok(torch_29(), base_options());
  CHECK_FALSE(contains(plain, "@sha256"));
  CHECK_FALSE(contains(plain, "base.digest"));
}

TEST_CASE("reproducible: hashed requirements replace the pins with a COPY and pip --require-hashes",
          "[dockerfile][reproducible]") {
  df::Options options = base_options();
  options.hashed_requirements = requirements(read_text(k_source / k_requirements), k_requirements);
  const std::string text = render_ok(torch_29(), options);
  CHECK(contains(text, "COPY " + k_requirements +
                           " /opt/venv/requirements.hashed.txt\n"
                           "RUN --mount=type=cache,target=/root/.cache/pip \\\n"
                           "    --mount=type=secret,id=netrc,target=/root/.netrc,required=false \\\n"
                           "    pip install --require-hashes --only-binary :all: --index-url "
                           "https://download.pytorch.org/whl/cu128 \\\n"
                           "      -r /opt/venv/requirements.hashed.txt \\\n && chmod -R g=rX /opt/venv\n"));
  // pip itself comes from the file's hashes too, before the framework: no unhashed bootstrap install.
  CHECK(contains(text, "printf '%s\\n' 'pip==26.2.1 --hash=sha256:"));
  CHECK(contains(text,
                 "/opt/venv/bin/python -m pip install --require-hashes --only-binary :all: --no-deps -r "
                 "/tmp/pip.hashed.txt"));
  CHECK_FALSE(contains(text, "pip install pip=="));
  CHECK_FALSE(contains(text, "torchvision==0.24.1 torchaudio"));  // the pins are the file's now
  CHECK(contains(unwrapped(text), "gpuenv checked that it pins torch==2.9.1+cu128"));
  CHECK(contains(text, "--hashed-requirements " + k_requirements + "\n"));
  CHECK(contains(text, "the build context is used for ./" + k_requirements + " (COPY)"));
  CHECK(contains(text, "io.gpuenv.requirements=\"/opt/venv/requirements.hashed.txt\""));
  CHECK(text.find("COPY ") < text.find("RUN python -c"));
  CHECK(own_problems(text).empty());

  options.hashed_requirements = requirements("torch==2.8.0 " + hash_of('a') + "\n");
  const auto mismatch = df::render(torch_29(), kb(), data(), options);
  REQUIRE_FALSE(mismatch.has_value());
  CHECK(mismatch.error().kind == ErrorKind::input);

  // Without a pip pin, or a pip "version" that is no version: refused naming the file.
  options.hashed_requirements = requirements("torch==2.9.1 " + hash_of('a') + "\n");
  const auto no_pip = df::render(torch_29(), kb(), data(), options);
  REQUIRE_FALSE(no_pip.has_value());
  CHECK(contains(no_pip.error().message, "requirements.txt: no pip pin"));
  options.hashed_requirements = requirements("torch==2.9.1 " + hash_of('a') + "\npip==1';x " + hash_of('b') + "\n");
  const auto odd = df::render(torch_29(), kb(), data(), options);
  REQUIRE_FALSE(odd.has_value());
  CHECK(contains(odd.error().message, "requirements.txt:2: pip==1' is not a plain version"));

  // uv's venv gets no unhashed seed packages: pip from the file, installed by uv.
  gpuenv::profile::Profile uv = torch_29();
  REQUIRE(gpuenv::profile::set_field(uv, "framework.python", "3.11").has_value());
  options.hashed_requirements = requirements(read_text(k_source / k_requirements), k_requirements);
  const std::string uv_text = render_ok(uv, options);
  CHECK(contains(uv_text, "uv venv --python 3.11 /opt/venv"));
  CHECK_FALSE(contains(uv_text, "--seed"));
  CHECK(
      contains(uv_text, "uv pip install --python /opt/venv/bin/python --require-hashes --only-binary :all: --no-deps"));
}

TEST_CASE("reproducible: pip and uv run under cache mounts as root, with the syntax line, never --no-cache-dir",
          "[dockerfile][reproducible]") {
  for (const auto& extra :
       std::vector<std::pair<std::string, std::string>>{{"framework.python", "3.12"}, {"framework.python", "3.11"}}) {
    gpuenv::profile::Profile p = torch_29();
    REQUIRE(gpuenv::profile::set_field(p, extra.first, extra.second).has_value());
    const std::string text = render_ok(p, base_options());
    INFO(extra.second);
    CHECK(gpuenv::util::starts_with(text, "# syntax=docker/dockerfile:1\n"));
    CHECK_FALSE(contains(text, "--no-cache-dir"));
    CHECK_FALSE(contains(text, "UV_NO_CACHE"));
    CHECK(contains(text, "/opt/venv/bin/python -m pip install pip==26.2.1"));
    CHECK(contains(text, "checked " + data().as_of + "; a newer one may exist"));
    // Index credentials as a secret, never a build argument; SOURCE_DATE_EPOCH reaches every RUN of the stage.
    CHECK(contains(text,
                   "RUN --mount=type=cache,target=/root/.cache/pip \\\n"
                   "    --mount=type=secret,id=netrc,target=/root/.netrc,required=false \\\n"
                   "    pip install --index-url"));
    CHECK(contains(text, "--secret id=netrc,src=$HOME/.netrc"));
    CHECK(contains(text, "\nFROM nvidia/cuda:12.8.1-base-ubuntu24.04\nARG SOURCE_DATE_EPOCH\n"));
    CHECK_FALSE(contains(text, "ARG PIP_INDEX_URL"));
    CHECK(contains(text, "PYTHONUNBUFFERED=1"));
    CHECK(contains(text, "docker run --gpus all --ipc=host ... (or --shm-size=8g)"));
    // Every pip runs before the final USER, so /root/.cache is its cache.
    CHECK(text.rfind("pip install") < text.find("\nUSER 10001"));
    if (extra.second == "3.11") {
      CHECK(contains(text, "--mount=type=cache,target=/root/.cache/uv"));
      CHECK(contains(text, "ARG UV_LINK_MODE=copy\n"));
    }
  }
}

TEST_CASE("reproducible: the structural check guards digests, the syntax line, /root caches and unpinned pip",
          "[dockerfile][reproducible][lint]") {
  const std::string syntax = "# syntax=docker/dockerfile:1\n";
  const std::string tail = "USER 10001\n";
  const auto problems = [](const std::string& text) {
    return gpuenv::util::join(df::structural_problems(text, {}), "\n");
  };
  CHECK(problems(syntax + "FROM nvidia/cuda:12.8.1-base-ubuntu24.04@" + k_digest + "\n" + tail).empty());
  CHECK(contains(problems(syntax + "FROM nvidia/cuda:12.8.1-base-ubuntu24.04@sha256:abc\n" + tail),
                 "`sha256:abc` is not a digest"));
  const std::string cached = "RUN --mount=type=cache,target=/root/.cache/pip pip install x==1\n";
  CHECK(problems(syntax + "FROM nvidia/cuda:12.8.1-base-ubuntu24.04\n" + cached + tail).empty());
  CHECK(contains(problems("FROM nvidia/cuda:12.8.1-base-ubuntu24.04\n" + cached + tail),
                 "RUN --mount without a `# syntax=docker/dockerfile:1` directive"));
  // The directive behind a registry mirror, pinned by digest, is still the directive.
  CHECK(problems("# syntax=docker.m.daocloud.io/docker/dockerfile:1@" + k_digest +
                 "\nFROM nvidia/cuda:12.8.1-base-ubuntu24.04\n" + cached + tail)
            .empty());
  CHECK_FALSE(df::is_syntax_directive("# syntax=docker/dockerfile:1.4"));
  CHECK_FALSE(df::is_syntax_directive("# syntax=evil/dockerfile:1"));
  CHECK_FALSE(df::is_syntax_directive("# syntax=evil/docker/dockerfile:1"));  // a Docker Hub namespace, no registry
  CHECK(contains(problems(syntax + "FROM nvidia/cuda:12.8.1-base-ubuntu24.04\nUSER 10001\n" + cached),
                 "cache mount under /root for USER 10001"));
  CHECK(contains(problems(syntax +
                          "FROM nvidia/cuda:12.8.1-base-ubuntu24.04\n"
                          "RUN --mount=type=cache,target=/root/.cache/pip pip install torch\n" +
                          tail),
                 "`torch` is not pinned"));
}

TEST_CASE("reproducible: end to end: --digest, --digest-lock with --all, --hashed-requirements, and bad input",
          "[dockerfile][reproducible][e2e]") {
  SECTION("--digest: FROM pinned; a malformed digest is exit 2 naming the problem") {
    const auto ok = run_in_source({"dockerfile", "pytorch-2.9-cu128", "--digest", k_digest});
    CHECK(ok.exit_code == 0);
    CHECK(contains(ok.out, "FROM nvidia/cuda:12.8.1-base-ubuntu24.04@" + k_digest + "\n"));
    const auto bad = run_in_source({"dockerfile", "pytorch-2.9-cu128", "--digest", "sha256:XYZ"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.out.empty());
    CHECK(contains(bad.err, "--digest `sha256:XYZ` has 3 hex digits after `sha256:`, not 64"));
    const auto both = run_in_source({"dockerfile", "pytorch-2.9-cu128", "--digest", k_digest, "--digest-lock",
                                     "tests/fixtures/dockerfile/digests.txt"});
    CHECK(both.exit_code == 2);
    CHECK(contains(both.err, "--digest and --digest-lock both pin the base image"));
  }
  SECTION("--all: --digest is refused, --digest-lock pins every cell and index.json names each digest") {
    TempDir dir;
    const auto refused =
        run_in_source({"dockerfile", "pytorch-matrix", "--all", "--out-dir", dir.str(), "--digest", k_digest});
    CHECK(refused.exit_code == 2);
    CHECK(contains(refused.err, "use --digest-lock FILE"));
    const auto all = run_in_source({"dockerfile", "pytorch-matrix", "--all", "--out-dir", dir.str(), "--digest-lock",
                                    "tests/fixtures/dockerfile/digests.txt"});
    INFO(all.err);
    REQUIRE(all.exit_code == 0);
    const auto index = nlohmann::json::parse(read_text(dir.path() / "index.json"));
    REQUIRE_FALSE(index["dockerfiles"].empty());
    for (const auto& entry : index["dockerfiles"]) {
      const std::string digest = entry["digest"];
      CHECK(gpuenv::dockerfile::is_digest(digest));
      const std::string text = read_text(dir.path() / entry["file"].get<std::string>());
      CHECK(contains(text, "\nFROM " + entry["image"].get<std::string>() + "@" + digest + "\n"));
      // Every other image is pinned by the lock too: the syntax frontend, and uv where it installs Python.
      CHECK(gpuenv::util::starts_with(text, "# syntax=docker/dockerfile:1@sha256:"));
      for (const auto& helper : entry["helper_images"]) {
        if (helper == "ghcr.io/astral-sh/uv:0.11.23")
          CHECK(contains(text, "FROM ghcr.io/astral-sh/uv:0.11.23@sha256:"));
      }
      CHECK(contains(text, "--digest-lock tests/fixtures/dockerfile/digests.txt"));
      CHECK(own_problems(text).empty());
    }
  }
  SECTION("--digest-lock without the cell's image, or malformed: exit 2 naming the file") {
    TempDir dir;
    write_text(dir.path() / "lock.txt", "nvidia/cuda:12.6.3-base-ubuntu24.04 " + k_digest + "\n");
    const auto missing = run_in_source({"dockerfile", "pytorch-2.9-cu128", "--digest-lock", dir.str() + "/lock.txt"});
    CHECK(missing.exit_code == 2);
    CHECK(contains(missing.err, "lock.txt: no digest for nvidia/cuda:12.8.1-base-ubuntu24.04"));
    write_text(dir.path() / "bad.txt", "nvidia/cuda:12.8.1-base-ubuntu24.04 latest\n");
    const auto bad = run_in_source({"dockerfile", "pytorch-2.9-cu128", "--digest-lock", dir.str() + "/bad.txt"});
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.err, "bad.txt:1: the digest of nvidia/cuda:12.8.1-base-ubuntu24.04 does not start with"));
    const auto absent = run_in_source({"dockerfile", "pytorch-2.9-cu128", "--digest-lock", dir.str() + "/none.txt"});
    CHECK(absent.exit_code == 2);
    // The base alone is not enough: every image the file names must be in the lock.
    write_text(dir.path() / "base-only.txt", "nvidia/cuda:12.8.1-base-ubuntu24.04 " + k_digest + "\n");
    const auto helper = run_in_source(
        {"dockerfile", "pytorch-2.9-cu128", "--with-doctor", "--digest-lock", dir.str() + "/base-only.txt"});
    CHECK(helper.exit_code == 2);
    CHECK(contains(helper.err, "base-only.txt: no digest for docker/dockerfile:1"));
  }
  SECTION("--with-doctor with a lock: the curl stage is pinned by digest too, and a lock without it is exit 2") {
    // The curl image comes from data/dockerfile/base_images.toml [curl]; the fixture lock lists it.
    const std::string& curl = gpuenv::testing::dockerfile_tests::data().curl.image;
    const std::string lock_text = read_text(k_source / "tests/fixtures/dockerfile/digests.txt");
    const std::size_t at = lock_text.find("\n" + curl + " sha256:");
    REQUIRE(at != std::string::npos);
    const std::string digest = lock_text.substr(lock_text.find(' ', at) + 1, 71);
    const auto pinned = run_in_source(
        {"dockerfile", "pytorch-2.9-cu128", "--with-doctor", "--digest-lock", "tests/fixtures/dockerfile/digests.txt"});
    INFO(pinned.err);
    REQUIRE(pinned.exit_code == 0);
    CHECK(contains(pinned.out, "\nFROM " + curl + "@" + digest + " AS gpuenv-download\n"));
    CHECK(own_problems(pinned.out).empty());
    TempDir dir;
    std::string without_curl = lock_text;
    without_curl.erase(at + 1, lock_text.find('\n', at + 1) - at);
    write_text(dir.path() / "no-curl.txt", without_curl);
    const auto missing = run_in_source(
        {"dockerfile", "pytorch-2.9-cu128", "--with-doctor", "--digest-lock", dir.str() + "/no-curl.txt"});
    CHECK(missing.exit_code == 2);
    CHECK(contains(missing.err, "no-curl.txt: no digest for " + curl));
  }
  SECTION("--hashed-requirements: installed with --require-hashes; a file for another release is exit 2") {
    const auto ok = run_in_source({"dockerfile", "pytorch-2.9-cu128", "--hashed-requirements", k_requirements});
    CHECK(ok.exit_code == 0);
    CHECK(contains(ok.out, "pip install --require-hashes"));
    const auto other = run_in_source({"dockerfile", "pytorch-2.9-cu126", "--hashed-requirements", k_requirements});
    CHECK(other.exit_code == 2);
    CHECK(other.out.empty());
    CHECK(contains(other.err, "torch==2.9.1+cu128, but the profile installs torch==2.9.1 (the cu126 wheel)"));
    const auto no_framework = run_in_source({"dockerfile", "cuda-13.0-base", "--hashed-requirements", k_requirements});
    CHECK(no_framework.exit_code == 2);
    TempDir dir;
    const auto all = run_in_source(
        {"dockerfile", "pytorch-matrix", "--all", "--out-dir", dir.str(), "--hashed-requirements", k_requirements});
    CHECK(all.exit_code == 2);
    CHECK(files_in(dir.path(), ".Dockerfile").empty());
  }
}
