// `gpuenv doctor --frameworks` end to end with the real python3 and stand-in `torch` / `tensorflow` packages that
// this test installs into a virtual environment of its own (no real framework is installed or needed): gpuenv runs
// Python isolated (-I), so PYTHONPATH and the working directory are never on its path (docs/security.md).

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/skip.hpp"
#include "system/system.hpp"
#include "util/strings.hpp"

namespace {

namespace fs = std::filesystem;

/// A stand-in torch/__init__.py: the build's version, CUDA and cuDNN, and the devices torch.cuda reports (count,
/// compiled arch list as a Python list, every device's capability as a Python tuple).
std::string stand_in_torch(const std::string& version, const std::string& cuda, int cudnn, int devices,
                           const std::string& arch_list, const std::string& capability) {
  return "__version__ = \"" + version + "\"\nclass _Version:\n    cuda = \"" + cuda + R"PY("
version = _Version()
class _Cudnn:
    @staticmethod
    def is_available():
        return True
    @staticmethod
    def version():
        return )PY" +
         std::to_string(cudnn) + R"PY(
class _Backends:
    cudnn = _Cudnn()
backends = _Backends()
class _Cuda:
    @staticmethod
    def is_available():
        return True
    @staticmethod
    def device_count():
        return )PY" +
         std::to_string(devices) + R"PY(
    @staticmethod
    def get_arch_list():
        return )PY" +
         arch_list + R"PY(
    @staticmethod
    def get_device_capability(index):
        return )PY" +
         capability + "\ncuda = _Cuda()\n";
}

// torch 2.5 built for CUDA 12.4 (no Blackwell kernels), on a node whose one GPU is compute capability 12.0.
const std::string k_stand_in_torch = stand_in_torch(
    "2.5.1+cu124", "12.4", 90100, 1, R"(["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"])", "(12, 0)");

// torch with three Hopper devices whose tiny matmul goes right on cuda:0, sums wrong on cuda:1 (a faulty GPU) and
// raises on cuda:2, the way a CUDA error surfaces in torch.
const std::string k_stand_in_torch_matmul =
    stand_in_torch("2.6.0+cu126", "12.6", 90500, 3, R"(["sm_80", "sm_90"])", "(9, 0)") + R"PY(
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

/// A virtual environment of /usr/bin/python3 (the layout `python3 -m venv` makes: bin/python3 a link to the
/// interpreter, pyvenv.cfg beside bin/, packages in lib/pythonX.Y/site-packages) holding stand-in packages; removed at
/// the end of the test.
class StandInPackages {
 public:
  explicit StandInPackages(const std::string& name)
      : m_dir(fs::temp_directory_path() / ("gpuenv-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(m_dir);
    const auto version = gpuenv::system::make_real_system()->run(
        {"/usr/bin/python3", "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"},
        std::chrono::seconds(30));
    REQUIRE(version.exit_code == 0);
    m_site = m_dir / "lib" / ("python" + std::string(gpuenv::util::trim(version.out))) / "site-packages";
    fs::create_directories(m_site);
    fs::create_directories(m_dir / "bin");
    fs::create_symlink("/usr/bin/python3", m_dir / "bin" / "python3");
    std::ofstream(m_dir / "pyvenv.cfg") << "home = /usr/bin\ninclude-system-site-packages = false\n";
  }
  ~StandInPackages() { fs::remove_all(m_dir); }
  StandInPackages(const StandInPackages&) = delete;
  StandInPackages& operator=(const StandInPackages&) = delete;

  /// Writes `package`/__init__.py with `text` into the environment's site-packages.
  void add(const std::string& package, const std::string& text) const {
    fs::create_directories(m_site / package);
    std::ofstream(m_site / package / "__init__.py") << text;
  }
  /// The environment's interpreter, for --python.
  std::string python() const { return (m_dir / "bin" / "python3").string(); }
  std::string path() const { return m_dir.string(); }

 private:
  fs::path m_dir;
  fs::path m_site;
};

const nlohmann::json* finding(const nlohmann::json& report, const std::string& id) {
  for (const auto& f : report.at("findings")) {
    if (f.at("id") == id) return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("doctor --frameworks: stand-in torch without sm_120 fails the arch check, a broken tensorflow fails import",
          "[doctor][e2e]") {
  GPUENV_SKIP_UNLESS(fs::exists("/usr/bin/python3"), "python3 is not installed (scripts/bootstrap installs it)");
  const StandInPackages packages("frameworks");
  packages.add("torch", k_stand_in_torch);
  packages.add("tensorflow", k_broken_tensorflow);

  const auto result =
      gpuenv::testing::run_gpuenv({"doctor", "--quick", "--frameworks", "--python", packages.python(), "--json"});
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
}

TEST_CASE("doctor without --quick runs a tiny matmul per torch device: a wrong sum and an error fail, naming them",
          "[doctor][e2e]") {
  GPUENV_SKIP_UNLESS(fs::exists("/usr/bin/python3"), "python3 is not installed (scripts/bootstrap installs it)");
  const StandInPackages packages("matmul");
  packages.add("torch", k_stand_in_torch_matmul);

  // No --quick: the smoke tests are asked for too, and skip here for want of a GPU.
  const auto result = gpuenv::testing::run_gpuenv({"doctor", "--python", packages.python(), "--json"});
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
  const auto quick =
      gpuenv::testing::run_gpuenv({"doctor", "--quick", "--frameworks", "--python", packages.python(), "--json"});
  const auto quick_report = nlohmann::json::parse(quick.out, nullptr, false);
  REQUIRE_FALSE(quick_report.is_discarded());
  CHECK(finding(quick_report, "framework.torch") != nullptr);
  CHECK(finding(quick_report, "framework.torch_matmul") == nullptr);
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

TEST_CASE("doctor --frameworks: a torch.py where root stands, or on PYTHONPATH, is never imported",
          "[doctor][e2e][security][system-test]") {
  // Issue 30 item 3: `python3 -c` puts the working directory first on sys.path, so an administrator who ran doctor
  // from a user's directory ran the user's torch.py as root.
  GPUENV_SKIP_UNLESS(fs::exists("/usr/bin/python3"), "python3 is not installed (scripts/bootstrap installs it)");
  const fs::path planted = fs::temp_directory_path() / ("gpuenv-planted-" + std::to_string(::getpid()));
  fs::remove_all(planted);
  fs::create_directories(planted);
  const fs::path marker = planted / "imported-as-root";
  std::ofstream(planted / "torch.py") << "open('" << marker.string() << "', 'w').write('pwned')\n"
                                      << "__version__ = '6.6.6'\n";
  fs::create_directories(planted / "tensorflow");
  std::ofstream(planted / "tensorflow" / "__init__.py") << "open('" << marker.string() << "', 'w').write('pwned')\n";
  const auto result = gpuenv::testing::run_gpuenv(
      {"doctor", "--quick", "--frameworks", "--python", "python3", "--json"},
      {{"PYTHONPATH", planted.string()}, {"PYTHONSTARTUP", (planted / "torch.py").string()}}, planted.string());
  INFO("stdout: " << result.out);
  INFO("stderr: " << result.err);
  CHECK_FALSE(fs::exists(marker));
  const auto report = nlohmann::json::parse(result.out, nullptr, false);
  REQUIRE_FALSE(report.is_discarded());
  CHECK(result.out.find("6.6.6") == std::string::npos);
  fs::remove_all(planted);
}
