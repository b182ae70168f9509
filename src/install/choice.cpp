// The driver branch and module flavour, and what a target's repository cannot provide. Sources: the rows of
// data/install/drivers.toml ([limits], [[branch]]) and targets.toml (each target's repository range), and the
// knowledge base's GPU generations (data/compat/cuda.toml [[arch]]: driver_min, driver_modules).

#include "install/choice.hpp"

#include <algorithm>
#include <cstdlib>

#include "compat/derive.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::install {
namespace {

using report::Finding;
using report::Status;
using util::Version;

constexpr int k_no_branch = 0;

bool pre_turing(const std::string& compute_capability) {
  const auto cc = Version::parse(compute_capability);
  return cc && *cc < Version({7, 5});
}

const compat::ArchSupport* arch_of(const compat::KnowledgeBase& kb, const std::string& compute_capability) {
  for (const compat::ArchSupport& arch : kb.archs) {
    if (arch.compute_capability == compute_capability) return &arch;
  }
  return nullptr;
}

void add_unique(std::vector<std::string>& out, const std::string& value) {
  if (std::find(out.begin(), out.end(), value) == out.end()) out.push_back(value);
}

/// The lowest branch every GPU of the view runs on, and which GPU asks for it.
std::pair<int, std::string> gpu_floor(const compat::KnowledgeBase& kb, const GpuView& gpus) {
  std::pair<int, std::string> out{k_no_branch, ""};
  for (const std::string& cc : gpus.compute_capabilities) {
    const compat::ArchSupport* arch = arch_of(kb, cc);
    if (arch == nullptr || !arch->driver_min) continue;
    const int branch = arch->driver_min->major();
    if (branch > out.first) out = {branch, arch->name + " (compute capability " + cc + ")"};
  }
  return out;
}

/// A branch's end of life as a message says it: the month, or that NVIDIA gives none.
std::string end_of_life_words(const BranchRow& row) {
  return row.end_of_life == "ended" ? "NVIDIA lists it as ended, without a date" : row.end_of_life;
}

std::string branch_kind_name(const std::string& kind) {
  return kind == "lts" ? "long-term support" : kind == "production" ? "production" : "feature";
}

/// The newest LTS or production branch in [floor, ceiling], preferring one not past its end of life.
const BranchRow* newest_supported(const InstallData& data, int floor, int ceiling, bool allow_end_of_life) {
  const BranchRow* best = nullptr;
  for (const BranchRow& row : data.branches) {
    if (row.kind == "feature" || row.branch < floor || row.branch > ceiling) continue;
    if (!allow_end_of_life && data.past_end_of_life(row)) continue;
    best = &row;  // sorted ascending: the last that fits is the newest
  }
  return best;
}

struct Bounds {
  int floor = k_no_branch;
  int ceiling = 999;
  std::vector<std::string> why;  ///< "CUDA 12.4.1 needs >= 550", ...
};

Bounds branch_bounds(const profile::Profile& profile, const compat::KnowledgeBase& kb, const InstallData& data,
                     const TargetRow& target, const GpuView& gpus) {
  Bounds out;
  const auto raise = [&out](int floor, std::string why) {
    if (floor <= k_no_branch) return;
    out.why.push_back(std::move(why));
    out.floor = std::max(out.floor, floor);
  };
  const compat::DriverFloor cuda = compat::driver_floor(profile, kb);
  if (cuda.version) raise(cuda.version->major(), "CUDA " + profile.cuda_version + " needs >= " + cuda.version->str());
  const auto [gpu_branch, gpu] = gpu_floor(kb, gpus);
  if (gpu_branch != k_no_branch) raise(gpu_branch, gpu + " needs >= " + std::to_string(gpu_branch));
  raise(target.branch_first,
        "NVIDIA's " + target.repo_dir + " repository starts at " + std::to_string(target.branch_first));
  if (!gpus.open_only.empty() || profile.driver_modules == "open")
    raise(data.limits.open_first_branch,
          "open kernel modules start at " + std::to_string(data.limits.open_first_branch));
  if (!gpus.pre_turing.empty()) {
    out.ceiling = data.limits.pre_turing_last_branch;
    out.why.push_back("GPUs older than Turing end at " + std::to_string(out.ceiling));
  }
  if (target.branch_last != 0 && target.branch_last < out.ceiling) {
    out.ceiling = target.branch_last;
    out.why.push_back("NVIDIA's " + target.repo_dir + " repository ends at " + std::to_string(target.branch_last));
  }
  return out;
}

void choose_branch(const profile::Profile& profile, const compat::KnowledgeBase& kb, const InstallData& data,
                   const TargetRow& target, const GpuView& gpus, DriverDecision& out) {
  if (!profile.driver_branch.empty()) {
    if (branch_number(profile.driver_branch) <= 0) {
      // The profile parser accepts three digits only; a Profile built another way is refused, never thrown on.
      out.refusals.push_back(refusal("install.driver.branch",
                                     "driver branch \"" + profile.driver_branch + "\" is not a branch number",
                                     "set `branch` under [driver] to a three-digit branch such as \"580\""));
      return;
    }
    out.choice.branch = profile.driver_branch;
    out.choice.how = "the profile's [driver] branch";
    return;
  }
  const Bounds bounds = branch_bounds(profile, kb, data, target, gpus);
  const BranchRow* chosen = newest_supported(data, bounds.floor, bounds.ceiling, false);
  if (chosen == nullptr) {
    chosen = newest_supported(data, bounds.floor, bounds.ceiling, true);
    if (chosen != nullptr) {
      out.notes.push_back(warning("install.driver.branch_end_of_life",
                                  "branch " + std::to_string(chosen->branch) + " is past its end of life (" +
                                      end_of_life_words(*chosen) +
                                      ") but it is the newest LTS or production branch that "
                                      "fits (" +
                                      util::join(bounds.why, "; ") + ")",
                                  "move the node to a newer target", chosen->source));
    }
  }
  if (chosen == nullptr) {
    out.refusals.push_back(refusal("install.driver.branch",
                                   "no LTS or production driver branch fits: " + util::join(bounds.why, "; "),
                                   "set `branch` under [driver] to a branch that fits, or change what excludes "
                                   "them",
                                   "data/install/drivers.toml [[branch]]"));
    return;
  }
  out.choice.branch = std::to_string(chosen->branch);
  out.choice.how =
      "the newest " + branch_kind_name(chosen->kind) + " branch that fits (" + util::join(bounds.why, "; ") + ")";
}

void choose_modules(const profile::Profile& profile, const InstallData& data, const GpuView& gpus,
                    DriverDecision& out) {
  const int branch = branch_number(out.choice.branch);
  out.choice.modules = profile.driver_modules;
  if (out.choice.modules.empty()) {
    const bool proprietary = !gpus.pre_turing.empty() && gpus.open_only.empty();
    out.choice.modules =
        proprietary || (branch < data.limits.open_default_from && gpus.open_only.empty()) ? "proprietary" : "open";
  }
  const std::string blog =
      "https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-"
      "modules/";
  if (!gpus.open_only.empty() && !gpus.pre_turing.empty()) {
    out.refusals.push_back(refusal("install.driver.modules",
                                   "no module flavour drives both " + util::join(gpus.open_only, ", ") +
                                       " (open modules only) and GPUs older than Turing (compute capability " +
                                       util::join(gpus.pre_turing, ", ") + ", proprietary only)",
                                   "install these GPUs in different nodes", blog));
  } else if (out.choice.modules == "proprietary" && !gpus.open_only.empty()) {
    out.refusals.push_back(refusal("install.driver.modules",
                                   util::join(gpus.open_only, ", ") +
                                       " run only with the open kernel modules: the proprietary ones are unsupported",
                                   "set `modules = \"open\"` under [driver] (or remove `modules`)", blog));
  } else if (out.choice.modules == "open" && !gpus.pre_turing.empty()) {
    out.refusals.push_back(refusal("install.driver.modules",
                                   "open kernel modules do not support GPUs older than Turing (compute capability " +
                                       util::join(gpus.pre_turing, ", ") + " present)",
                                   "set `modules = \"proprietary\"` under [driver] (R580 is the last branch for "
                                   "Maxwell, Pascal and Volta)",
                                   data.limits.source));
  }
  if (out.choice.modules == "open" && branch < data.limits.open_first_branch) {
    out.refusals.push_back(refusal(
        "install.driver.modules", "branch " + out.choice.branch + " has no open kernel modules",
        "use branch " + std::to_string(data.limits.open_first_branch) + " or newer, or `modules = \"proprietary\"`",
        data.limits.source));
  }
}

/// A branch the profile names that the GPUs or the CUDA release cannot run with.
void check_named_branch(const profile::Profile& profile, const compat::KnowledgeBase& kb, const InstallData& data,
                        const GpuView& gpus, DriverDecision& out) {
  if (profile.driver_branch.empty()) return;
  const int branch = branch_number(out.choice.branch);
  if (!gpus.pre_turing.empty() && branch > data.limits.pre_turing_last_branch) {
    out.refusals.push_back(refusal("install.driver.gpu",
                                   "branch " + out.choice.branch + " no longer supports GPUs older than Turing " +
                                       "(compute capability " + util::join(gpus.pre_turing, ", ") + " present)",
                                   "use branch " + std::to_string(data.limits.pre_turing_last_branch) +
                                       " (the last for Maxwell, Pascal and Volta)",
                                   data.limits.source));
  }
  if (const auto [floor, gpu] = gpu_floor(kb, gpus); floor != k_no_branch && branch < floor) {
    out.refusals.push_back(refusal(
        "install.driver.gpu",
        gpu + " needs driver branch " + std::to_string(floor) + " or newer; the profile names " + out.choice.branch,
        "set `branch` under [driver] to " + std::to_string(floor) + " or newer",
        "data/compat/cuda.toml [[arch]] driver_min"));
  }
  const compat::DriverFloor cuda = compat::driver_floor(profile, kb);
  if (cuda.version && branch < cuda.version->major()) {
    out.refusals.push_back(
        refusal("install.driver.branch",
                "branch " + out.choice.branch + " is older than CUDA " + profile.cuda_version + " needs (" +
                    cuda.version->str() + ", " + cuda.reason + ")",
                "set `branch` under [driver] to " + std::to_string(cuda.version->major()) + " or newer"));
  }
  if (const BranchRow* row = data.find_branch(branch)) {
    if (row->kind == "feature") {
      out.notes.push_back(warning("install.driver.branch_kind",
                                  "branch " + out.choice.branch +
                                      " is a new feature branch: short-lived, no long-term fixes; a fleet standardises "
                                      "on an LTS or production branch",
                                  "", row->source));
    } else if (data.past_end_of_life(*row)) {
      out.notes.push_back(warning("install.driver.branch_end_of_life",
                                  "branch " + out.choice.branch + " is past its end of life (" +
                                      end_of_life_words(*row) + ")" + ": no more security fixes",
                                  "move to a supported LTS or production branch", row->source));
    }
  }
}

/// The LTS or production branch the target's repository carries that is nearest to `branch` (else its bound).
int nearest_carried(const InstallData& data, const TargetRow& target, int branch) {
  const int last = target.branch_last != 0 ? target.branch_last : 999;
  int best = branch < target.branch_first ? target.branch_first : last;
  int distance = 1000;
  for (const BranchRow& row : data.branches) {
    if (row.kind == "feature" || row.branch < target.branch_first || row.branch > last) continue;
    if (std::abs(row.branch - branch) < distance) {
      distance = std::abs(row.branch - branch);
      best = row.branch;
    }
  }
  return best;
}

}  // namespace

int branch_number(std::string_view branch) {
  const std::optional<long long> number = util::parse_int(branch);
  return number && *number > 0 && *number < 10000 ? static_cast<int>(*number) : 0;
}

Finding refusal(std::string id, std::string message, std::string remedy, std::string source) {
  return Finding{std::move(id), Status::fail, std::move(message), std::move(remedy), std::move(source)};
}

Finding warning(std::string id, std::string message, std::string remedy, std::string source) {
  return Finding{std::move(id), Status::warn, std::move(message), std::move(remedy), std::move(source)};
}

GpuView gpu_view(const profile::Profile& profile, const NodeFacts& node, const InstallData& data,
                 const compat::KnowledgeBase& kb) {
  GpuView view;
  for (std::uint16_t device : node.gpu_devices) {
    if (const GpuRow* row = data.find_gpu(device)) {
      add_unique(view.compute_capabilities, row->compute_capability);
      if (row->open_only) add_unique(view.open_only, row->name);
    }
  }
  for (const std::string& cc : node.gpu_compute_capabilities) add_unique(view.compute_capabilities, cc);
  view.origin = view.compute_capabilities.empty() ? "" : "the node";
  if (view.compute_capabilities.empty()) {
    view.compute_capabilities = profile.gpu_compute_capabilities;
    if (!view.compute_capabilities.empty()) view.origin = "the profile's [gpu]";
  }
  for (const std::string& cc : view.compute_capabilities) {
    if (pre_turing(cc)) view.pre_turing.push_back(cc);
    const compat::ArchSupport* arch = arch_of(kb, cc);
    if (arch != nullptr && arch->driver_modules == "open") add_unique(view.open_only, arch->name);
  }
  return view;
}

DriverDecision choose_driver(const profile::Profile& profile, const compat::KnowledgeBase& kb, const InstallData& data,
                             const TargetRow& target, const GpuView& gpus) {
  DriverDecision out;
  out.choice.source = profile.driver_source.empty() ? "nvidia" : profile.driver_source;
  choose_branch(profile, kb, data, target, gpus, out);
  if (out.choice.branch.empty()) return out;
  choose_modules(profile, data, gpus, out);
  check_named_branch(profile, kb, data, gpus, out);
  return out;
}

std::vector<Finding> repository_refusals(const profile::Profile& profile, const InstallPlan& plan,
                                         const TargetRow& target, const InstallData& data) {
  std::vector<Finding> out;
  const std::string where = "NVIDIA's " + target.repo_dir + " repository";
  const int branch = branch_number(plan.driver.branch);
  if (plan.driver.source == "distro") {
    const BranchRow* row = data.find_branch(branch);
    if (row != nullptr && (row->kind == "feature" || data.past_end_of_life(*row))) {
      out.push_back(refusal(
          "install.driver.branch",
          "Ubuntu's archive keeps server packages of supported LTS and production branches only: "
          "branch " +
              plan.driver.branch + " is " +
              (row->kind == "feature" ? "a feature branch" : "past its end of life (" + end_of_life_words(*row) + ")") +
              ", and its packages are transitional to another branch",
          "choose a supported LTS or production branch",
          row->source + "; packages.ubuntu.com nvidia-graphics-drivers-535-server (transitional)"));
    }
    return out;
  }
  const auto cuda = Version::parse(profile.cuda_version);
  if (cuda) {
    const Version wanted({cuda->major(), cuda->minor()});
    const bool too_old = wanted < target.cuda_first;
    const bool too_new = target.cuda_last && *target.cuda_last < wanted;
    if (too_old || too_new) {
      const std::string range = target.cuda_first.str() + (target.cuda_last ? " to " + target.cuda_last->str() : " on");
      out.push_back(refusal("install.repository",
                            where + " carries CUDA " + range + ", not CUDA " + profile.cuda_version,
                            "use CUDA " + (too_old ? target.cuda_first.str() : target.cuda_last->str()) +
                                " (the nearest it carries) or another target",
                            target.source));
    }
  }
  if (!profile.cudnn_version.empty() && !target.cudnn) {
    out.push_back(refusal("install.repository", where + " carries no cuDNN packages",
                          "remove [cudnn], or use another target", target.source));
  }
  if (branch < target.branch_first || (target.branch_last != 0 && branch > target.branch_last)) {
    const int nearest = nearest_carried(data, target, branch);
    out.push_back(refusal("install.repository",
                          where + " carries driver branches " + std::to_string(target.branch_first) +
                              (target.branch_last != 0 ? " to " + std::to_string(target.branch_last) : " on") +
                              ", not " + plan.driver.branch,
                          "use branch " + std::to_string(nearest) + " (the nearest it carries) or another target",
                          target.source));
  }
  return out;
}

std::vector<Finding> distro_source_notes(const profile::Profile& profile, const InstallPlan& plan,
                                         const TargetRow& target) {
  std::vector<Finding> out;
  if (plan.driver.source != "distro" || target.distro_cuda_toolkit.empty()) return out;
  const auto cuda = Version::parse(profile.cuda_version);
  const auto archive = Version::parse(target.distro_cuda_toolkit);
  if (cuda && archive && (cuda->major() != archive->major() || cuda->minor() != archive->minor())) {
    out.push_back(
        warning("install.cuda_toolkit.version",
                "Ubuntu " + target.version + "'s nvidia-cuda-toolkit is CUDA " + target.distro_cuda_toolkit +
                    ", not the profile's CUDA " + profile.cuda_version,
                "install from NVIDIA's repository (remove `source` from [driver]) for CUDA " + profile.cuda_version,
                "https://packages.ubuntu.com/nvidia-cuda-toolkit"));
  }
  return out;
}

}  // namespace gpuenv::install
