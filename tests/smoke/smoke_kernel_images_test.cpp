// The two kernel images (issue 11, item 3): the CUDA 13 image for drivers reporting CUDA 13.0 or newer, the CUDA 11.8
// image for the R520-R579 drivers of CUDA 11.8-12.x (and V100, sm_70), chosen at run time by cuDriverGetVersion.
// The fake libcuda reports the driver version and accepts or refuses each image in turn.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "smoke/fake_cuda_fixture.hpp"
#include "smoke/smoke.hpp"
#include "support/run_binary.hpp"
#include "support/skip.hpp"

using namespace gpuenv::smoke;
using namespace gpuenv::smoke::testing;
using gpuenv::report::Status;

namespace {

constexpr const char* legacy_image = "smoke_kernels_legacy.fatbin";
constexpr const char* cuda13_image = "smoke_kernels.fatbin";

/// Where scripts/bootstrap unpacks Debian 12's nvidia-cuda-toolkit 11.8.
bool bootstrap_legacy_toolkit_present() {
  return std::filesystem::exists("/opt/gpuenv/nvidia-cuda-toolkit-11.8/usr/lib/nvidia-cuda-toolkit/bin/nvcc");
}

/// True when this binary carries both images; when it should (the build found the legacy nvcc, or scripts/bootstrap
/// unpacked it on this machine) and does not, the test fails instead of skipping.
bool both_images_embedded() {
  const KernelsInfo kernels = embedded_kernels_info();
  const bool expected = GPUENV_SMOKE_LEGACY_NVCC || (kernels.embedded && bootstrap_legacy_toolkit_present());
  if (expected) {
    REQUIRE(kernels.images.size() == 2);
    CHECK(kernels.images[0].file == cuda13_image);
    CHECK(kernels.images[1].file == legacy_image);
    return true;
  }
  WARN("SKIPPED: this build carries " << kernels.images.size()
                                      << " kernel image(s) (no legacy nvcc: run scripts/bootstrap as root)");
  return false;
}

std::string loaded_image(const std::string& config) {
  const SmokeReport report = run_fake(config);
  REQUIRE(report.devices.size() == 1);
  const auto* kernels = find(report.devices[0].findings, "smoke.kernels");
  REQUIRE(kernels != nullptr);
  CHECK(kernels->status == Status::pass);
  return report.devices[0].info.kernel_image;
}

}  // namespace

TEST_CASE("smoke: the driver's CUDA version picks the kernel image (fake libcuda)", "[smoke][kernels][system-test]") {
  if (!both_images_embedded()) return;
  // R520 (CUDA 11.8), R535 (12.2), R550 (12.4), R570 (12.8): the 11.8 image, whose SASS and PTX these drivers load.
  for (const char* version : {"11080", "12020", "12040", "12080", "12090"}) {
    INFO("driver_version " << version);
    CHECK(loaded_image(std::string("driver_version = ") + version + "\n") == legacy_image);
  }
  // R580 and newer (CUDA 13.0, 13.1): the CUDA 13 image (sm_100, sm_120 and compute_120 PTX).
  CHECK(loaded_image("driver_version = 13000\n") == cuda13_image);
  CHECK(loaded_image("driver_version = 13010\n") == cuda13_image);
}

TEST_CASE("smoke: a CUDA 13 driver that refuses the CUDA 13 image falls back to the 11.8 image", "[smoke][kernels]") {
  if (!both_images_embedded()) return;
  // 222: CUDA_ERROR_UNSUPPORTED_PTX_VERSION for the first image tried, then the legacy image loads.
  CHECK(loaded_image("driver_version = 13000\nmodule_load_results = 222,0\n") == legacy_image);
  // A CUDA 12 driver that refuses the legacy image (it is tried first) still tries the CUDA 13 one last.
  const SmokeReport refused = run_fake("driver_version = 12040\nmodule_load_results = 209,209\n");
  const auto* kernels = find(refused.devices.at(0).findings, "smoke.kernels");
  REQUIRE(kernels != nullptr);
  CHECK(kernels->status == Status::skip);  // our kernels cannot run: no fault of the GPU (issue 23 item 1)
  const auto legacy_at = kernels->message.find(legacy_image);
  const auto cuda13_at = kernels->message.find(std::string(cuda13_image) + " (CUDA 13");
  CHECK(legacy_at != std::string::npos);
  CHECK(cuda13_at != std::string::npos);
  CHECK(legacy_at < cuda13_at);
}

TEST_CASE("smoke: a driver that cannot JIT PTX names the JIT compiler, and neither fails nor degrades the node",
          "[smoke][kernels]") {
  if (!both_images_embedded()) return;
  // 221 CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 223 CUDA_ERROR_JIT_COMPILATION_DISABLED: a Blackwell GPU on an R570 driver
  // runs the 11.8 image only through PTX JIT; without the JIT that is no fault of the GPU.
  for (const char* results : {"221,221", "223,223", "221,209"}) {
    CAPTURE(results);
    const SmokeReport report = run_fake(std::string("driver_version = 12080\nmodule_load_results = ") + results + "\n");
    const auto* kernels = find(report.devices.at(0).findings, "smoke.kernels");
    REQUIRE(kernels != nullptr);
    CHECK(kernels->status == Status::skip);
    CHECK(kernels->message.find("images tried: ") != std::string::npos);
  }
  const SmokeReport report = run_fake("driver_version = 12080\nmodule_load_results = 209,221\n");
  CHECK(find(report.devices.at(0).findings, "smoke.kernels")->remedy.find("libnvidia-ptxjitcompiler.so.1") !=
        std::string::npos);
}

TEST_CASE("smoke: --describe lists both images and the drivers each is for", "[smoke][kernels]") {
  if (!both_images_embedded()) return;
  const auto text = gpuenv::testing::run_gpuenv({"smoke", "--describe"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("gpuenv smoke kernel images: 2") == 0);
  CHECK(text.out.find("smoke_kernels_legacy.fatbin: CUDA 11.8 toolkit, SASS sm_70 sm_75 sm_80 sm_86 sm_89 sm_90, "
                      "PTX compute_90") != std::string::npos);
  CHECK(text.out.find("for drivers supporting CUDA 11.0 or newer, below CUDA 13.0") != std::string::npos);
  CHECK(text.out.find("for drivers supporting CUDA 13.0 or newer") != std::string::npos);
  CHECK(text.out.find("drivers older than CUDA 11.0 get no image") != std::string::npos);
  const auto json = gpuenv::testing::run_gpuenv({"smoke", "--describe", "--json"});
  CHECK(json.out.find("\"toolkit\": \"11.8\"") != std::string::npos);
  CHECK(json.out.find("\"ptx\": \"compute_90\"") != std::string::npos);
}

TEST_CASE("smoke: the CUDA 13 image carries Thor (sm_110) SASS and --describe lists it", "[smoke][kernels]") {
  // Thor (CC 11.0) cannot JIT the compute_120 PTX (PTX loads on its own CC and newer only) and sm_100 SASS does not run
  // on another major: without sm_110 SASS it had no code. CUDA 13.0's nvcc is the first to name it sm_110.
  const KernelsInfo kernels = embedded_kernels_info();
  const KernelImage* cuda13 = nullptr;
  for (const KernelImage& image : kernels.images) {
    if (image.file == cuda13_image && image.min_driver >= 13000) cuda13 = &image;  // built by a CUDA 13+ nvcc
  }
  GPUENV_SKIP_UNLESS(cuda13 != nullptr, "this build has no kernel image from a CUDA 13 nvcc");
  CHECK(std::find(cuda13->sass_archs.begin(), cuda13->sass_archs.end(), "sm_110") != cuda13->sass_archs.end());
  const auto text = gpuenv::testing::run_gpuenv({"smoke", "--describe"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("smoke_kernels.fatbin: CUDA " + cuda13->cuda_version +
                      " toolkit, SASS sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_110 sm_120, PTX compute_120") !=
        std::string::npos);
}
