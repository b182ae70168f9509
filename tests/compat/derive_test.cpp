// compat::derive (image tag, wheel variant and index, driver floor), the variant helpers and judge_driver.
// Expected values follow shared/reference/{nvidia-cuda-images,pytorch,cuda-driver}.md.

#include "compat/derive.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "compat/knowledge_base.hpp"
#include "compat/rule_rows.hpp"
#include "compat/rules.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"
#include "util/version.hpp"

namespace {

using gpuenv::testing::rule_rows::kb;

using gpuenv::compat::KnowledgeBase;
using gpuenv::profile::Profile;
using gpuenv::util::Version;

Version v(const char* text) {
  const auto parsed = Version::parse(text);
  if (!parsed) throw std::invalid_argument(std::string("test bug: not a version: ") + text);
  return *parsed;
}

struct ImageCase {
  const char* distro;
  const char* os_version;
  const char* cuda;
  const char* cudnn;
  const char* flavor;
  const char* image_os;
  const char* flavor_token;
  const char* tag;
};

Profile image_profile(const ImageCase& c) {
  Profile profile;
  profile.os_distro = c.distro;
  profile.os_version = c.os_version;
  profile.cuda_version = c.cuda;
  profile.cudnn_version = c.cudnn;
  profile.image_flavor = c.flavor;
  return profile;
}

std::string_view status(const gpuenv::compat::DriverJudgement& judged) {
  return gpuenv::report::to_string(judged.status);
}

}  // namespace

// nvidia-cuda-images.md: tag grammar <X.Y.Z>-<flavor>-<os>; cudnn8 (11.x .. 12.2.2), cudnn9 (12.3.2), cudnn (12.4.1+).
TEST_CASE("compat: derive forms the nvidia/cuda tag", "[compat][derive]") {
  const ImageCase cases[] = {
      {"ubuntu", "20.04", "11.2.2", "8", "runtime", "ubuntu20.04", "cudnn8-runtime",
       "11.2.2-cudnn8-runtime-ubuntu20.04"},
      {"ubuntu", "22.04", "12.4.1", "9", "devel", "ubuntu22.04", "cudnn-devel", "12.4.1-cudnn-devel-ubuntu22.04"},
      {"ubuntu", "22.04", "12.3.2", "9", "runtime", "ubuntu22.04", "cudnn9-runtime",
       "12.3.2-cudnn9-runtime-ubuntu22.04"},
      {"ubuntu", "22.04", "12.2.2", "8", "runtime", "ubuntu22.04", "cudnn8-runtime",
       "12.2.2-cudnn8-runtime-ubuntu22.04"},
      {"ubuntu", "22.04", "11.7.1", "", "base", "ubuntu22.04", "base", "11.7.1-base-ubuntu22.04"},
      {"ubuntu", "24.04", "13.0.2", "9", "runtime", "ubuntu24.04", "cudnn-runtime", "13.0.2-cudnn-runtime-ubuntu24.04"},
      {"ubuntu", "22.04", "12.4.1", "", "", "ubuntu22.04", "runtime", "12.4.1-runtime-ubuntu22.04"},
      {"ubuntu", "22.04", "12.4.1", "9", "base", "ubuntu22.04", "base", "12.4.1-base-ubuntu22.04"},
      {"rhel", "9", "12.4.1", "", "runtime", "ubi9", "runtime", "12.4.1-runtime-ubi9"},
      {"rhel", "8", "12.4.1", "9", "devel", "ubi8", "cudnn-devel", "12.4.1-cudnn-devel-ubi8"},
      {"ubi", "9", "12.6.3", "", "devel", "ubi9", "devel", "12.6.3-devel-ubi9"},
      {"rockylinux", "9", "12.8.1", "9", "runtime", "rockylinux9", "cudnn-runtime", "12.8.1-cudnn-runtime-rockylinux9"},
      {"amzn", "2023", "12.6.3", "", "runtime", "amzn2023", "runtime", "12.6.3-runtime-amzn2023"},
      {"debian", "12", "12.4.1", "", "runtime", "", "runtime", ""},
  };
  for (const ImageCase& c : cases) {
    INFO(c.distro << " " << c.os_version << " CUDA " << c.cuda << " cuDNN '" << c.cudnn << "' " << c.flavor);
    const auto derived = gpuenv::compat::derive(image_profile(c), kb());
    CHECK(derived.image_os == c.image_os);
    CHECK(derived.image_flavor == c.flavor_token);
    CHECK(derived.image_tag == c.tag);
    CHECK(derived.torch_variant.empty());
    CHECK(derived.wheel_index_url.empty());
  }
}

TEST_CASE("compat: image_os_suffix maps distros to nvidia/cuda OS suffixes", "[compat][derive]") {
  using gpuenv::compat::image_os_suffix;
  CHECK(image_os_suffix("ubuntu", "22.04") == "ubuntu22.04");
  CHECK(image_os_suffix("rockylinux", "8") == "rockylinux8");
  CHECK(image_os_suffix("rhel", "9") == "ubi9");
  CHECK(image_os_suffix("ubi", "8") == "ubi8");
  CHECK(image_os_suffix("amzn", "2023") == "amzn2023");
  CHECK(image_os_suffix("debian", "12").empty());
}

// pytorch.md: index URL https://download.pytorch.org/whl/cu<MAJOR><MINOR>.
TEST_CASE("compat: derive picks the PyTorch wheel variant and index URL", "[compat][derive]") {
  struct Case {
    const char* cuda;
    const char* variant;
    const char* expected;
  };
  const Case cases[] = {
      {"12.4.1", "", "cu124"}, {"11.8.0", "", "cu118"},      {"13.0.2", "", "cu130"},
      {"12.8.1", "", "cu128"}, {"12.4.1", "cu121", "cu121"}, {"12.2.2", "cu118", "cu118"},
  };
  for (const Case& c : cases) {
    INFO("CUDA " << c.cuda << " variant '" << c.variant << "'");
    Profile profile;
    profile.os_distro = "ubuntu";
    profile.os_version = "22.04";
    profile.cuda_version = c.cuda;
    profile.framework_name = "pytorch";
    profile.framework_version = "2.4.1";
    profile.framework_python = "3.11";
    profile.framework_variant = c.variant;
    const auto derived = gpuenv::compat::derive(profile, kb());
    CHECK(derived.torch_variant == c.expected);
    CHECK(derived.wheel_index_url == std::string("https://download.pytorch.org/whl/") + c.expected);
  }
  Profile tensorflow;
  tensorflow.os_distro = "ubuntu";
  tensorflow.os_version = "22.04";
  tensorflow.cuda_version = "12.2.2";
  tensorflow.framework_name = "tensorflow";
  tensorflow.framework_version = "2.15.0";
  tensorflow.framework_python = "3.11";
  const auto derived = gpuenv::compat::derive(tensorflow, kb());
  CHECK(derived.torch_variant.empty());
  CHECK(derived.wheel_index_url.empty());
}

// NVIDIA's driver table (release minimum; 12.3.2: the driver its installer bundles) and the minor-version floor for
// 13.4.1, whose minimum is not in the knowledge base.
TEST_CASE("compat: derive states the driver floor, its reason and its branch", "[compat][derive]") {
  struct Case {
    const char* cuda;
    const char* driver_min;
    const char* driver_branch;
    const char* floor;  ///< "" for none
    const char* reason;
    const char* branch;
  };
  const Case cases[] = {
      {"12.4.1", "", "", "550.54.15", "CUDA 12.4.1 requires it", "550"},
      {"11.8.0", "", "", "520.61.05", "CUDA 11.8.0 requires it", "520"},
      {"13.0.0", "", "", "580.65.06", "CUDA 13.0.0 requires it", "580"},
      {"12.8.0", "", "", "570.26", "CUDA 12.8.0 requires it", "570"},
      {"12.4.1", "535.104.05", "", "535.104.05", "driver.min", "535"},
      {"12.4.1", "", "560", "550.54.15", "CUDA 12.4.1 requires it", "560"},
      {"12.3.2", "", "", "545.23.08", "CUDA 12.3.2 requires it", "545"},
      {"13.4.1", "", "", "580.65.06", "minor-version-compatibility floor", "580"},
      {"10.2.89", "", "", "440.33", "CUDA 10.2.89 requires it", "440"},
      {"9.2.148", "", "", "", "not in the knowledge base", ""},
  };
  for (const Case& c : cases) {
    INFO("CUDA " << c.cuda << " driver.min '" << c.driver_min << "' branch '" << c.driver_branch << "'");
    Profile profile;
    profile.os_distro = "ubuntu";
    profile.os_version = "22.04";
    profile.cuda_version = c.cuda;
    profile.driver_min = c.driver_min;
    profile.driver_branch = c.driver_branch;
    const auto derived = gpuenv::compat::derive(profile, kb());
    if (std::string(c.floor).empty()) {
      CHECK_FALSE(derived.driver_floor.version.has_value());
    } else {
      REQUIRE(derived.driver_floor.version.has_value());
      CHECK(derived.driver_floor.version->str() == c.floor);
    }
    CHECK_THAT(derived.driver_floor.reason, Catch::Contains(c.reason));
    CHECK(derived.driver_branch == c.branch);
  }
}

TEST_CASE("compat: torch_variant_for and cuda_of_variant convert between CUDA versions and cuXYZ", "[compat][derive]") {
  using gpuenv::compat::cuda_of_variant;
  using gpuenv::compat::torch_variant_for;
  struct Case {
    const char* cuda;
    const char* variant;
  };
  const Case cases[] = {{"12.4.1", "cu124"}, {"11.8.0", "cu118"}, {"13.0.2", "cu130"}, {"12.6.3", "cu126"},
                        {"10.2", "cu102"},   {"9.2", "cu92"},     {"13.2.1", "cu132"}, {"11.1.1", "cu111"}};
  for (const Case& c : cases) {
    INFO(c.cuda << " <-> " << c.variant);
    CHECK(torch_variant_for(v(c.cuda)) == c.variant);
    const auto back = cuda_of_variant(c.variant);
    REQUIRE(back.has_value());
    CHECK(*back == v(c.cuda).truncated(2));
  }
  for (const char* bad : {"", "cu", "cu1", "cpu", "rocm6.1", "cuda124", "cu12a", "xx124", "cuXYZ"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(cuda_of_variant(bad).has_value());
  }
}

// cuda-driver.md Table 2: pass at the release minimum, warn between the major's floor and it, fail below the floor.
TEST_CASE("compat: judge_driver grades a driver against a CUDA version", "[compat][rules]") {
  using gpuenv::compat::judge_driver;
  struct Case {
    const char* driver;
    const char* cuda;
    const char* required;  ///< "" for none known
    const char* status;
    const char* contains;  ///< in message or remedy
  };
  const Case cases[] = {
      {"550.54.15", "12.4.1", "550.54.15", "pass", "550.54.15"},
      {"580.65.06", "12.4.1", "550.54.15", "pass", ""},
      {"550.54.14", "12.4.1", "550.54.15", "warn", "550.54.15"},
      {"535.104.05", "12.4", "550.54.14", "warn", "cuda-compat"},
      {"525.60.13", "12.4.1", "550.54.15", "warn", "525.60.13"},
      {"520.61.05", "12.4.1", "550.54.15", "fail", "cuda-compat-12-4"},
      {"450.80.02", "11.8.0", "520.61.05", "warn", "450.80.02"},
      {"450.51.06", "11.8.0", "520.61.05", "fail", "450.80.02"},
      {"580.65.06", "13.1.0", "590.44.01", "warn", "590.44.01"},
      {"575.57.08", "13.0.0", "580.65.06", "fail", "cuda-compat-13-0"},
      {"530.30.02", "12.3.2", "", "pass", "not in the knowledge base"},
      {"520.61.05", "12.3.2", "", "fail", "525.60.13"},
      {"450.00", "10.2", "440.33", "pass", ""},
      {"430.50", "10.2", "440.33", "fail", "440.33"},
      {"450.00", "10.2", "", "warn", "no driver requirement"},
  };
  for (const Case& c : cases) {
    INFO("driver " << c.driver << " CUDA " << c.cuda << " required '" << c.required << "'");
    const std::optional<Version> required =
        std::string(c.required).empty() ? std::nullopt : std::optional<Version>(v(c.required));
    const auto judged = judge_driver(v(c.driver), "the driver", v(c.cuda), required, kb());
    CHECK(status(judged) == c.status);
    CHECK_THAT(judged.message + " | " + judged.remedy, Catch::Contains(c.contains));
    CHECK_THAT(judged.message, Catch::Contains("CUDA"));
    if (judged.status != gpuenv::report::Status::pass) CHECK_FALSE(judged.remedy.empty());
  }
  // The subject names the driver in the message.
  const auto judged = judge_driver(v("520.61.05"), "driver.min 520.61.05", v("12.4.1"), v("550.54.15"), kb());
  CHECK_THAT(judged.message, Catch::Contains("driver.min 520.61.05"));
}
