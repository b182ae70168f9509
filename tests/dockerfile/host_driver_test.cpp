// The host driver an image needs (docs/dockerfile.md "Host driver"): the base images' NVIDIA_REQUIRE_CUDA in
// data/dockerfile/base_images.toml against NVIDIA's own Dockerfiles (tests/fixtures/dockerfile/nvidia-cuda/, copied
// from gitlab.com/nvidia/container-images/cuda through a GitHub mirror), the requirement read as the NVIDIA container
// toolkit reads it (libnvidia-container src/cli/dsl.c and configure.c, quoted below), and the labels a scheduler
// filters on: io.gpuenv.driver.min is the lowest driver the image starts on, the framework's own floor is separate.

#include "dockerfile/host_driver.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <regex>

#include "dockerfile_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace df = gpuenv::dockerfile;
using namespace gpuenv::testing::dockerfile_tests;
using gpuenv::profile::Profile;
using gpuenv::util::contains;
using gpuenv::util::Version;

const fs::path k_nvidia = fs::path(GPUENV_SOURCE_DIR) / "tests/fixtures/dockerfile/nvidia-cuda";

/// NVIDIA_REQUIRE_CUDA per NVARCH stage of one of NVIDIA's base Dockerfiles ("x86_64", "sbsa").
std::map<std::string, std::string> require_cuda_of_file(const fs::path& file) {
  const std::string text = read_text(file);
  const std::regex stage(R"re(ENV NVARCH[= ](\S+)\s+ENV NVIDIA_REQUIRE_CUDA[= ]"([^"]*)")re");
  std::map<std::string, std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), stage); it != std::sregex_iterator(); ++it)
    out[(*it)[1].str()] = (*it)[2].str();
  return out;
}

/// Which driver reports CUDA X.Y, as gpuenv's knowledge base says (the lowest driver of the X.Y releases).
std::optional<Version> driver_of_cuda(const Version& major_minor) { return kb().driver_for_minor(major_minor); }

df::Requirement requirement(const std::string& text) {
  auto parsed = df::parse_require_cuda(text);
  INFO((parsed ? std::string() : parsed.error().message));
  REQUIRE(parsed.has_value());
  return *parsed;
}

/// Whether the toolkit starts the image on `driver` (for a GPU of a brand the requirement names).
bool starts_on(const df::Requirement& r, const std::string& driver) {
  const Version d = *Version::parse(driver);
  const auto lowest = df::lowest_admitted(r, d, driver_of_cuda);
  return lowest && *lowest == d;
}

/// PyTorch 2.9.1 on Python 3.12, Ubuntu 24.04, on CUDA `cuda`'s base image.
Profile torch291(const std::string& cuda) {
  return make_profile({{"os.distro", "ubuntu"},
                       {"os.version", "24.04"},
                       {"cuda.version", cuda},
                       {"framework.name", "pytorch"},
                       {"framework.version", "2.9.1"},
                       {"framework.python", "3.12"}});
}

std::string render_for_host(const Profile& p) {
  df::Options options;
  options.gpuenv_version = "0.0.0-test";
  options.profile_argument = "test-profile";
  auto text = df::render(p, kb(), data(), options);
  INFO((text ? std::string() : text.error().message));
  REQUIRE(text.has_value());
  return *text;
}

std::string label(const std::string& text, const std::string& key) {
  const std::size_t at = text.find("      " + key + "=\"");
  if (at == std::string::npos) return {};
  const std::size_t start = text.find('"', at) + 1;
  return text.substr(start, text.find('"', start) - start);
}

}  // namespace

TEST_CASE("host driver: base_images.toml holds NVIDIA_REQUIRE_CUDA exactly as NVIDIA's Dockerfiles set it, per arch",
          "[dockerfile][host-driver]") {
  struct Case {
    const char* file;
    const char* cuda;
  };
  for (const Case& c :
       {Case{"12.8.1-ubuntu2404-base.Dockerfile", "12.8.1"}, Case{"11.8.0-ubuntu2204-base.Dockerfile", "11.8.0"}}) {
    INFO(c.file);
    const auto nvidia = require_cuda_of_file(k_nvidia / c.file);
    REQUIRE(nvidia.size() == 2);
    const Version cuda = *Version::parse(c.cuda);
    REQUIRE(data().require_cuda_of(cuda, "x86_64") != nullptr);
    CHECK(*data().require_cuda_of(cuda, "x86_64") == nvidia.at("x86_64"));
    CHECK(*data().require_cuda_of(cuda, "arm64") == nvidia.at("sbsa"));
  }
  // 11.8's arm64 images admit no older branch at all; its amd64 images admit R470 on the listed brands.
  CHECK(*data().require_cuda_of(*Version::parse("11.8.0"), "arm64") == "cuda>=11.8");
  CHECK(data().require_cuda_of(*Version::parse("13.0.2"), "x86_64") == nullptr);  // not read: no row
  // Every row parses as the toolkit's grammar.
  for (const auto& row : data().require_cuda) {
    INFO(row.cuda.str());
    CHECK(df::parse_require_cuda(row.x86_64).has_value());
    CHECK(df::parse_require_cuda(row.arm64).has_value());
  }
}

TEST_CASE("host driver: the requirement is read as libnvidia-container's dsl.c reads it", "[dockerfile][host-driver]") {
  // dsl.c dsl_evaluate: `while ((or_expr = strsep(&ptr, " ")) != NULL)` ... `while ((and_expr = strsep(&or_expr,
  // ","))` -- space-separated alternatives of comma-separated conditions; evaluate_rule looks the key up with
  // str_case_equal (so 12.3.2's arm64 "CUDA>=12.3" is valid) among the rules configure.c registers (arch, brand,
  // cuda, driver); the operators are = != < <= > >=; a value that is not numeric fails dsl_compare_version (-1:
  // "invalid expression").
  const auto parsed = requirement("cuda>=12.8 brand=tesla,driver>=535,driver<536  CUDA>=12.3");
  REQUIRE(parsed.size() == 3);
  CHECK(parsed[1].size() == 3);
  CHECK(parsed[1][2].key == "driver");
  CHECK(parsed[1][2].op == "<");
  CHECK(parsed[1][2].value == "536");
  CHECK(parsed[2][0].key == "cuda");
  for (const char* bad : {"cuda>=12.8x", "gpu=h100", "driver~535", "driver>=", ">=535", "driver=>535"}) {
    INFO(bad);
    CHECK_FALSE(df::parse_require_cuda(bad).has_value());
  }
}

TEST_CASE("host driver: the 12.8.1 base starts on R535/R550/R560/R565 and R570+, not on R525/R545/R555",
          "[dockerfile][host-driver]") {
  // configure.c: check_driver_version compares the driver (nvrm_version) and check_cuda_version the CUDA version
  // the driver reports; dsl_compare_version compares numerically component by component, so 535.104.05 meets
  // driver>=535,driver<536. The 12.8.1 requirement (NVIDIA's file) lists brand ranges for 470, 535, 550, 560, 565.
  const auto nvidia = require_cuda_of_file(k_nvidia / "12.8.1-ubuntu2404-base.Dockerfile");
  const df::Requirement r = requirement(nvidia.at("x86_64"));
  for (const char* driver : {"470.256.02", "535.104.05", "535.261.03", "550.54.15", "560.35.03", "565.57.01",
                             "570.86.10", "575.57.08", "580.95.05"}) {
    INFO(driver);
    CHECK(starts_on(r, driver));
  }
  for (const char* driver : {"525.60.13", "525.147.05", "545.23.08", "555.42.06", "520.61.05"}) {
    INFO(driver);
    CHECK_FALSE(starts_on(r, driver));
  }
  // The lowest driver the image starts on at or above a framework's floor.
  CHECK(df::lowest_admitted(r, *Version::parse("525.60.13"), driver_of_cuda)->str() == "535");
  CHECK(df::lowest_admitted(r, *Version::parse("545.23.08"), driver_of_cuda)->str() == "550");
  CHECK(df::lowest_admitted(r, *Version::parse("566.03"), driver_of_cuda) == driver_of_cuda(*Version::parse("12.8")));
  CHECK(df::lowest_admitted(r, *Version::parse("550.54.15"), driver_of_cuda)->str() == "550.54.15");
  // 11.8.0 arm64: only cuda>=11.8, so the cu11x wheels' 450.80.02 floor becomes the CUDA 11.8 driver.
  const df::Requirement arm =
      requirement(require_cuda_of_file(k_nvidia / "11.8.0-ubuntu2204-base.Dockerfile").at("sbsa"));
  CHECK(df::lowest_admitted(arm, *Version::parse("450.80.02"), driver_of_cuda) ==
        driver_of_cuda(*Version::parse("11.8")));
}

TEST_CASE("host driver: a cu128 image's driver.min is where the base lets it start, the wheel's floor separate",
          "[dockerfile][host-driver]") {
  // Issue 26 item 4: a scheduler filtering on io.gpuenv.driver.min must keep the R535/R550 LTS nodes the image runs
  // on, and must not send it to R525/R545/R555 nodes where the toolkit refuses it ("unsatisfied condition").
  const Profile p = torch291("12.8.1");
  const std::string text = render_for_host(p);
  CHECK(label(text, "io.gpuenv.driver.min") == "535");
  CHECK(label(text, "io.gpuenv.framework.driver.min") == "525.60.13");
  const auto nvidia = require_cuda_of_file(k_nvidia / "12.8.1-ubuntu2404-base.Dockerfile");
  CHECK(label(text, "io.gpuenv.base.require_cuda") == nvidia.at("x86_64"));
  const std::string header = unwrapped(text);
  CHECK(contains(header, "Host driver: >= 535 (label io.gpuenv.driver.min)"));
  CHECK(contains(header, "the GPU brands it lists, branches 535, 550, 560 and 565"));
  CHECK(contains(header, "NVIDIA_DISABLE_REQUIRE=true"));
  CHECK(contains(header, "Brands it does not list (GeForce, TITAN) need cuda>=12.8"));
  CHECK(own_problems(text).empty());
}

TEST_CASE("host driver: a release whose requirement is not in the data gets the cuda>=X.Y floor and says so",
          "[dockerfile][host-driver]") {
  const Profile p = torch291("13.0.2");
  const std::string text = render_for_host(p);
  const auto cuda_driver = kb().driver_for_minor(*Version::parse("13.0"));
  REQUIRE(cuda_driver);
  // cu130 wheels' floor and the CUDA 13.0 driver: the image starts on neither below the other.
  const Version wheel = *Version::parse(label(text, "io.gpuenv.framework.driver.min"));
  CHECK(label(text, "io.gpuenv.driver.min") == std::max(wheel, *cuda_driver).str());
  CHECK(label(text, "io.gpuenv.base.require_cuda").empty());
  CHECK(contains(unwrapped(text), "NVIDIA_REQUIRE_CUDA is not in gpuenv's data"));
}

TEST_CASE("host driver: an image that uses the base's CUDA keeps the toolkit release's floor",
          "[dockerfile][host-driver]") {
  const Profile p = make_profile({{"os.distro", "ubuntu"}, {"os.version", "22.04"}, {"cuda.version", "11.8.0"}});
  const std::string text = render_for_host(p);
  CHECK(label(text, "io.gpuenv.driver.min") == "520.61.05");  // data/compat/cuda.toml: CUDA 11.8.0 requires it
  CHECK(label(text, "io.gpuenv.framework.driver.min").empty());
  CHECK(contains(label(text, "io.gpuenv.base.require_cuda"), "cuda>=11.8 brand=tesla,driver>=470,driver<471"));
}
