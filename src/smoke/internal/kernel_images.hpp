#pragma once
// Internal to smoke: the kernel images embedded in the binary and the order a driver tries them in (kernel_images.cpp;
// what the binary carries, KernelImage and embedded_kernels_info, is in smoke.hpp).

#include <string>
#include <string_view>
#include <vector>

#include "smoke/smoke.hpp"

namespace gpuenv::smoke {

/// Parses the build's manifest, one image a line: "file cuda_version min_driver ptx_arch sass_arch...", newest
/// toolkit first; malformed lines are skipped.
std::vector<KernelImage> parse_kernel_manifest(std::string_view text);
/// The images embedded in this binary, newest toolkit first (none when built without nvcc).
std::vector<KernelImage> embedded_kernel_images();
/// The embedded file `file` ("" when absent).
std::string_view kernel_image_contents(const std::string& file);
/// The order to try images on a driver of `driver_version` (cuDriverGetVersion): the newest whose min_driver it
/// meets first, then older ones, then those it does not meet.
std::vector<const KernelImage*> kernel_images_for(const std::vector<KernelImage>& images, int driver_version);

}  // namespace gpuenv::smoke
