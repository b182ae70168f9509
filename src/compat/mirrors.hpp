#pragma once
// The effective download locations of a profile: its [mirrors] where set, upstream otherwise (docs/mirrors.md).
// Pure. Every module that writes a location (dockerfile, install, cloud-init) asks here, so a mirror is honoured
// the same way everywhere and upstream stays the default.

#include <string>
#include <string_view>

#include "profile/profile.hpp"

namespace gpuenv::compat {

/// The upstream locations the [mirrors] fields replace.
namespace upstream {
inline constexpr std::string_view cuda_repo = "https://developer.download.nvidia.com/compute/cuda/repos";
inline constexpr std::string_view container_toolkit = "https://nvidia.github.io/libnvidia-container";
inline constexpr std::string_view pypi = "https://pypi.org/simple";
inline constexpr std::string_view pytorch = "https://download.pytorch.org/whl";
inline constexpr std::string_view registry = "docker.io";
inline constexpr std::string_view python_downloads =
    "https://github.com/astral-sh/python-build-standalone/releases/download";
/// The Ubuntu archive as Ubuntu images' apt sources name it (amd64; arm64 uses ubuntu_ports).
inline constexpr std::string_view ubuntu_archive = "http://archive.ubuntu.com/ubuntu";
inline constexpr std::string_view ubuntu_security = "http://security.ubuntu.com/ubuntu";
inline constexpr std::string_view ubuntu_ports = "http://ports.ubuntu.com/ubuntu-ports";
}  // namespace upstream

/// How pip reads a PyTorch wheel location.
enum class WheelStyle {
  index,       ///< a PEP 503 index: pip --index-url / --extra-index-url (download.pytorch.org)
  find_links,  ///< a flat listing of wheel files: pip --find-links (Aliyun's pytorch-wheels)
};

/// Where one variant's PyTorch wheels come from.
struct WheelSource {
  std::string url;  ///< "https://download.pytorch.org/whl/cu128", "https://mirrors.aliyun.com/pytorch-wheels/cu128/"
  WheelStyle style = WheelStyle::index;
  bool mirrored = false;  ///< from [mirrors] pytorch
};

/// True when the profile sets any [mirrors] field.
bool has_mirrors(const profile::Profile& profile);

/// The CUDA repository base, no trailing '/': the mirror or https://developer.download.nvidia.com/compute/cuda/repos.
std::string cuda_repo_base(const profile::Profile& profile);
/// One CUDA repository, "<base>/<repo_os>/<arch>/" (repo_os "ubuntu2204", arch "x86_64"): the directory of the apt
/// `deb <url> /` line, the yum baseurl, the .pin file and the keyring.
std::string cuda_repo_url(const profile::Profile& profile, std::string_view repo_os, std::string_view arch);

/// The libnvidia-container base, no trailing '/': the mirror or https://nvidia.github.io/libnvidia-container.
/// Append "/stable/deb/..." or "/stable/rpm/..."; its repository list files name the upstream host, so a mirror
/// means rewriting them (docs/mirrors.md).
std::string container_toolkit_base(const profile::Profile& profile);

/// The PyPI simple index for everything but the framework wheels: the mirror or https://pypi.org/simple.
std::string pypi_index(const profile::Profile& profile);
/// True when [mirrors] pypi is set (then pip and uv must be pointed at pypi_index()).
bool pypi_mirrored(const profile::Profile& profile);

/// Where the PyTorch wheels of `variant` ("cu128") come from: "<mirror>/<variant>/" read with --find-links for
/// pytorch_style "find-links", "<mirror>/<variant>" as an index for "index" (also when no style is set), or
/// upstream's https://download.pytorch.org/whl/<variant> index.
WheelSource torch_wheels(const profile::Profile& profile, std::string_view variant);

/// The base image reference: "nvidia/cuda:<tag>" upstream (Docker Hub), "<registry>/nvidia/cuda:<tag>" with a mirror.
std::string cuda_image_reference(const profile::Profile& profile, std::string_view tag);

/// The mirror of the distribution's archive for an image's apt sources, no trailing '/', or "" for upstream.
std::string distro_archive_mirror(const profile::Profile& profile);

/// uv's UV_PYTHON_INSTALL_MIRROR: the mirror, or "" to leave uv's default (upstream::python_downloads).
std::string python_downloads_mirror(const profile::Profile& profile);

}  // namespace gpuenv::compat
