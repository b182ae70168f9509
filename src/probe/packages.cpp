#include "probe/packages.hpp"

#include "util/strings.hpp"

namespace gpuenv::probe {

std::vector<InstalledPackage> parse_dpkg_status(std::string_view text) {
  std::vector<InstalledPackage> out;
  InstalledPackage current;
  bool installed = false;
  const auto flush = [&] {
    if (!current.name.empty() && installed) out.push_back(current);
    current = {};
    installed = false;
  };
  for (std::string_view line : util::split_lines(text)) {
    if (util::trim(line).empty()) {
      flush();
      continue;
    }
    if (util::starts_with(line, "Package:")) current.name = std::string(util::trim(line.substr(8)));
    if (util::starts_with(line, "Version:")) current.version = std::string(util::trim(line.substr(8)));
    if (util::starts_with(line, "Status:")) installed = util::ends_with(util::trim(line), " installed");
  }
  flush();
  return out;
}

std::string cudnn_package_cuda(const InstalledPackage& package) {
  // cuDNN 9 packages name the CUDA major: libcudnn9-cuda-12, libcudnn9-dev-cuda-12.
  if (const auto at = package.name.rfind("-cuda-"); at != std::string::npos) return package.name.substr(at + 6);
  // cuDNN 8 packages carry it in the version: 8.9.7.29-1+cuda12.2.
  if (const auto at = package.version.find("+cuda"); at != std::string::npos) return package.version.substr(at + 5);
  return {};
}

}  // namespace gpuenv::probe
