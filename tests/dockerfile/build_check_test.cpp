// The build-time check every generated Dockerfile with a framework carries (docs/dockerfile.md): present in
// every committed file, after the install, with the assertions that make it fail on a CPU-only or shadowed
// framework; and its Python, run for real against stand-in torch/TensorFlow modules, does fail on a CPU wheel,
// on libraries mapped from outside the venv, on missing [and-cuda] wheels and on a shadowing LD_LIBRARY_PATH,
// and passes on a good layout. Whether the real wheels pass it needs `docker build` (no engine here).

#include <catch2/catch.hpp>
#include <chrono>

#include "dockerfile_support.hpp"
#include "support/skip.hpp"
#include "support/source_tree.hpp"
#include "system/system.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::util::contains;

using gpuenv::testing::k_source;

/// Every committed Dockerfile: dockerfiles/ and the golden files.
std::vector<fs::path> committed_dockerfiles() {
  std::vector<fs::path> out;
  for (const fs::path& dir : {k_source / "dockerfiles", k_source / "tests/fixtures/dockerfile/golden"}) {
    for (const std::string& name : files_in(dir, ".Dockerfile")) out.push_back(dir / name);
  }
  return out;
}

/// The Python of the `RUN python -c "..."` check, or "" when the file has none.
std::string check_code(const std::string& text) {
  const std::string start = "\nRUN python -c \"";
  const std::size_t at = text.find(start);
  if (at == std::string::npos) return {};
  const std::size_t begin = at + start.size();
  const std::size_t end = text.find("\"\n", begin);
  return end == std::string::npos ? std::string() : text.substr(begin, end - begin);
}

/// Runs `code` with python3 and the given environment; exit code -2 when there is no python3.
gpuenv::system::CommandResult run_python(const std::string& code, const std::vector<std::string>& environment) {
  std::vector<std::string> argv{"env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin"};
  argv.insert(argv.end(), environment.begin(), environment.end());
  argv.insert(argv.end(), {"python3", "-c", code});
  auto system = gpuenv::system::make_real_system();
  return system->run(argv, std::chrono::seconds(60));
}

bool have_python() {
  auto system = gpuenv::system::make_real_system();
  const auto result = system->run({"env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", "python3", "-c", "pass"},
                                  std::chrono::seconds(30));
  return result.exit_code == 0;
}

/// A stand-in `torch`: version.cuda from FAKE_TORCH_CUDA, and it maps (dlopens) the files in FAKE_TORCH_LIBS,
/// as `import torch` maps its CUDA libraries.
constexpr const char* k_fake_torch = R"(import ctypes, os
class version:
    cuda = os.environ.get('FAKE_TORCH_CUDA') or None
class backends:
    class cudnn:
        @staticmethod
        def version():
            return 91002
__version__ = '0.0.0+standin'
for path in filter(None, os.environ.get('FAKE_TORCH_LIBS', '').split(':')):
    ctypes.CDLL(path)
)";

/// A stand-in `tensorflow` built with CUDA FAKE_TF_CUDA (empty: a CPU build).
constexpr const char* k_fake_tensorflow = R"(import os
class test:
    @staticmethod
    def is_built_with_cuda():
        return bool(os.environ.get('FAKE_TF_CUDA'))
class sysconfig:
    @staticmethod
    def get_build_info():
        return {'cuda_version': os.environ.get('FAKE_TF_CUDA', '')}
__version__ = '0.0.0+standin'
)";

/// A distribution's metadata, so importlib.metadata lists it.
void add_distribution(const fs::path& site, const std::string& name) {
  const fs::path info = site / (name + "-1.0.dist-info");
  fs::create_directories(info);
  write_text(info / "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n");
}

/// The check of the committed file `name` (dockerfiles/), with /opt/venv/ moved to `venv`.
std::string committed_check(const std::string& name, const fs::path& venv) {
  std::string code = check_code(read_text(k_source / "dockerfiles" / name));
  REQUIRE_FALSE(code.empty());
  const std::string from = "/opt/venv/";
  for (std::size_t at = code.find(from); at != std::string::npos; at = code.find(from, at)) {
    code.replace(at, from.size(), venv.string() + "/");
    at += venv.string().size();
  }
  return code;
}

}  // namespace

TEST_CASE("build check: every committed Dockerfile with a framework fails on a CPU-only or shadowed framework",
          "[dockerfile][build-check]") {
  std::size_t torch = 0;
  std::size_t tensorflow = 0;
  for (const fs::path& file : committed_dockerfiles()) {
    const std::string text = read_text(file);
    INFO(file.string());
    const std::string code = check_code(text);
    if (!contains(text, "io.gpuenv.framework=")) {
      CHECK(code.empty());
      continue;
    }
    REQUIRE_FALSE(code.empty());
    CHECK(text.find("\nRUN python -c \"") > text.rfind("pip install "));  // after the install, its own layer
    if (contains(text, "io.gpuenv.framework=\"pytorch")) {
      ++torch;
      CHECK(contains(code, "v = torch.version.cuda or 'none'; assert v.split('.')[:2] == ["));  // a +cpu wheel
      CHECK(contains(code, "not a CUDA build of the framework"));                               // nothing mapped
      CHECK(contains(code, "libraries from outside the wheels"));                               // mapped from elsewhere
      CHECK(contains(code, "LD_LIBRARY_PATH shadows the wheels"));  // a copy first on the search path
    } else {
      ++tensorflow;
      CHECK(contains(code, "assert tf.test.is_built_with_cuda(), 'TensorFlow is built without CUDA'"));
      if (contains(text, "tensorflow[and-cuda]")) {
        CHECK(contains(code, "the [and-cuda] wheels are missing"));
        CHECK(contains(code, "LD_LIBRARY_PATH shadows the wheels"));
      }
    }
  }
  CHECK(torch >= 10);
  CHECK(tensorflow >= 4);
}

TEST_CASE("build check: the PyTorch check's Python fails on a CPU wheel, foreign or shadowing libraries",
          "[dockerfile][build-check]") {
  GPUENV_SKIP_UNLESS(have_python(), "no python3 to run the check with");
#if defined(__SANITIZE_ADDRESS__)
  // The stand-in libraries are copies of the fake libcuda, which this build instruments: python3 cannot load them
  // ("ASan runtime does not come first"). The dev build runs this test.
  GPUENV_SKIP("the stand-in libraries are ASan-instrumented in this build; the dev build runs this test");
#endif
  TempDir dir;
  const fs::path venv = dir.path() / "venv";
  const fs::path site = venv / "lib/site";
  const fs::path wheel_libs = site / "nvidia/lib";
  const fs::path elsewhere = dir.path() / "usr-local-cuda/lib64";
  fs::create_directories(site / "torch");
  fs::create_directories(wheel_libs);
  fs::create_directories(elsewhere);
  write_text(site / "torch/__init__.py", k_fake_torch);
  // Real shared objects under the names torch maps (their content does not matter to the check).
  for (const fs::path& target : {wheel_libs / "libcublas.so.12", wheel_libs / "libcudnn.so.9",
                                 elsewhere / "libcublas.so.12", elsewhere / "libcudnn.so.9"}) {
    fs::copy_file(GPUENV_FAKE_CUDA_LIBRARY, target);
  }
  const std::string code = committed_check("pytorch-2.9-cu128.Dockerfile", venv);
  const std::string python_path = "PYTHONPATH=" + site.string();
  const std::string good_libs =
      "FAKE_TORCH_LIBS=" + (wheel_libs / "libcublas.so.12").string() + ":" + (wheel_libs / "libcudnn.so.9").string();

  const auto good = run_python(code, {python_path, "FAKE_TORCH_CUDA=12.8", good_libs});
  INFO(good.out << good.err);
  CHECK(good.exit_code == 0);
  CHECK(contains(good.out, "torch 0.0.0+standin CUDA 12.8"));

  const auto cpu = run_python(code, {python_path, "FAKE_TORCH_CUDA=", "FAKE_TORCH_LIBS="});
  CHECK(cpu.exit_code != 0);
  CHECK(contains(cpu.err, "torch is built for CUDA none, not 12.8"));

  const auto other_line = run_python(code, {python_path, "FAKE_TORCH_CUDA=12.6", good_libs});
  CHECK(other_line.exit_code != 0);
  CHECK(contains(other_line.err, "not 12.8"));

  const auto nothing_mapped = run_python(code, {python_path, "FAKE_TORCH_CUDA=12.8", "FAKE_TORCH_LIBS="});
  CHECK(nothing_mapped.exit_code != 0);
  CHECK(contains(nothing_mapped.err, "not a CUDA build of the framework"));

  const auto foreign = run_python(code, {python_path, "FAKE_TORCH_CUDA=12.8",
                                         "FAKE_TORCH_LIBS=" + (elsewhere / "libcublas.so.12").string() + ":" +
                                             (wheel_libs / "libcudnn.so.9").string()});
  CHECK(foreign.exit_code != 0);
  CHECK(contains(foreign.err, "libraries from outside the wheels"));
  CHECK(contains(foreign.err, elsewhere.string()));

  const auto shadowed = run_python(
      code, {python_path, "FAKE_TORCH_CUDA=12.8", good_libs, "LD_LIBRARY_PATH=/nonexistent:" + elsewhere.string()});
  CHECK(shadowed.exit_code != 0);
  CHECK(contains(shadowed.err, "LD_LIBRARY_PATH shadows the wheels"));
}

TEST_CASE("build check: the TensorFlow [and-cuda] check's Python fails on a CPU build, missing wheels, shadowing",
          "[dockerfile][build-check]") {
  GPUENV_SKIP_UNLESS(have_python(), "no python3 to run the check with");
  TempDir dir;
  const fs::path site = dir.path() / "site";
  const fs::path shadow = dir.path() / "cuda-lib64";
  fs::create_directories(site / "tensorflow");
  fs::create_directories(shadow);
  write_text(site / "tensorflow/__init__.py", k_fake_tensorflow);
  write_text(shadow / "libcudnn.so.9", "");
  const std::string code = committed_check("tensorflow-2.20-cu125.Dockerfile", dir.path() / "venv");
  const std::string python_path = "PYTHONPATH=" + site.string();

  const auto missing = run_python(code, {python_path, "FAKE_TF_CUDA=12.5.1"});
  CHECK(missing.exit_code != 0);
  CHECK(contains(missing.err, "the [and-cuda] wheels are missing"));

  add_distribution(site, "nvidia_cublas_cu12");
  add_distribution(site, "nvidia-cudnn-cu12");
  const auto good = run_python(code, {python_path, "FAKE_TF_CUDA=12.5.1"});
  INFO(good.out << good.err);
  CHECK(good.exit_code == 0);
  CHECK(contains(good.out, "tensorflow 0.0.0+standin CUDA 12.5.1"));

  const auto cpu = run_python(code, {python_path, "FAKE_TF_CUDA="});
  CHECK(cpu.exit_code != 0);
  CHECK(contains(cpu.err, "TensorFlow is built without CUDA"));

  const auto shadowed = run_python(code, {python_path, "FAKE_TF_CUDA=12.5.1", "LD_LIBRARY_PATH=" + shadow.string()});
  CHECK(shadowed.exit_code != 0);
  CHECK(contains(shadowed.err, "LD_LIBRARY_PATH shadows the wheels"));
}

TEST_CASE("build check: the TensorFlow 2.10 check's Python fails on a CPU build and another CUDA line",
          "[dockerfile][build-check]") {
  GPUENV_SKIP_UNLESS(have_python(), "no python3 to run the check with");
  TempDir dir;
  fs::create_directories(dir.path() / "tensorflow");
  write_text(dir.path() / "tensorflow/__init__.py", k_fake_tensorflow);
  const std::string code = committed_check("tensorflow-2.10-cu112.Dockerfile", dir.path() / "venv");
  const std::string python_path = "PYTHONPATH=" + dir.str();
  const auto good = run_python(code, {python_path, "FAKE_TF_CUDA=11.2"});
  INFO(good.out << good.err);
  CHECK(good.exit_code == 0);
  const auto cpu = run_python(code, {python_path, "FAKE_TF_CUDA="});
  CHECK(cpu.exit_code != 0);
  CHECK(contains(cpu.err, "TensorFlow is built without CUDA"));
  const auto other = run_python(code, {python_path, "FAKE_TF_CUDA=11.8"});
  CHECK(other.exit_code != 0);
  CHECK(contains(other.err, "TensorFlow is built for CUDA 11.8, not 11.2"));
}

TEST_CASE("hygiene: in every committed Dockerfile the only consecutive RUNs are the framework install and its check",
          "[dockerfile][hygiene]") {
  std::size_t files = 0;
  for (const fs::path& file : committed_dockerfiles()) {
    const std::string text = read_text(file);
    INFO(file.string());
    const auto instructions = gpuenv::dockerfile::parse_instructions(text);
    for (std::size_t i = 0; i + 1 < instructions.size(); ++i) {
      if (instructions[i].keyword != "RUN" || instructions[i + 1].keyword != "RUN") continue;
      INFO("line " << instructions[i].line);
      // Kept apart on purpose: changing the check must not re-run the multi-GB install.
      CHECK(contains(instructions[i].arguments, "pip install"));
      CHECK(gpuenv::util::starts_with(instructions[i + 1].arguments, "python -c"));
    }
    for (const auto& in : instructions) {
      if (in.keyword != "RUN") continue;
      if (contains(in.arguments, "apt-get install")) CHECK(contains(in.arguments, "--no-install-recommends"));
      if (contains(in.arguments, "dnf install")) CHECK(contains(in.arguments, "--setopt=install_weak_deps=False"));
      CHECK_FALSE(contains(in.arguments, "--no-cache-dir"));  // cache mounts instead
      // pip itself pinned: to a release, or from the hashed requirements file's hashes.
      if (contains(in.arguments, "-m venv") || contains(in.arguments, "uv venv"))
        CHECK((contains(in.arguments, "-m pip install pip==") || contains(in.arguments, "-r /tmp/pip.hashed.txt")));
    }
    ++files;
  }
  CHECK(files >= 30);
}
