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
  std::string cuda_repo_url;     ///< CUDA repository base override (--repo-url, GPUENV_CUDA_REPO_URL); empty: data
  std::string toolkit_repo_url;  ///< container toolkit repository base override; empty: data
};

/// Fills the repository bases the request leaves empty from the profile's [mirrors] (compat/mirrors.hpp); an
/// unmirrored profile leaves them empty, so the data's upstream URLs apply.
void add_profile_mirrors(const profile::Profile& profile, PlanRequest& request);

/// The plan, or the refusals that stop it (in InstallPlan::refusals); an internal Error only for broken data.
util::Expected<InstallPlan> plan_install(const profile::Profile& profile, const PlanRequest& request,
                                         const InstallData& data, const compat::KnowledgeBase& kb);

/// The Ubuntu kernel flavour of a kernel release: "6.8.0-1015-aws" -> "aws"; "" when it has none.
std::string kernel_flavour(const std::string& kernel_release);

}  // namespace gpuenv::install
