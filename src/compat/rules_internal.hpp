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
