#pragma once
// Installed distribution packages, for facts no file states directly (which CUDA a cuDNN package was built for).

#include <string>
#include <string_view>
#include <vector>

namespace gpuenv::probe {

struct InstalledPackage {
  std::string name;
  std::string version;
};

/// The installed packages in a dpkg status file (/var/lib/dpkg/status): paragraphs whose Status ends in "installed".
std::vector<InstalledPackage> parse_dpkg_status(std::string_view text);

/// The CUDA major a cuDNN package was built for: "libcudnn9-cuda-12" -> "12"; "libcudnn8" "8.9.7.29-1+cuda12.2" ->
/// "12.2".
std::string cudnn_package_cuda(const InstalledPackage& package);

}  // namespace gpuenv::probe
