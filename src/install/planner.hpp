#pragma once
// plan_install: profile + target + node facts -> the steps that bring the node to the profile (pure).

#include <string>

#include "compat/knowledge_base.hpp"
#include "install/data.hpp"
#include "install/plan.hpp"
#include "profile/profile.hpp"
#include "util/expected.hpp"

namespace gpuenv::install {

struct PlanRequest {
  Target target;                 ///< distro, version, arch ("x86_64" | "arm64"); the rest is filled in
  NodeFacts node;                ///< defaults: nothing known (planning for another machine)
  std::string cuda_repo_url;     ///< CUDA repository base override (validated: repository_url.hpp); empty: data
  std::string toolkit_repo_url;  ///< container toolkit repository base override; empty: data
};

/// Fills the repository bases the request leaves empty from the profile's [mirrors] (compat/mirrors.hpp); an
/// unmirrored profile leaves them empty, so the data's upstream URLs apply.
void add_profile_mirrors(const profile::Profile& profile, PlanRequest& request);

/// The plan, or the refusals that stop it (in InstallPlan::refusals); an internal Error only for broken data.
util::Expected<InstallPlan> plan_install(const profile::Profile& profile, const PlanRequest& request,
                                         const InstallData& data, const compat::KnowledgeBase& kb);

/// The kernel flavour of a Debian or Ubuntu kernel release: what follows "<x.y.z>-<abi>-" ("6.8.0-1015-aws" ->
/// "aws", "6.8.0-45-generic-64k" -> "generic-64k", "6.1.0-18-cloud-amd64" -> "cloud-amd64"); "" when it has none.
std::string kernel_flavour(const std::string& kernel_release);

/// The flavour meta name that follows the running kernel, as ubuntu-drivers finds it: the installed
/// linux-image-<meta> package that depends on the running kernel's image; without the package list, the kernel's
/// flavour, "-hwe-<release>" added on Ubuntu when the kernel is newer than the release's GA kernel.
std::string kernel_meta_flavour(const NodeFacts& node, const TargetRow& target);

}  // namespace gpuenv::install
