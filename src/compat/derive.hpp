#pragma once
// Values a profile implies: the nvidia/cuda tag, the PyTorch wheel index, the driver floor.

#include <optional>
#include <string>

#include "compat/knowledge_base.hpp"
#include "profile/profile.hpp"

namespace gpuenv::compat {

/// The lowest driver the profile accepts and why.
struct DriverFloor {
  std::optional<util::Version> version;  ///< absent when neither the profile nor the knowledge base gives one
  std::string reason;                    ///< "driver.min", "CUDA 12.4.1 requires it", ...
};

/// Everything `profile show` prints beyond the user's own fields.
struct Derived {
  std::string image_os;         ///< "ubuntu22.04"; empty when the distro has no nvidia/cuda images
  std::string image_flavor;     ///< "cudnn-runtime", "runtime", ...
  std::string image_tag;        ///< "12.4.1-cudnn-runtime-ubuntu22.04"; empty when no tag can be formed
  std::string torch_variant;    ///< "cu124"; empty without PyTorch
  std::string wheel_index_url;  ///< "https://download.pytorch.org/whl/cu124"; empty without PyTorch
  DriverFloor driver_floor;
  std::string driver_branch;  ///< driver.branch, or the floor's branch
};

/// The nvidia/cuda OS suffix for a distro and version ("rhel", "9" -> "ubi9"); empty for debian.
std::string image_os_suffix(const std::string& distro, const std::string& version);
/// The PyTorch wheel variant a CUDA version implies: 12.4.1 -> "cu124".
std::string torch_variant_for(const util::Version& cuda);
/// The CUDA major.minor a wheel variant bundles: "cu124" -> 12.4 (cu92 -> 9.2).
std::optional<util::Version> cuda_of_variant(const std::string& variant);
/// The driver floor: driver.min when set, otherwise what the CUDA release requires.
DriverFloor driver_floor(const profile::Profile& profile, const KnowledgeBase& kb);
/// Whether the profile's framework brings its own CUDA and cuDNN libraries as pip packages, so that it needs none
/// from the image: every PyTorch CUDA wheel (2.x pulls nvidia-*-cuXX wheels; 1.x +cuXXX wheels bundle them inside)
/// and TensorFlow releases with the [and-cuda] extra. False without a framework.
bool framework_brings_cuda_libraries(const profile::Profile& profile, const KnowledgeBase& kb);
/// The image flavor a profile gets: image.flavor when set; otherwise `base` for a framework that brings its own CUDA
/// libraries (docs/dockerfile.md "Lean by default") and `runtime` for everything else.
std::string effective_image_flavor(const profile::Profile& profile, const KnowledgeBase& kb);
/// All derived values of a profile (which should already have passed the rules).
Derived derive(const profile::Profile& profile, const KnowledgeBase& kb);

}  // namespace gpuenv::compat
