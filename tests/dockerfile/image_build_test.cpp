// A generated Dockerfile built and run by a real engine (issue 26, item 11): `podman build` (buildah underneath)
// and `buildah run` as root, chroot isolation, overlay storage where the kernel lets root mount it and vfs otherwise,
// in a private storage root under the CI cache. No
// registry or PyPI is reachable here, so the `nvidia/cuda:12.8.1-base-ubuntu24.04` the file names is a stand-in
// built from a debootstrapped Ubuntu 24.04 root (scripts/ubuntu-root) with NVIDIA's environment variables, and pip
// finds a local wheelhouse (through /etc/pip.conf in that base: no-index, find-links) holding stand-in
// torch/torchvision/torchaudio and nvidia-* wheels and the distribution's pip re-labelled as the pinned release
// (tests/dockerfile/standin/). Everything else is the generated file as users get it: Ubuntu's own apt and python3,
// the venv, the pinned pip step, the pinned torch install, the library-origin check, and torch.compile as a uid
// without an /etc/passwd entry at build time.
//
// The built image then runs as another arbitrary uid (group 0): the file's two checks again, the GPU job's
// RUNTIME_CHECK from deploy/github/images.yml with the test's fake libcuda where the NVIDIA container toolkit would
// mount the driver (a directory on the image's LD_LIBRARY_PATH), the venv read-only and the home writable; and two
// controls that must fail: without the driver, and without USER/LOGNAME/TORCHINDUCTOR_CACHE_DIR
// (pytorch/pytorch#140765's KeyError).
//
// What the stand-ins cannot show, only CI with a GPU runner does: the real wheels' size and libraries, Inductor's
// and Triton's real code generation, a CUDA matmul. The stand-in base lacks the real one's cudart and cuda-compat.
// Layers are cached in the private storage across runs (keyed by the base root, the wheelhouse and the file's
// text, as any builder's cache is); the checks in the running image run each time regardless.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>

#include "dockerfile/dockerfile.hpp"
#include "dockerfile_support.hpp"
#include "support/skip.hpp"
#include "support/source_tree.hpp"
#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::util::contains;
using std::chrono::minutes;
using std::chrono::seconds;

using gpuenv::testing::k_source;
constexpr const char* k_base_tag = "docker.io/nvidia/cuda:12.8.1-base-ubuntu24.04";
constexpr const char* k_image = "localhost/gpuenv-image-test:latest";

/// Why the test cannot run here, or "" when it can.
std::string missing_requirement() {
#if defined(__SANITIZE_ADDRESS__)
  return "the fake libcuda and the stand-in libraries are ASan-instrumented in this build; the dev build runs this "
         "test";
#else
  if (::geteuid() != 0) return "not root (podman as root with chroot isolation as CI runs it)";
  auto system = gpuenv::system::make_real_system();
  for (const char* tool : {"podman", "debootstrap", "python3", "dpkg-deb", "curl", "gpg"}) {
    const auto found = system->run({"sh", "-c", std::string("command -v ") + tool}, seconds(10));
    if (found.exit_code != 0) return std::string(tool) + " is not installed (scripts/bootstrap installs it)";
  }
  return {};
#endif
}

/// An exclusive lock on the shared image store, held for the test: other test processes (other build trees,
/// other helpers' runs) wait rather than share podman's state.
class StoreLock {
 public:
  explicit StoreLock(const fs::path& path) : m_fd(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600)) {
    REQUIRE(m_fd >= 0);
    REQUIRE(::flock(m_fd, LOCK_EX) == 0);
  }
  ~StoreLock() { ::close(m_fd); }
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  int m_fd;
};

/// podman and buildah on the private store. Images are built with `podman build` (buildah underneath,
/// chroot isolation) and run with `buildah run` (chroot isolation too): `podman run` needs an OCI runtime that can
/// set rlimits and cgroups, which a CI runner that is itself a container may not delegate (crun here: "cgroups in
/// hybrid mode not supported"); the image, its config (user, environment, working directory) and the process are
/// the same.
class Engine {
 public:
  Engine(const fs::path& store, std::string driver)
      : m_store(store), m_driver(std::move(driver)), m_system(gpuenv::system::make_real_system()) {}

  gpuenv::system::CommandResult podman(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    return run_tool("podman", {"--cgroup-manager", "cgroupfs", "--events-backend", "file"}, args, timeout);
  }
  gpuenv::system::CommandResult buildah(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    return run_tool("buildah", {}, args, timeout);
  }
  bool has_image(const std::string& reference) {
    return podman({"image", "exists", reference}, seconds(60)).exit_code == 0;
  }

 private:
  gpuenv::system::CommandResult run_tool(const char* tool, const std::vector<std::string>& options,
                                         const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    std::vector<std::string> argv{
        tool,    "--root", (m_store / "root").string(), "--runroot", (m_store / "run").string(), "--storage-driver",
        m_driver};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return m_system->run(argv, timeout);
  }

  fs::path m_store;
  std::string m_driver;
  std::unique_ptr<gpuenv::system::System> m_system;
};

std::string cache_root() {
  const char* configured = std::getenv("GPUENV_ROOT_CACHE");
  return configured != nullptr && *configured != '\0' ? configured : "/var/cache/gpuenv-ci";
}

gpuenv::system::CommandResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  return gpuenv::system::make_real_system()->run(argv, timeout);
}

/// The storage driver for a store under `cache`: overlay where root may mount it there (a layer is then its diff),
/// else vfs, which copies the whole root for every layer and every container (a CI runner that is a container
/// without CAP_SYS_ADMIN, a cache on overlayfs itself). Both are containers/storage's drivers; the image is the same.
std::string storage_driver(const fs::path& cache) {
  std::string pattern = (cache / "overlay-probe-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return "vfs";
  const fs::path probe(pattern);
  for (const char* dir : {"lower", "upper", "work", "merged"}) fs::create_directories(probe / dir);
  const std::string options = "lowerdir=" + (probe / "lower").string() + ",upperdir=" + (probe / "upper").string() +
                              ",workdir=" + (probe / "work").string();
  const bool mounted =
      run({"mount", "-t", "overlay", "overlay", "-o", options, (probe / "merged").string()}, seconds(30)).exit_code ==
      0;
  if (mounted) run({"umount", (probe / "merged").string()}, seconds(30));
  std::error_code ignored;
  fs::remove_all(probe, ignored);
  return mounted ? "overlay" : "vfs";
}

std::string last_lines(const std::string& text, std::size_t count) {
  std::size_t at = text.size();
  for (std::size_t n = 0; n <= count && at != std::string::npos && at > 0; ++n) at = text.rfind('\n', at - 1);
  return at == std::string::npos ? text : text.substr(at + 1);
}

/// The Python of the n-th `RUN python -c "..."` of a generated Dockerfile (0: the library check, 1: torch.compile).
std::string python_check(const std::string& text, std::size_t index) {
  const std::string start = "RUN python -c \"";
  std::size_t at = 0;
  for (std::size_t n = 0;; ++n) {
    at = text.find(start, at);
    REQUIRE(at != std::string::npos);
    at += start.size();
    if (n == index) break;
  }
  const std::size_t end = text.find('"', at);
  REQUIRE(end != std::string::npos);
  return text.substr(at, end - at);
}

/// RUNTIME_CHECK, the GPU job's Python, from deploy/github/images.yml (a literal block under `env:`).
std::string runtime_check() {
  const std::string workflow = read_text(k_source / "deploy/github/images.yml");
  const std::string key = "  RUNTIME_CHECK: |\n";
  std::size_t at = workflow.find(key);
  REQUIRE(at != std::string::npos);
  at += key.size();
  std::string code;
  while (at < workflow.size() && workflow.compare(at, 4, "    ") == 0) {
    const std::size_t end = workflow.find('\n', at);
    code += workflow.substr(at + 4, end - at - 4) + "\n";
    at = end + 1;
  }
  REQUIRE_FALSE(code.empty());
  return code;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The stand-in nvidia/cuda base: the debootstrapped root imported once per root (keyed by its completion stamp),
/// then NVIDIA's environment and the local package index on top (rebuilt each run; the layers are cached by
/// content, so an unchanged wheelhouse keeps every later layer's cache).
void build_base(Engine& engine, const fs::path& root, const fs::path& work, const std::string& pip_version) {
  // A tag from the stamp's time (file_time_type counts from an implementation epoch: it may be negative).
  const auto stamp = fs::last_write_time(root / ".gpuenv-root-complete").time_since_epoch().count();
  char key[17];
  std::snprintf(key, sizeof key, "%016llx",
                static_cast<unsigned long long>(gpuenv::dockerfile::fnv1a64(std::to_string(stamp))));
  const std::string minbase = std::string("localhost/gpuenv-standin/ubuntu-noble-minbase:") + key;
  if (!engine.has_image(minbase)) {
    const fs::path tar = work / "root.tar";
    const auto packed =
        run({"tar", "-C", root.string(), "--exclude=./.gpuenv-root-complete", "-cf", tar.string(), "."}, minutes(10));
    REQUIRE(packed.exit_code == 0);
    const auto imported = engine.podman({"import", tar.string(), minbase}, minutes(10));
    INFO(imported.err);
    REQUIRE(imported.exit_code == 0);
    fs::remove(tar);
  }
  const fs::path context = work / "base";
  fs::create_directories(context / "wheelhouse");
  // The distribution's pip wheel, re-labelled as the pin (the stand-in wheelhouse holds no real pip release).
  const fs::path debs = root.string() + ".debs";
  const std::vector<std::string> pip_debs = files_in(debs, ".deb");
  REQUIRE(pip_debs.size() == 1);
  REQUIRE(run({"dpkg-deb", "-x", (debs / pip_debs[0]).string(), (work / "pip-deb").string()}, minutes(2)).exit_code ==
          0);
  const std::vector<std::string> pip_wheels = files_in(work / "pip-deb/usr/share/python-wheels", ".whl");
  REQUIRE(pip_wheels.size() == 1);
  const auto wheels = run({"python3", (k_source / "tests/dockerfile/standin/make_wheelhouse.py").string(),
                           (context / "wheelhouse").string(), "--torch", "2.9.1", "--variant", "cu128", "--cuda-line",
                           "12.8", "--torchvision", "0.24.1", "--torchaudio", "2.9.1", "--pip-wheel",
                           (work / "pip-deb/usr/share/python-wheels" / pip_wheels[0]).string(), "--pip-version",
                           pip_version, "--library", GPUENV_FAKE_CUDA_LIBRARY},
                          minutes(2));
  INFO(wheels.out << wheels.err);
  REQUIRE(wheels.exit_code == 0);
  write_text(context / "pip.conf", "[global]\nno-index = true\nfind-links = /wheelhouse\n");
  // NVIDIA's base images set these (dist/<version>/ubuntu2404/base/Dockerfile in NVIDIA's image repository).
  write_text(
      context / "Containerfile",
      "FROM " + minbase +
          "\nCOPY wheelhouse /wheelhouse\nCOPY pip.conf /etc/pip.conf\n"
          "ENV NVARCH=x86_64 NVIDIA_REQUIRE_CUDA=cuda>=12.8 CUDA_VERSION=12.8.1 "
          "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "
          "LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 NVIDIA_VISIBLE_DEVICES=all "
          "NVIDIA_DRIVER_CAPABILITIES=compute,utility\n");
  // buildah's COPY cache key covers the files' times too: a fixed time keeps an unchanged wheelhouse a cache hit.
  for (const auto& entry : fs::recursive_directory_iterator(context))
    fs::last_write_time(entry.path(), fs::file_time_type());
  fs::last_write_time(context, fs::file_time_type());
  const auto base = engine.podman({"build", "--isolation", "chroot", "--pull=never", "--layers", "-t", k_base_tag, "-f",
                                   (context / "Containerfile").string(), context.string()},
                                  minutes(10));
  INFO(base.out << base.err);
  REQUIRE(base.exit_code == 0);
}

/// The files the checks run from inside the container (mounted read-only at /checks).
void write_checks(const fs::path& dir, const std::string& dockerfile) {
  fs::create_directories(dir);
  write_text(dir / "library_check.py", python_check(dockerfile, 0) + "\n");
  write_text(dir / "compile_check.py", python_check(dockerfile, 1) + "\n");
  write_text(dir / "runtime_check.py", runtime_check());
  write_text(dir / "fake_cuda.conf", "device_count=1\nname=Stand-in GPU\n");
  write_text(
      dir / "run.sh",
      "set -e\n"
      "python /checks/library_check.py\n"
      "python /checks/compile_check.py\n"
      "python /checks/runtime_check.py\n"
      "if touch /opt/venv/probe 2>/dev/null; then echo \"the venv is writable by uid $(id -u)\" >&2; exit 1; fi\n"
      "touch \"$HOME/probe\"\n"
      "echo \"all checks passed as uid $(id -u) gid $(id -g), HOME=$HOME\"\n");
}

}  // namespace

TEST_CASE("image: the generated pytorch-2.9-cu128 Dockerfile builds with podman and runs as any uid in group 0",
          "[dockerfile][image][system-test][engine]") {
  GPUENV_SKIP_IF_REASON(missing_requirement());
  const auto started = std::chrono::steady_clock::now();
  TempDir work;
  const fs::path context = work.path() / "context";
  fs::create_directories(context);
  const fs::path dockerfile = context / "Dockerfile";
  const auto generated = run_in_source({"dockerfile", "pytorch-2.9-cu128", "-o", dockerfile.string()});
  INFO(generated.err);
  REQUIRE(generated.exit_code == 0);
  const std::string text = read_text(dockerfile);
  REQUIRE(contains(text, "\nFROM nvidia/cuda:12.8.1-base-ubuntu24.04\n"));
  std::smatch pin;
  REQUIRE(std::regex_search(text, pin, std::regex(R"(-m pip install pip==(\S+))")));

  const auto root = run({(k_source / "scripts/ubuntu-root").string(), "noble", "python3-pip-whl"}, minutes(30));
  GPUENV_SKIP_UNLESS(root.exit_code == 0,
                     "no Ubuntu 24.04 root for the stand-in of the file's nvidia/cuda:12.8.1-base-ubuntu24.04 (the "
                     "Ubuntu archive is not reachable?): "
                         << last_lines(root.err, 5));
  const fs::path cache(cache_root());
  fs::create_directories(cache);
  const std::string driver = storage_driver(cache);
  const std::string store_name = driver == "vfs" ? "podman-images" : "podman-images-" + driver;
  fs::create_directories(cache / store_name);
  StoreLock lock(cache / (store_name + ".lock"));
  Engine engine(cache / store_name, driver);
  build_base(engine, std::string(gpuenv::util::trim(root.out)), work.path(), pin[1].str());
  const double base_seconds = seconds_since(started);

  const auto build_started = std::chrono::steady_clock::now();
  const fs::path log = work.path() / "build.log";
  const auto built = engine.podman({"build", "--isolation", "chroot", "--pull=never", "--layers", "--logfile",
                                    log.string(), "-t", k_image, "-f", dockerfile.string(), context.string()},
                                   minutes(45));
  const std::string build_log = fs::exists(log) ? read_text(log) : built.out + built.err;
  INFO(last_lines(build_log, 40));
  REQUIRE(built.exit_code == 0);
  // Every RUN passed, now or in the build whose layers are cached: a failing RUN leaves no layer.
  CHECK(contains(build_log, "USER 1000650000:0"));
  CHECK(contains(build_log, "chmod -R g=rX /opt/venv"));
  const double build_seconds = seconds_since(build_started);

  const auto run_started = std::chrono::steady_clock::now();
  const fs::path checks = work.path() / "checks";
  write_checks(checks, text);
  engine.buildah({"rm", "gpuenv-image-test"}, minutes(5));  // a container a failed run left behind
  const auto created = engine.buildah({"from", "--pull=never", "--name", "gpuenv-image-test", k_image}, minutes(20));
  INFO(created.err);
  REQUIRE(created.exit_code == 0);
  const std::string checks_mount = checks.string() + ":/checks:ro";
  const std::string libcuda = std::string(GPUENV_FAKE_CUDA_LIBRARY) + ":/usr/local/nvidia/lib64/libcuda.so.1:ro";
  const auto in_image = [&engine, &checks_mount](std::vector<std::string> extra, std::vector<std::string> command) {
    std::vector<std::string> args{"run",        "--isolation",  "chroot",
                                  "--user",     "1000700000:0", "-v",
                                  checks_mount, "--env",        "GPUENV_FAKE_CUDA=/checks/fake_cuda.conf"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("gpuenv-image-test");
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return engine.buildah(args, minutes(10));
  };
  const auto passed = in_image({"-v", libcuda}, {"sh", "/checks/run.sh"});
  INFO(passed.out << passed.err);
  CHECK(passed.exit_code == 0);
  CHECK(contains(passed.out, "torch 2.9.1+cu128 CUDA 12.8 cuDNN 91002"));  // the library-origin check
  CHECK(contains(passed.out, "torch.compile on the CPU as uid 1000700000 user gpuenv"));
  CHECK(contains(passed.out, "ok: uid 1000700000 user gpuenv GPUs 1"));  // the GPU job's check
  CHECK(contains(passed.out, "all checks passed as uid 1000700000 gid 0, HOME=/home/gpuenv"));

  // Controls: without the driver the GPU job's check fails; without the variables that name the user, the same
  // torch.compile fails as pytorch/pytorch#140765 reports. So the checks above can fail.
  const auto no_gpu = in_image({}, {"python", "/checks/runtime_check.py"});
  CHECK(no_gpu.exit_code != 0);
  CHECK(contains(no_gpu.err, "torch sees no GPU"));
  REQUIRE(engine
              .buildah({"config", "--env", "USER-", "--env", "LOGNAME-", "--env", "TORCHINDUCTOR_CACHE_DIR-",
                        "gpuenv-image-test"},
                       minutes(1))
              .exit_code == 0);
  const auto unnamed = in_image({}, {"python", "/checks/compile_check.py"});
  CHECK(unnamed.exit_code != 0);
  CHECK(contains(unnamed.err, "getpwuid(): uid not found: 1000700000"));
  engine.buildah({"rm", "gpuenv-image-test"}, minutes(5));
  const double run_seconds = seconds_since(run_started);

  const auto size = engine.podman({"image", "inspect", "--format", "{{.Size}}", k_image}, minutes(1));
  // The previous build's image lost its tag: drop its layers so the store holds one build.
  engine.podman({"image", "prune", "-f"}, minutes(10));
  WARN("image system test (" << driver << " storage): base " << base_seconds << " s, build " << build_seconds
                             << " s, runs " << run_seconds << " s; stand-in image " << gpuenv::util::trim(size.out)
                             << " bytes");
}
