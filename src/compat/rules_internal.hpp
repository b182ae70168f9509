#pragma once
// What the compat rule files (rules.cpp, rules_frameworks.cpp, rules_image_gpu.cpp) share; compat-private.

#include <optional>
#include <string>
#include <vector>

#include "compat/derive.hpp"
#include "compat/rules.hpp"
#include "util/strings.hpp"

namespace gpuenv::compat::rules_detail {

using profile::Profile;
using report::Finding;
using report::Status;
using util::Version;

using Findings = std::vector<Finding>;

inline Finding make(std::string id, Status status, std::string message, std::string remedy = {},
                    std::string source = {}) {
  return Finding{std::move(id), status, std::move(message), std::move(remedy), std::move(source)};
}

inline std::string list(const std::vector<std::string>& items) { return util::join(items, ", "); }

inline std::string major_minor(const Version& version) { return version.truncated(2).str(); }

/// The binary-compatibility rule every finding that relies on it cites.
inline constexpr const char* k_binary_compatibility_source =
    "CUDA C++ Programming Guide, binary compatibility: a cubin for compute capability X.y runs on X.z with z >= y, not "
    "across major revisions (as implemented in llvm-project openmp/libomptarget cuda rtl.cpp)";

/// Whether code built for compute capability `built` runs on a GPU of compute capability `device`: the same major, a
/// minor not above the device's (10.0 code runs on a 10.3 B300, 12.0 code on a 12.1 GB10). gpu.cuda_support and
/// pytorch.compute_capability both decide family compatibility with it, so a report gives one answer (issue 25).
inline bool cubin_runs_on(const Version& built, const Version& device) {
  return built.major() == device.major() && built.minor() <= device.minor();
}

/// Facts every rule needs, parsed once.
struct Context {
  const Profile& profile;
  const KnowledgeBase& kb;
  Purpose purpose;
  std::optional<Version> cuda;
  DriverFloor floor;
};

/// cudnn.* (rules_frameworks.cpp).
void check_cudnn(const Context& c, Findings& out);
/// pytorch.* (rules_frameworks.cpp).
void check_pytorch(const Context& c, Findings& out);
/// tensorflow.* (rules_frameworks.cpp).
void check_tensorflow(const Context& c, Findings& out);
/// image.* (rules_image_gpu.cpp).
void check_image(const Context& c, Findings& out);
/// gpu.model, gpu.cuda_support (rules_image_gpu.cpp).
void check_gpus(const Context& c, Findings& out);

}  // namespace gpuenv::compat::rules_detail
