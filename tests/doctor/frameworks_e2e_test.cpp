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

// torch with three Hopper devices whose tiny matmul goes right on cuda:0, sums wrong on cuda:1 (a faulty GPU) and
// raises on cuda:2, the way a CUDA error surfaces in torch.
constexpr const char* k_stand_in_torch_matmul = R"PY(
__version__ = "2.6.0+cu126"
class _Version:
    cuda = "12.6"
version = _Version()
class _Cudnn:
    @staticmethod
    def is_available():
        return True
    @staticmethod
    def version():
        return 90500
class _Backends:
    cudnn = _Cudnn()
backends = _Backends()
class _Cuda:
    @staticmethod
    def is_available():
        return True
    @staticmethod
    def device_count():
        return 3
    @staticmethod
    def get_arch_list():
        return ["sm_80", "sm_90"]
    @staticmethod
    def get_device_capability(index):
        return (9, 0)
cuda = _Cuda()
class _Scalar:
    def __init__(self, value):
        self.value = value
    def item(self):
        return self.value
class Tensor:
    def __init__(self, n, fill, device):
        self.n, self.fill, self.device = n, fill, device
    def sum(self):
        return _Scalar(float(self.fill * self.n * self.n))
def ones(shape, device="cpu"):
    return Tensor(shape[0], 1.0, device)
def matmul(a, b):
    if a.device == "cuda:2":
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be "
                           "asynchronously reported")
    fill = a.fill * b.fill * a.n
    return Tensor(a.n, fill / 2 if a.device == "cuda:1" else fill, a.device)
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

TEST_CASE("doctor without --quick runs a tiny matmul per torch device: a wrong sum and an error fail, naming them",
          "[doctor][e2e]") {
  if (!fs::exists("/usr/bin/python3")) {
    WARN("SKIPPED: python3 is not installed (scripts/bootstrap installs it)");
    return;
  }
  const fs::path dir = fs::temp_directory_path() / ("gpuenv-matmul-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write(dir / "torch" / "__init__.py", k_stand_in_torch_matmul);

  // No --quick: the smoke tests are asked for too, and skip here for want of a GPU.
  const auto result =
      gpuenv::testing::run_gpuenv({"doctor", "--python", "/usr/bin/python3", "--json"}, {{"PYTHONPATH", dir.string()}});
  INFO("stdout: " << result.out);
  INFO("stderr: " << result.err);
  const auto report = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(report.is_discarded());
  const auto* matmul = finding(report, "framework.torch_matmul");
  REQUIRE(matmul != nullptr);
  CHECK(matmul->at("status") == "fail");
  CHECK(matmul->at("message") ==
        "a 64x64 matmul in torch 2.6.0+cu126: cuda:1 computed a wrong result (the sum is 131072.0, expected "
        "262144.0); cuda:2 failed (RuntimeError: CUDA error: an illegal memory access was encountered)");
  CHECK(finding(report, "framework.torch_arch")->at("status") == "pass");
  CHECK(result.exit_code == 1);

  // --quick keeps the import checks and leaves the devices alone.
  const auto quick = gpuenv::testing::run_gpuenv(
      {"doctor", "--quick", "--frameworks", "--python", "/usr/bin/python3", "--json"}, {{"PYTHONPATH", dir.string()}});
  const auto quick_report = nlohmann::json::parse(quick.out, nullptr, false);
  REQUIRE_FALSE(quick_report.is_discarded());
  CHECK(finding(quick_report, "framework.torch") != nullptr);
  CHECK(finding(quick_report, "framework.torch_matmul") == nullptr);
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
