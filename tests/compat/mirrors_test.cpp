// compat/mirrors.hpp: upstream when [mirrors] is empty, the mirror (trailing '/' normalised) when set.

#include "compat/mirrors.hpp"

#include <catch2/catch.hpp>

using gpuenv::compat::WheelStyle;
using gpuenv::profile::Profile;

namespace {

Profile mirrored() {
  Profile p;
  p.mirrors.cuda_repo = "https://mirrors.aliyun.com/nvidia-cuda/";
  p.mirrors.container_toolkit = "https://mirrors.ustc.edu.cn/libnvidia-container";
  p.mirrors.pypi = "https://mirrors.aliyun.com/pypi/simple/";
  p.mirrors.pytorch = "https://mirrors.aliyun.com/pytorch-wheels/";
  p.mirrors.pytorch_style = "find-links";
  p.mirrors.registry = "docker.m.daocloud.io";
  p.mirrors.python_downloads = "https://mirror.example.com/pbs/";
  return p;
}

}  // namespace

TEST_CASE("mirrors: without [mirrors] every location is upstream's", "[compat][mirrors]") {
  const Profile p;
  CHECK_FALSE(gpuenv::compat::has_mirrors(p));
  CHECK(gpuenv::compat::cuda_repo_base(p) == "https://developer.download.nvidia.com/compute/cuda/repos");
  CHECK(gpuenv::compat::cuda_repo_url(p, "ubuntu2204", "x86_64") ==
        "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/");
  CHECK(gpuenv::compat::container_toolkit_base(p) == "https://nvidia.github.io/libnvidia-container");
  CHECK(gpuenv::compat::pypi_index(p) == "https://pypi.org/simple");
  CHECK_FALSE(gpuenv::compat::pypi_mirrored(p));
  const auto wheels = gpuenv::compat::torch_wheels(p, "cu128");
  CHECK(wheels.url == "https://download.pytorch.org/whl/cu128");
  CHECK(wheels.style == WheelStyle::index);
  CHECK_FALSE(wheels.mirrored);
  CHECK(gpuenv::compat::cuda_image_reference(p, "12.8.1-runtime-ubuntu24.04") ==
        "nvidia/cuda:12.8.1-runtime-ubuntu24.04");
  CHECK(gpuenv::compat::python_downloads_mirror(p).empty());
}

TEST_CASE("mirrors: each location comes from its mirror, without a doubled '/'", "[compat][mirrors]") {
  const Profile p = mirrored();
  CHECK(gpuenv::compat::has_mirrors(p));
  CHECK(gpuenv::compat::cuda_repo_base(p) == "https://mirrors.aliyun.com/nvidia-cuda");
  CHECK(gpuenv::compat::cuda_repo_url(p, "ubuntu2404", "x86_64") ==
        "https://mirrors.aliyun.com/nvidia-cuda/ubuntu2404/x86_64/");
  CHECK(gpuenv::compat::container_toolkit_base(p) == "https://mirrors.ustc.edu.cn/libnvidia-container");
  CHECK(gpuenv::compat::pypi_index(p) == "https://mirrors.aliyun.com/pypi/simple/");
  CHECK(gpuenv::compat::pypi_mirrored(p));
  const auto flat = gpuenv::compat::torch_wheels(p, "cu128");
  CHECK(flat.url == "https://mirrors.aliyun.com/pytorch-wheels/cu128/");
  CHECK(flat.style == WheelStyle::find_links);
  CHECK(flat.mirrored);
  CHECK(gpuenv::compat::cuda_image_reference(p, "12.8.1-runtime-ubuntu24.04") ==
        "docker.m.daocloud.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04");
  CHECK(gpuenv::compat::python_downloads_mirror(p) == "https://mirror.example.com/pbs");
}

TEST_CASE("mirrors: an index-style wheel mirror (or one without a style, as --set can make) is an index",
          "[compat][mirrors]") {
  Profile p = mirrored();
  p.mirrors.pytorch_style = "index";
  auto index = gpuenv::compat::torch_wheels(p, "cu118");
  CHECK(index.url == "https://mirrors.aliyun.com/pytorch-wheels/cu118");
  CHECK(index.style == WheelStyle::index);
  p.mirrors.pytorch_style.clear();
  CHECK(gpuenv::compat::torch_wheels(p, "cu118").style == WheelStyle::index);
}
