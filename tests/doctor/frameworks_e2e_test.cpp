// `gpuenv doctor --frameworks` end to end with the real python3 and stand-in `torch` / `tensorflow` packages that
// this test writes to a temporary directory and puts on PYTHONPATH (no real framework is installed or needed).

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/fake_system.hpp"
#include "support/run_binary.hpp"

namespace {

namespace fs = std::filesystem;

// torch 2.5 built for CUDA 12.4 (no Blackwell kernels), on a node whose one GPU is compute capability 12.0.
constexpr const char* k_stand_in_torch = R"PY(
__version__ = "2.5.1+cu124"
class _Version:
    cuda = "12.4"
version = _Version()
class _Cudnn:
    @staticmethod
    def is_available():
        return True
    @staticmethod
    def version():
        return 90100
class _Backends:
    cudnn = _Cudnn()
backends = _Backends()
class _Cuda:
    @staticmethod
    def is_available():
        return True
    @staticmethod
    def device_count():
        return 1
    @staticmethod
    def get_arch_list():
        return ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    @staticmethod
    def get_device_capability(index):
        return (12, 0)
cuda = _Cuda()
)PY";

constexpr const char* k_broken_tensorflow =
    "raise ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')\n";

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

const nlohmann::json* finding(const nlohmann::json& report, const std::string& id) {
  for (const auto& f : report.at("findings")) {
    if (f.at("id") == id) return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("doctor --frameworks: stand-in torch without sm_120 fails the arch check, a broken tensorflow fails import",
          "[doctor][e2e]") {
  if (!fs::exists("/usr/bin/python3")) {
    WARN("SKIPPED: python3 is not installed (scripts/bootstrap installs it)");
    return;
  }
  const fs::path dir = fs::temp_directory_path() / ("gpuenv-frameworks-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write(dir / "torch" / "__init__.py", k_stand_in_torch);
  write(dir / "tensorflow" / "__init__.py", k_broken_tensorflow);

  const auto result = gpuenv::testing::run_gpuenv(
      {"doctor", "--quick", "--frameworks", "--python", "/usr/bin/python3", "--json"}, {{"PYTHONPATH", dir.string()}});
  INFO("stdout: " << result.out);
  INFO("stderr: " << result.err);
  const auto report = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(report.is_discarded());
  const auto* arch = finding(report, "framework.torch_arch");
  REQUIRE(arch != nullptr);
  CHECK(arch->at("status") == "fail");
  CHECK(arch->at("message").get<std::string>().find("torch 2.5.1+cu124 has no kernel image and no PTX for sm_120") !=
        std::string::npos);
  CHECK(arch->at("remedy").get<std::string>().find("cu128") != std::string::npos);
  const auto* torch = finding(report, "framework.torch");
  REQUIRE(torch != nullptr);
  CHECK(torch->at("message").get<std::string>().find("torch 2.5.1+cu124 (CUDA 12.4, cuDNN 90100)") == 0);
  const auto* tensorflow = finding(report, "framework.tensorflow");
  REQUIRE(tensorflow != nullptr);
  CHECK(tensorflow->at("status") == "fail");
  CHECK(tensorflow->at("message") ==
        "import tensorflow failed: ImportError: libcudart.so.12: cannot open shared object file: No such file or "
        "directory");
  CHECK(result.exit_code == 1);

  // Without the stand-ins nothing is installed for this python3: a skip, not a failure.
  const auto bare =
      gpuenv::testing::run_gpuenv({"doctor", "--quick", "--frameworks", "--json"}, {{"PYTHONPATH", std::nullopt}});
  const auto bare_report = nlohmann::json::parse(bare.out, nullptr, false);
  REQUIRE_FALSE(bare_report.is_discarded());
  const auto* none = finding(bare_report, "framework.installed");
  if (none != nullptr) CHECK(none->at("status") == "skip");  // absent when this machine has torch installed
  fs::remove_all(dir);
}

TEST_CASE("doctor --frameworks under --root runs nothing and says so", "[doctor][e2e]") {
  const auto result = gpuenv::testing::run_gpuenv(
      {"doctor", "--root", gpuenv::testing::fixture_path("hosts/no-driver"), "--frameworks", "--json"});
  const auto report = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(report.is_discarded());
  const auto* python = finding(report, "framework.python");
  REQUIRE(python != nullptr);
  CHECK(python->at("status") == "skip");
  CHECK(python->at("message").get<std::string>().find("not run under --root") != std::string::npos);
}
