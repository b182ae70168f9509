// doctor's software rules (src/doctor/software_rules.cpp) on the healthy node of rule_rows.hpp, table-driven in both
// directions: the CUDA toolkit on PATH and against the driver, cuDNN's CUDA major, the NVIDIA Container Toolkit and the
// engines' runtimes. Each row changes one thing and names the finding that must follow.

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "compat/horizon.hpp"
#include "doctor/rule_rows.hpp"
#include "doctor/rules.hpp"
#include "probe/facts.hpp"

using namespace gpuenv::testing::doctor_rules;  // NOLINT: the tables below are written in its vocabulary

TEST_CASE("rules: CUDA toolkit on PATH and against the driver", "[doctor][rules]") {
  run_rows({
      {"no toolkit", [](HostFacts&, Expectations&) {}, "toolkit.installed", Status::skip},
      {"no toolkit: nothing to judge on PATH", [](HostFacts& f, Expectations&) { f.live = true; }, "toolkit.path",
       std::nullopt},
      {"live, nvcc not on PATH",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.toolkits = {toolkit("12.4.1")};
       },
       "toolkit.path",
       Status::warn,
       {"CUDA 12.4.1 is installed but its nvcc is not on PATH", "export PATH=/usr/local/cuda-12.4/bin:$PATH"}},
      {"live, nvcc on PATH",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.toolkits = {toolkit("12.4.1", true, true)};
       },
       "toolkit.path",
       Status::pass,
       {"nvcc of CUDA 12.4.1 is on PATH"}},
      {"live, the older of two toolkits on PATH",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.toolkits = {toolkit("11.8.0", true, true), toolkit("12.4.1")};
       },
       "toolkit.path",
       Status::pass,
       {"CUDA 11.8.0"}},
      {"live, toolkit without nvcc (runtime only)",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.toolkits = {toolkit("12.4.1", false)};
       },
       "toolkit.path", std::nullopt},
      {"--root: PATH is not judged", [](HostFacts& f, Expectations&) { f.toolkits = {toolkit("12.4.1")}; },
       "toolkit.path", Status::skip},
      {"toolkit 12.4.1 on driver 550.127.05",
       [](HostFacts& f, Expectations&) { f.toolkits = {toolkit("12.4.1")}; },
       "toolkit.driver_support",
       Status::pass,
       {"meets CUDA 12.4.1's minimum driver 550.54.15"}},
      {"toolkit 12.8 on driver 535 (minor-version compatibility)",
       [](HostFacts& f, Expectations&) {
         f.kernel.module_version = "535.86.05";
         for (auto& lib : f.driver_libraries) lib.version = "535.86.05";
         f.gpus.cuda_driver_version = "12.2";
         f.toolkits = {toolkit("12.8.1")};
       },
       "toolkit.driver_support",
       Status::warn,
       {"driver 535.86.05 is below CUDA 12.8.1's minimum", "minor-version-compatibility", "570"}},
      {"toolkit 12.4 on driver 470 (below the CUDA 12 floor)",
       [](HostFacts& f, Expectations&) {
         f.kernel.module_version = "470.256.02";
         for (auto& lib : f.driver_libraries) lib.version = "470.256.02";
         f.gpus.cuda_driver_version = "11.4";
         f.toolkits = {toolkit("12.4.1")};
       },
       "toolkit.driver_support",
       Status::fail,
       {"below the CUDA 12.x floor", "cuda-compat-12-4"}},
      {"a toolkit of a CUDA major newer than gpuenv's data: a warning naming the horizon, not a failure",
       [](HostFacts& f, Expectations&) {
         const auto newest = *gpuenv::compat::cuda_horizon(kb()).newest;
         f.toolkits = {toolkit(std::to_string(newest.major() + 1) + ".0.1")};
       },
       "toolkit.driver_support",
       Status::warn,
       {"gpuenv's data ends at CUDA", "update gpuenv, or add the row to a data overlay"}},
      {"driver meets the minimum but reports an older CUDA",
       [](HostFacts& f, Expectations&) {
         f.gpus.cuda_driver_version = "12.2";
         f.toolkits = {toolkit("12.4.1")};
       },
       "toolkit.driver_support",
       Status::warn,
       {"newer than the CUDA 12.2 the driver reports"}},
      {"no driver to judge against",
       [](HostFacts& f, Expectations&) {
         f.kernel.module_loaded = false;
         f.kernel.module_version.clear();
         f.gpus = {};
         f.toolkits = {toolkit("12.4.1")};
       },
       "toolkit.driver_support",
       Status::skip,
       {"no driver to judge it against"}},
  });
}

TEST_CASE("rules: cuDNN built for another CUDA major", "[doctor][rules]") {
  const auto cudnn = [](const std::string& version, const std::string& built_for) {
    gpuenv::probe::Library lib;
    lib.version = version;
    lib.header = "/usr/include/cudnn_version.h";
    lib.built_for_cuda = built_for;
    return lib;
  };
  run_rows({
      {"no cuDNN", [](HostFacts&, Expectations&) {}, "cudnn.installed", Status::skip},
      {"cuDNN 9 for CUDA 11 with toolkit 12.4",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("12.4.1")};
         f.cudnn = cudnn("9.6.0", "11");
       },
       "cudnn.cuda_major",
       Status::fail,
       {"cuDNN 9.6.0 was built for CUDA 11 but the toolkit is CUDA 12.4.1", "libcudnn9-cuda-12"}},
      {"cuDNN 9 for CUDA 12 with toolkit 12.4",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("12.4.1")};
         f.cudnn = cudnn("9.6.0", "12");
       },
       "cudnn.cuda_major",
       Status::pass,
       {"built for CUDA 12, matching the toolkit"}},
      {"cuDNN 8 package for CUDA 12.2 with toolkit 12.4",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("12.4.1")};
         f.cudnn = cudnn("8.9.7", "12.2");
       },
       "cudnn.cuda_major", Status::pass},
      {"cuDNN 8 for CUDA 11.8 with toolkits 11.8 and 12.4: the newest counts",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("11.8.0"), toolkit("12.4.1")};
         f.cudnn = cudnn("8.9.7", "11.8");
       },
       "cudnn.cuda_major", Status::fail},
      {"built-for unknown",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("12.4.1")};
         f.cudnn = cudnn("9.6.0", "");
       },
       "cudnn.cuda_major", std::nullopt},
      {"no toolkit to compare with", [&](HostFacts& f, Expectations&) { f.cudnn = cudnn("9.6.0", "11"); },
       "cudnn.cuda_major", std::nullopt},
      {"header and library disagree",
       [&](HostFacts& f, Expectations&) {
         f.cudnn = cudnn("9.6.0", "12");
         f.cudnn->runtime_version = "8.9.7";
       },
       "cudnn.installed",
       Status::warn,
       {"header says 9.6.0 but the library reports 8.9.7"}},
  });
}

TEST_CASE("rules: NVIDIA Container Toolkit and engine runtimes", "[doctor][rules]") {
  run_rows({
      {"no engine, no toolkit", [](HostFacts&, Expectations&) {}, "container.toolkit", Status::skip},
      {"Docker without the toolkit",
       [](HostFacts& f, Expectations&) { f.containers.docker_installed = true; },
       "container.toolkit",
       Status::warn,
       {"containers cannot see the GPUs", "nvidia-ctk runtime configure"}},
      {"containerd without the toolkit", [](HostFacts& f, Expectations&) { f.containers.containerd_installed = true; },
       "container.toolkit", Status::warn},
      {"toolkit present",
       [](HostFacts& f, Expectations&) { f.containers.nvidia_ctk = "/usr/bin/nvidia-ctk"; },
       "container.toolkit",
       Status::pass,
       {"(/usr/bin/nvidia-ctk)"}},
      {"toolkit and Docker configured",
       [](HostFacts& f, Expectations&) {
         f.containers.nvidia_ctk = "/usr/bin/nvidia-ctk";
         f.containers.docker_installed = true;
         f.containers.docker_nvidia_runtime = true;
       },
       "container.docker_runtime", Status::pass},
      {"toolkit, Docker not configured",
       [](HostFacts& f, Expectations&) {
         f.containers.nvidia_ctk = "/usr/bin/nvidia-ctk";
         f.containers.docker_installed = true;
       },
       "container.docker_runtime",
       Status::warn,
       {"no nvidia runtime", "--runtime=docker"}},
      {"toolkit, containerd not configured",
       [](HostFacts& f, Expectations&) {
         f.containers.nvidia_container_runtime = true;
         f.containers.containerd_installed = true;
       },
       "container.containerd_runtime",
       Status::warn,
       {"--runtime=containerd"}},
  });
}
