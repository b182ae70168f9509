#include "compat/mirrors.hpp"

namespace gpuenv::compat {
namespace {

std::string without_trailing_slash(std::string_view url) {
  while (!url.empty() && url.back() == '/') url.remove_suffix(1);
  return std::string(url);
}

/// The mirror when set, upstream otherwise, without a trailing '/'.
std::string base_of(const std::string& mirror, std::string_view upstream_base) {
  return without_trailing_slash(mirror.empty() ? upstream_base : std::string_view(mirror));
}

}  // namespace

bool has_mirrors(const profile::Profile& profile) { return !profile.mirrors.empty(); }

std::string cuda_repo_base(const profile::Profile& profile) {
  return base_of(profile.mirrors.cuda_repo, upstream::cuda_repo);
}

std::string cuda_repo_url(const profile::Profile& profile, std::string_view repo_os, std::string_view arch) {
  return cuda_repo_base(profile) + "/" + std::string(repo_os) + "/" + std::string(arch) + "/";
}

std::string container_toolkit_base(const profile::Profile& profile) {
  return base_of(profile.mirrors.container_toolkit, upstream::container_toolkit);
}

std::string pypi_index(const profile::Profile& profile) {
  return profile.mirrors.pypi.empty() ? std::string(upstream::pypi) : profile.mirrors.pypi;
}

bool pypi_mirrored(const profile::Profile& profile) { return !profile.mirrors.pypi.empty(); }

WheelSource torch_wheels(const profile::Profile& profile, std::string_view variant) {
  const profile::Mirrors& mirrors = profile.mirrors;
  WheelSource out;
  out.mirrored = !mirrors.pytorch.empty();
  out.style = out.mirrored && mirrors.pytorch_style == "find-links" ? WheelStyle::find_links : WheelStyle::index;
  out.url = base_of(mirrors.pytorch, upstream::pytorch) + "/" + std::string(variant);
  // A flat listing is a directory page; Aliyun's and the projects that use it spell it with the trailing '/'.
  if (out.style == WheelStyle::find_links) out.url += "/";
  return out;
}

std::string cuda_image_reference(const profile::Profile& profile, std::string_view tag) {
  const std::string image = "nvidia/cuda:" + std::string(tag);
  return profile.mirrors.registry.empty() ? image : profile.mirrors.registry + "/" + image;
}

std::string distro_archive_mirror(const profile::Profile& profile) {
  return without_trailing_slash(profile.mirrors.distro_archive);
}

std::string python_downloads_mirror(const profile::Profile& profile) {
  return without_trailing_slash(profile.mirrors.python_downloads);
}

}  // namespace gpuenv::compat
