#include "compat/derive.hpp"

#include "compat/mirrors.hpp"
#include "util/strings.hpp"

namespace gpuenv::compat {

using util::Version;

std::string image_os_suffix(const std::string& distro, const std::string& version) {
  if (distro == "ubuntu") return "ubuntu" + version;
  if (distro == "rockylinux") return "rockylinux" + version;
  // Red Hat's container base for RHEL is UBI; nvidia/cuda publishes ubiN, not rhelN.
  if (distro == "ubi" || distro == "rhel") return "ubi" + version;
  if (distro == "amzn") return "amzn" + version;
  return {};
}

std::string torch_variant_for(const Version& cuda) {
  return "cu" + std::to_string(cuda.major()) + std::to_string(cuda.minor());
}

std::optional<Version> cuda_of_variant(const std::string& variant) {
  if (variant.size() < 4 || !util::starts_with(variant, "cu")) return std::nullopt;
  const std::string digits = variant.substr(2);
  // The last digit is the minor: cu118 -> 11.8, cu92 -> 9.2, cu130 -> 13.0.
  const auto major = util::parse_int(digits.substr(0, digits.size() - 1));
  const auto minor = util::parse_int(digits.substr(digits.size() - 1));
  if (!major || !minor) return std::nullopt;
  return Version({static_cast<int>(*major), static_cast<int>(*minor)});
}

DriverFloor driver_floor(const profile::Profile& profile, const KnowledgeBase& kb) {
  if (!profile.driver_min.empty()) return {Version::parse(profile.driver_min), "driver.min"};
  const auto cuda = Version::parse(profile.cuda_version);
  if (!cuda) return {std::nullopt, "no CUDA version"};
  if (const CudaRelease* release = kb.cuda_release(*cuda); release != nullptr && release->driver_min) {
    return {release->driver_min, "CUDA " + profile.cuda_version + " requires it"};
  }
  if (const CudaMajor* major = kb.cuda_major(cuda->major())) {
    return {major->compat_driver_min, "the CUDA " + std::to_string(cuda->major()) +
                                          ".x minor-version-compatibility floor (CUDA " + profile.cuda_version +
                                          "'s own minimum is not in the knowledge base)"};
  }
  return {std::nullopt, "CUDA " + profile.cuda_version + " is not in the knowledge base"};
}

namespace {

std::string image_flavor_token(const profile::Profile& profile, const KnowledgeBase& kb, const CudaImage* image) {
  const std::string flavor = effective_image_flavor(profile, kb);
  if (profile.cudnn_version.empty() || flavor == "base") return flavor;
  const std::string token = image != nullptr && !image->cudnn_token.empty() ? image->cudnn_token : "cudnn";
  return token + "-" + flavor;
}

}  // namespace

bool framework_brings_cuda_libraries(const profile::Profile& profile, const KnowledgeBase& kb) {
  if (profile.framework_name == "pytorch") return true;
  if (profile.framework_name == "tensorflow") {
    const auto version = Version::parse(profile.framework_version);
    const TensorflowRelease* release = version ? kb.tensorflow_release(*version) : nullptr;
    return release != nullptr && release->and_cuda;
  }
  return false;
}

std::string effective_image_flavor(const profile::Profile& profile, const KnowledgeBase& kb) {
  if (!profile.image_flavor.empty()) return profile.image_flavor;
  return framework_brings_cuda_libraries(profile, kb) ? "base" : "runtime";
}

Derived derive(const profile::Profile& profile, const KnowledgeBase& kb) {
  Derived out;
  const auto cuda = Version::parse(profile.cuda_version);
  out.image_os = image_os_suffix(profile.os_distro, profile.os_version);
  const CudaImage* image = cuda ? kb.image(*cuda) : nullptr;
  out.image_flavor = image_flavor_token(profile, kb, image);
  if (!out.image_os.empty() && cuda) out.image_tag = profile.cuda_version + "-" + out.image_flavor + "-" + out.image_os;
  if (profile.framework_name == "pytorch" && cuda) {
    out.torch_variant = profile.framework_variant.empty() ? torch_variant_for(*cuda) : profile.framework_variant;
    out.wheel_index_url = std::string(upstream::pytorch) + "/" + out.torch_variant;
  }
  out.driver_floor = driver_floor(profile, kb);
  if (!profile.driver_branch.empty()) {
    out.driver_branch = profile.driver_branch;
  } else if (out.driver_floor.version) {
    out.driver_branch = std::to_string(out.driver_floor.version->major());
  }
  return out;
}

}  // namespace gpuenv::compat
