#pragma once
// One backend per package manager: turns the planner's intents into argv and files (pure). apt.cpp, dnf.cpp.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "install/data.hpp"
#include "install/plan.hpp"
#include "profile/profile.hpp"

namespace gpuenv::install {

/// Everything a backend needs to write its steps.
struct PlanContext {
  const profile::Profile& profile;
  const InstallData& data;
  const TargetRow& target;
  const DriverRow& driver;
  const NodeFacts& node;
  const InstallPlan& plan;       ///< target, driver choice and repository URL decided so far
  std::string cuda_base_url;     ///< the CUDA repository base (data, or the override)
  std::string toolkit_base_url;  ///< the container toolkit repository base (data, or the override)
  /// Replaces the {placeholders} of data/install/targets.toml.
  std::string expand(const std::string& pattern) const;
  std::vector<std::string> expand(const std::vector<std::string>& patterns) const;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// argv that installs `packages` non-interactively.
  virtual std::vector<std::string> install(const std::vector<std::string>& packages) const = 0;
  /// A done_if probe: exit 0 (and, when set, the expected stdout) when every package is installed.
  virtual Step installed_probe(Step step, const std::vector<std::string>& packages) const = 0;
  /// argv listing the repository's package names like `package` (same name up to its version), for failures.
  virtual std::vector<std::string> similar_packages(const std::string& package) const = 0;
  /// Lock wait and interrupted-install repair, before anything else (may be none).
  virtual std::vector<Step> preflight(const PlanContext& context) const = 0;
  /// NVIDIA's CUDA repository with its key (never a downloaded script).
  virtual std::vector<Step> cuda_repository(const PlanContext& context) const = 0;
  /// Driver packages pinned to the branch by this distribution's mechanism.
  virtual Step driver(const PlanContext& context) const = 0;
  /// The NVIDIA Container Toolkit repository and package.
  virtual Step container_toolkit(const PlanContext& context) const = 0;
  /// Tell unattended upgrades to leave the driver and CUDA alone; nullopt when the lock already does.
  virtual std::optional<Step> unattended_upgrades(const PlanContext& context) const = 0;
  /// argv that rebuilds the initramfs (after blacklisting nouveau).
  virtual std::vector<std::string> rebuild_initramfs() const = 0;
  /// The "apt-mark hold ..." style description of the lock, for the plan summary.
  virtual std::string lock_description(const PlanContext& context) const = 0;
};

std::unique_ptr<Backend> make_apt_backend();
std::unique_ptr<Backend> make_dnf_backend();

/// `package` up to its first "-<digit>": "cuda-toolkit-12-4" -> "cuda-toolkit-", "nvidia-open" -> "nvidia-open".
std::string package_stem(const std::string& package);

/// True when `url` is a local file: repository (trusted as it is, no key fetched).
bool is_local_repository(const std::string& url);

}  // namespace gpuenv::install
