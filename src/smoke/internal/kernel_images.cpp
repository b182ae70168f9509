// The embedded kernel images (fatbins, one per toolkit) and which one a driver gets: the build writes a manifest
// (images.txt) beside them; the runner loads the newest image whose toolkit's CUDA major the driver supports.

#include "smoke/internal/kernel_images.hpp"

#include <algorithm>
#include <sstream>

#include "smoke/cuda_api.hpp"
#include "smoke/smoke.hpp"
#include "util/embedded_file.hpp"

namespace gpuenv::smoke {

std::span<const util::EmbeddedFile> embedded_smoke_kernels();  // generated: images.txt and the nvcc fatbins

namespace {

/// "13.0" -> 13000 (cuDriverGetVersion's encoding); 0 when malformed.
int cuda_version_number(const std::string& text) {
  int major = 0, minor = 0;
  char dot = 0;
  std::istringstream in(text);
  if (!(in >> major >> dot >> minor) || dot != '.') return 0;
  return major * 1000 + minor * 10;
}

}  // namespace

std::vector<KernelImage> parse_kernel_manifest(std::string_view text) {
  std::vector<KernelImage> out;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    KernelImage image;
    if (!(fields >> image.file >> image.cuda_version >> image.min_driver >> image.ptx_arch)) continue;
    if (cuda_version_number(image.cuda_version) == 0 || image.ptx_arch.rfind("compute_", 0) != 0) continue;
    for (std::string arch; fields >> arch;) image.sass_archs.push_back(arch);
    out.push_back(std::move(image));
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelImage& a, const KernelImage& b) {
    return cuda_version_number(a.cuda_version) > cuda_version_number(b.cuda_version);
  });
  return out;
}

std::vector<KernelImage> embedded_kernel_images() {
  const auto files = embedded_smoke_kernels();
  const auto manifest =
      std::find_if(files.begin(), files.end(), [](const util::EmbeddedFile& f) { return f.name == "images.txt"; });
  if (manifest == files.end()) return {};
  std::vector<KernelImage> images;
  for (KernelImage& image : parse_kernel_manifest(manifest->contents)) {
    image.contents = kernel_image_contents(image.file);
    image.bytes = image.contents.size();
    if (image.bytes > 0) images.push_back(std::move(image));
  }
  return images;
}

std::string_view kernel_image_contents(const std::string& file) {
  for (const util::EmbeddedFile& embedded : embedded_smoke_kernels()) {
    if (embedded.name == file) return embedded.contents;
  }
  return {};
}

std::vector<const KernelImage*> kernel_images_for(const std::vector<KernelImage>& images, int driver_version) {
  std::vector<const KernelImage*> out;
  for (const KernelImage& image : images) {
    if (image.min_driver <= driver_version) out.push_back(&image);
  }
  // An image newer than the driver's CUDA major is tried last: its PTX cannot JIT there, but the driver says so.
  for (const KernelImage& image : images) {
    if (image.min_driver > driver_version) out.push_back(&image);
  }
  return out;
}

std::string kernel_image_driver_range(const std::vector<KernelImage>& images, std::size_t index) {
  const KernelImage& image = images.at(index);
  std::string range = "drivers supporting CUDA " + cuda_version_text(image.min_driver) + " or newer";
  if (index > 0) range += ", below CUDA " + cuda_version_text(images[index - 1].min_driver);
  // SASS of a toolkit runs on every driver of its major (minor-version compatibility); PTX JITs only on a driver at
  // least as new as the toolkit, so a GPU newer than the SASS (Blackwell on the 11.8 image) needs that much.
  if (image.min_driver < cuda_version_number(image.cuda_version))
    range += " (its " + image.ptx_arch + " PTX, for GPUs newer than its SASS, needs CUDA " + image.cuda_version + ")";
  return range;
}

}  // namespace gpuenv::smoke
