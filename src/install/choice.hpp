#pragma once
// The decisions before any step: which GPUs the plan is for, which driver branch and module flavour, and what the
// target's repository cannot provide (internal to the install module; pure).

#include <string>
#include <string_view>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "install/data.hpp"
#include "install/plan.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"

namespace gpuenv::install {

/// The NVIDIA GPUs the plan is for: those on the node (PCI device ids, or compute capabilities a loaded driver
/// reports), else the profile's [gpu].
struct GpuView {
  std::vector<std::string> compute_capabilities;
  std::vector<std::string> open_only;   ///< GPUs only the open kernel modules drive (Grace Hopper, Blackwell)
  std::vector<std::string> pre_turing;  ///< compute capabilities below 7.5
  std::string origin;                   ///< "the node" | "the profile's [gpu]" | ""
};
GpuView gpu_view(const profile::Profile& profile, const NodeFacts& node, const InstallData& data,
                 const compat::KnowledgeBase& kb);

/// A decision with the findings it made.
struct DriverDecision {
  DriverChoice choice;
  std::vector<report::Finding> refusals;
  std::vector<report::Finding> notes;
};

/// The branch (the profile's, else the newest LTS or production branch that satisfies every floor and that the
/// target's repository carries) and the module flavour.
DriverDecision choose_driver(const profile::Profile& profile, const compat::KnowledgeBase& kb, const InstallData& data,
                             const TargetRow& target, const GpuView& gpus);

/// What the target's repository does not carry (CUDA toolkit, cuDNN, driver branch), as refusals naming the
/// nearest that exists; and the distribution source's limits.
std::vector<report::Finding> repository_refusals(const profile::Profile& profile, const InstallPlan& plan,
                                                 const TargetRow& target, const InstallData& data);

/// Notes about the distribution source (its CUDA toolkit is the archive's).
std::vector<report::Finding> distro_source_notes(const profile::Profile& profile, const InstallPlan& plan,
                                                 const TargetRow& target);

/// A driver branch as a number ("580" -> 580); 0 when it is not one (choose_driver refuses such a branch, so the
/// plan never gets that far with it).
int branch_number(std::string_view branch);

/// A failing finding (a refusal).
report::Finding refusal(std::string id, std::string message, std::string remedy, std::string source = {});
/// A warning finding (a note).
report::Finding warning(std::string id, std::string message, std::string remedy = {}, std::string source = {});

}  // namespace gpuenv::install
