// doctor's conformance to a profile (src/doctor/profile_rules.cpp) on the healthy node of rule_rows.hpp, table-driven
// in both directions. Each row changes the node or the profile and names the finding that must follow.

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "doctor/rule_rows.hpp"
#include "doctor/rules.hpp"
#include "probe/facts.hpp"

using namespace gpuenv::testing::doctor_rules;  // NOLINT: the tables below are written in its vocabulary

TEST_CASE("rules: conformance to a profile", "[doctor][rules]") {
  static const gpuenv::profile::Profile profile = test_profile();
  static const gpuenv::profile::Profile cc80 = [] {
    auto p = test_profile();
    p.gpu_compute_capabilities = {"8.0"};
    return p;
  }();
  static const gpuenv::profile::Profile cc90 = [] {
    auto p = test_profile();
    p.gpu_compute_capabilities = {"8.0", "9.0"};
    return p;
  }();
  static const gpuenv::profile::Profile open_modules = [] {
    auto p = test_profile();
    p.driver_modules = "open";
    return p;
  }();
  const auto with_models = [](std::vector<std::string> models, std::vector<std::string> ccs = {}) {
    auto p = test_profile();
    p.gpu_models = std::move(models);
    p.gpu_compute_capabilities = std::move(ccs);
    return p;
  };
  static const gpuenv::profile::Profile t4 = with_models({"T4"});
  static const gpuenv::profile::Profile h100 = with_models({"H100"});
  static const gpuenv::profile::Profile h200 = with_models({"H200"});
  static const gpuenv::profile::Profile b200 = with_models({"B200"});
  static const gpuenv::profile::Profile t4_or_cc90 = with_models({"T4"}, {"9.0"});
  const auto renamed = [](const char* name) {
    return [name](HostFacts& f) {
      for (GpuFacts& gpu : f.gpus.gpus) {
        gpu.name = name;
        gpu.compute_capability.clear();
      }
    };
  };
  static const gpuenv::profile::Profile rocky = [] {
    auto p = test_profile();
    p.os_distro = "rockylinux";
    p.os_version = "9";
    return p;
  }();
  run_rows({
      {"no profile: no profile findings", [](HostFacts& f, Expectations&) { f.toolkits = {toolkit("12.4.1")}; },
       "profile.cuda_toolkit", std::nullopt},
      {"the node runs the profile's OS",
       [](HostFacts&, Expectations& e) { e.profile = &profile; },
       "profile.os",
       Status::pass,
       {"the node runs ubuntu 22.04, as profile node-test targets"}},
      {"another Ubuntu release",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.host.os_version_id = "24.04";
       },
       "profile.os",
       Status::warn,
       {"profile node-test targets ubuntu 22.04; this node runs ubuntu 24.04", "container image"}},
      {"rockylinux 9 is os-release rocky 9.4",
       [](HostFacts& f, Expectations& e) {
         e.profile = &rocky;
         f.host.os_id = "rocky";
         f.host.os_version_id = "9.4";
       },
       "profile.os", Status::pass},
      {"OS unknown on the node: no finding",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.host.os_id.clear();
       },
       "profile.os", std::nullopt},
      {"the profile's toolkit is installed",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.4.1")};
       },
       "profile.cuda_toolkit",
       Status::pass,
       {"CUDA 12.4.1 is installed at /usr/local/cuda-12.4"}},
      // nvcc --version names the release at X.Y ("release 12.4"): that is the profile's 12.4.1 at the precision
      // written (issue 25, rule 2); another minor, or another full version, is not.
      {"a toolkit known only as 12.4 (nvcc) is the profile's 12.4.1",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.4")};
       },
       "profile.cuda_toolkit", Status::pass},
      {"a toolkit known only as 12.5 is not 12.4.1",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.5")};
       },
       "profile.cuda_toolkit", Status::fail},
      {"a full 12.4.0 is not 12.4.1",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.4.0")};
       },
       "profile.cuda_toolkit", Status::fail},
      {"another toolkit is installed",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.6.3")};
       },
       "profile.cuda_toolkit",
       Status::fail,
       {"wants CUDA 12.4.1; the node has 12.6.3", "install CUDA 12.4.1"}},
      {"no toolkit",
       [](HostFacts&, Expectations& e) { e.profile = &profile; },
       "profile.cuda_toolkit",
       Status::fail,
       {"the node has no toolkit"}},
      {"driver 550.127.05 meets the profile's floor",
       [](HostFacts&, Expectations& e) { e.profile = &profile; },
       "profile.driver",
       Status::pass,
       {"profile node-test", "550.127.05"}},
      {"driver 470 below the CUDA 12 floor",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.kernel.module_version = "470.256.02";
       },
       "profile.driver", Status::fail},
      {"no driver loaded",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.kernel.module_loaded = false;
         f.kernel.module_version.clear();
         f.gpus = {};
       },
       "profile.driver",
       Status::fail,
       {"needs driver >= 550.54.15; no driver is loaded", "branch 550"}},
      {"cuDNN 9.6.0 satisfies 9",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.cudnn = gpuenv::probe::Library{"9.6.0", "/usr/include/cudnn_version.h", "", "", "12"};
       },
       "profile.cudnn",
       Status::pass,
       {"cuDNN 9.6.0 satisfies the profile's 9"}},
      {"cuDNN 8 does not satisfy 9",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.cudnn = gpuenv::probe::Library{"8.9.7", "/usr/include/cudnn_version.h", "", "", "12.2"};
       },
       "profile.cudnn",
       Status::fail,
       {"wants cuDNN 9; the node has cuDNN 8.9.7"}},
      {"GPU compute capability not targeted",
       [](HostFacts&, Expectations& e) { e.profile = &cc80; },
       "profile.gpu_targets",
       Status::fail,
       {"compute capability 9.0", "does not target (8.0)", "add \"9.0\""}},
      {"no CC reported (an nvidia-smi report): the product name gives it",
       [](HostFacts& f, Expectations& e) {
         e.profile = &cc80;
         for (GpuFacts& gpu : f.gpus.gpus) gpu.compute_capability.clear();
       },
       "profile.gpu_targets",
       Status::fail,
       {"compute capability 9.0", "does not target (8.0)"}},
      {"no CC and an unknown product: nothing to judge",
       [](HostFacts& f, Expectations& e) {
         e.profile = &cc80;
         for (GpuFacts& gpu : f.gpus.gpus) {
           gpu.compute_capability.clear();
           gpu.name = "NVIDIA Future GPU";
         }
       },
       "profile.gpu_targets", std::nullopt},
      {"GPU compute capability targeted", [](HostFacts&, Expectations& e) { e.profile = &cc90; }, "profile.gpu_targets",
       std::nullopt},
      {"no targets in the profile", [](HostFacts&, Expectations& e) { e.profile = &profile; }, "profile.gpu_targets",
       std::nullopt},
      {"profile names T4, the node has H100s: profile.gpu names both",
       [](HostFacts&, Expectations& e) { e.profile = &t4; },
       "profile.gpu",
       Status::fail,
       {"GPU 0 is NVIDIA H100 80GB HBM3 (H100, compute capability 9.0)", "profile node-test targets T4"}},
      {"profile names H100, the node has H100s",
       [](HostFacts&, Expectations& e) { e.profile = &h100; },
       "profile.gpu",
       Status::pass,
       {"NVIDIA H100 80GB HBM3", "targets (H100)"}},
      {"a model listed alongside the node's compute capability: the CC covers it",
       [](HostFacts&, Expectations& e) { e.profile = &t4_or_cc90; }, "profile.gpu", Status::pass},
      {"NVIDIA T400 is not a T4",
       [renamed](HostFacts& f, Expectations& e) {
         renamed("NVIDIA T400")(f);
         e.profile = &t4;
       },
       "profile.gpu",
       Status::fail,
       {"GPU 0 is NVIDIA T400 (not in gpuenv's GPU table)", "targets T4"}},
      {"GH200 is not an H200",
       [renamed](HostFacts& f, Expectations& e) {
         renamed("NVIDIA GH200 480GB")(f);
         e.profile = &h200;
       },
       "profile.gpu",
       Status::fail,
       {"(GH200, compute capability 9.0)", "targets H200"}},
      {"GB200 is not a B200",
       [renamed](HostFacts& f, Expectations& e) {
         renamed("NVIDIA GB200")(f);
         e.profile = &b200;
       },
       "profile.gpu",
       Status::fail,
       {"(GB200, compute capability 10.0)", "targets B200"}},
      {"an H200 is an H200",
       [renamed](HostFacts& f, Expectations& e) {
         renamed("NVIDIA H200")(f);
         e.profile = &h200;
       },
       "profile.gpu", Status::pass},
      {"no models in the profile: not judged", [](HostFacts&, Expectations& e) { e.profile = &cc90; }, "profile.gpu",
       std::nullopt},
      {"profile wants open modules, the node runs proprietary",
       [](HostFacts&, Expectations& e) { e.profile = &open_modules; },
       "profile.driver_modules",
       Status::warn,
       {"wants open kernel modules; the loaded module is proprietary"}},
      {"profile wants open modules and gets them",
       [](HostFacts& f, Expectations& e) {
         e.profile = &open_modules;
         f.kernel.open_module = true;
       },
       "profile.driver_modules", std::nullopt},
  });
}
