#pragma once
// A profile (schema 1) describes one GPU environment, or a matrix of them; see docs/profile-format.md.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuenv::profile {

/// [mirrors]: where packages, wheels and images come from instead of their upstream (docs/mirrors.md). Empty:
/// upstream. Validated on parse (https URLs, a registry host); read the effective locations through
/// compat/mirrors.hpp, not these fields.
struct Mirrors {
  std::string cuda_repo;          ///< replaces https://developer.download.nvidia.com/compute/cuda/repos
  std::string container_toolkit;  ///< replaces https://nvidia.github.io/libnvidia-container
  std::string pypi;               ///< pip/uv index for everything but the framework wheels
  std::string pytorch;            ///< base of the cuXYZ wheel directories, replaces https://download.pytorch.org/whl
  std::string pytorch_style;      ///< find-links (a flat listing of wheel files) | index (PEP 503)
  std::string registry;           ///< registry prefix of the base image: FROM <registry>/nvidia/cuda:<tag>
  std::string python_downloads;   ///< uv's UV_PYTHON_INSTALL_MIRROR (python-build-standalone releases)
  std::string distro_archive;     ///< replaces the Ubuntu archive in an image's apt sources
  bool empty() const {
    return cuda_repo.empty() && container_toolkit.empty() && pypi.empty() && pytorch.empty() && pytorch_style.empty() &&
           registry.empty() && python_downloads.empty() && distro_archive.empty();
  }
};

/// A user's description of one environment. Text fields keep the user's spelling; they were validated on parse.
struct Profile {
  int schema = 1;
  std::string name;
  std::string description;
  std::string os_distro;   ///< ubuntu | debian | rockylinux | rhel | ubi | amzn
  std::string os_version;  ///< "22.04", "9", "2023"
  std::string os_arch;     ///< x86_64 | arm64; empty: x86_64 (read it through effective_arch)
  std::string cuda_version;
  std::string cudnn_version;   ///< empty: no cuDNN
  std::string driver_min;      ///< empty: what the CUDA release requires
  std::string driver_branch;   ///< empty: derived from driver floor
  std::string driver_modules;  ///< open | proprietary; empty: not specified
  // --- install additions (docs/install.md) ---
  std::string driver_source;              ///< nvidia | distro; empty: nvidia (NVIDIA's CUDA repository)
  std::string install_container_toolkit;  ///< "true" | "false"; empty: true
  std::string install_cuda_compat;        ///< "true" | "false"; empty: false
  std::string install_hold_kernel;        ///< "true" | "false"; empty: false (keep the kernel packages held)
  std::string install_dcgm;               ///< "true" | "false"; empty: false (NVIDIA DCGM and its service)
  // --- end install additions ---
  std::string image_flavor;         ///< base | runtime | devel; empty: gpuenv chooses (compat::effective_image_flavor)
  std::string image_compiler;       ///< "true" | "false"; empty: true (gcc and Python headers for torch.compile)
  std::string image_user;           ///< "nonroot" | "root"; empty: nonroot (uid 10001, gid 0)
  std::string image_writable_venv;  ///< "true" | "false"; empty: false (the venv is read-only to the runtime uid)
  std::string image_rdma;           ///< "true" | "false"; empty: false (no InfiniBand/RoCE user-space libraries)
  std::string framework_name;       ///< empty: no framework
  std::string framework_version;
  std::string framework_python;
  std::string framework_variant;  ///< pytorch wheel variant (cuXYZ); empty: derived from cuda.version
  std::vector<std::string> gpu_compute_capabilities;
  std::vector<std::string> gpu_models;
  Mirrors mirrors;

  std::string origin;  ///< where it came from: a file path or "builtin:<name>"
};

/// The CPU architecture a profile targets: os.arch, or "x86_64" when unset.
inline std::string effective_arch(const Profile& profile) {
  return profile.os_arch.empty() ? std::string("x86_64") : profile.os_arch;
}

/// Field assignments that define one matrix cell, in axis order.
using Assignments = std::vector<std::pair<std::string, std::string>>;

/// The [matrix] table: axes (dotted field -> values), exclude and include entries.
/// The most cells a matrix may have (the product of its axes plus its include entries), checked before any cell is
/// made: four times GitHub Actions' 256 jobs per matrix, far past any real build matrix (docs/reliability.md).
inline constexpr std::size_t k_max_matrix_cells = 1024;

struct Matrix {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  std::vector<std::map<std::string, std::string>> exclude;
  std::vector<std::map<std::string, std::string>> include;
  bool empty() const { return axes.empty() && include.empty(); }
};

/// A parsed profile file: the base profile and its matrix (empty when there is none).
struct ProfileDocument {
  Profile base;
  Matrix matrix;
};

/// One expanded matrix cell: its assignments and the profile with them applied.
struct Cell {
  Assignments assignments;
  Profile profile;
  bool requested = false;  ///< added by `include` (asked for by name), not by the product of the axes
  /// A stable, file-name-safe label for the cell, e.g. "cuda.version=12.4.1,framework.python=3.11".
  std::string label() const;
};

}  // namespace gpuenv::profile
