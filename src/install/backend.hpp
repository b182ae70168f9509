#pragma once
// One backend per package manager: turns the planner's intents into argv and files (pure). apt.cpp and
// apt_repository.cpp, dnf.cpp; what both share (https downloads, key pinning) is in keys.cpp.

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
  const InstallPlan& plan;       ///< target, driver choice, fabric manager and repository URL decided so far
  std::string cuda_base_url;     ///< the CUDA repository base (data, or the override)
  std::string toolkit_base_url;  ///< the container toolkit repository base (data, or the override)
  std::string flavour;           ///< the kernel's flavour meta suffix ("generic-hwe-22.04"); "" for dnf targets
  /// Replaces the {placeholders} of data/install/*.toml.
  std::string expand(const std::string& pattern) const;
  std::vector<std::string> expand(const std::vector<std::string>& patterns) const;
  /// NVIDIA's own repository directory for the target ("https://developer.download.nvidia.com/.../ubuntu2204/
  /// x86_64/"): keys and the keyring package come from here whatever mirror the packages come from.
  std::string upstream_repo_url() const;
  /// True when the CUDA repository is a local file: directory (trusted as it is: no key is fetched).
  bool local_cuda_repository() const;
  /// The target's headers for kernels installed later, expanded; on a node whose kernel flavour is unknown, the
  /// ones that need it are left out (the planner notes it) rather than asked for by a placeholder name.
  std::vector<std::string> future_headers() const;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// argv that installs `packages` non-interactively.
  virtual std::vector<std::string> install(const std::vector<std::string>& packages) const = 0;
  /// A done_if probe: exit 0 (and, when set, the expected stdout) when every package is installed.
  virtual Step installed_probe(Step step, const std::vector<std::string>& packages) const = 0;
  /// A done_if probe: every package installed at a version of `branch` ("580.*").
  virtual Step branch_probe(Step step, const std::vector<std::string>& packages, const std::string& branch) const = 0;
  /// argv listing the repository's package names like `package` (same name up to its version), for failures.
  virtual std::vector<std::string> similar_packages(const std::string& package) const = 0;
  /// Lock wait, interrupted-install repair and the repositories the driver's build needs, before anything else.
  virtual std::vector<Step> preflight(const PlanContext& context) const = 0;
  /// The running kernel's headers and the packages that bring the headers of kernels installed later.
  virtual Step headers(const PlanContext& context) const = 0;
  /// [install] hold_kernel: keeps the kernel packages where they are (unhold: docs/install.md).
  virtual Step hold_kernel(const PlanContext& context) const = 0;
  /// NVIDIA's CUDA repository with its key (never a downloaded script, never a key from a mirror).
  virtual std::vector<Step> cuda_repository(const PlanContext& context) const = 0;
  /// Driver packages kept on the branch by this distribution's mechanism; on an NVSwitch plan with fabric manager
  /// and NSCQ in the same transaction, so their versions are the driver's.
  virtual std::vector<Step> driver(const PlanContext& context) const = 0;
  /// The NVIDIA Container Toolkit repository and package.
  virtual Step container_toolkit(const PlanContext& context) const = 0;
  /// Tell unattended upgrades to leave the driver and CUDA alone; nullopt when the lock already does.
  virtual std::optional<Step> unattended_upgrades(const PlanContext& context) const = 0;
  /// argv that rebuilds the initramfs of every installed kernel (after blacklisting nouveau).
  virtual std::vector<std::string> rebuild_initramfs() const = 0;
  /// argv listing the files in the initramfs of `kernel`.
  virtual std::vector<std::string> list_initramfs(const std::string& kernel) const = 0;
  /// How the lock is described in the plan summary.
  virtual std::string lock_description(const PlanContext& context) const = 0;
};

std::unique_ptr<Backend> make_apt_backend();
std::unique_ptr<Backend> make_dnf_backend();

/// `package` up to its first "-<digit>": "cuda-toolkit-12-4" -> "cuda-toolkit-", "nvidia-open" -> "nvidia-open".
std::string package_stem(const std::string& package);

/// The fabric manager packages of a manager, origin and branch; nullptr when the data has none.
const FabricRow* fabric_row(const InstallData& data, const std::string& manager, const std::string& origin,
                            const std::string& branch);

/// True when `url` is a local file: repository.
bool is_local_repository(const std::string& url);

/// curl argv that downloads `url` to `file` over https only, redirects included, failing on HTTP errors.
std::vector<std::string> https_download(const std::string& url, const std::string& file);

/// Commands that keep, of the keys in `downloaded`, only the one with `fingerprint`, written to `keyring`
/// (binary, or ASCII-armoured for rpm) through a private GnuPG home; and the check that it is there.
struct PinnedKey {
  std::vector<std::vector<std::string>> commands;
  Check check;
};
PinnedKey pin_key(const std::string& downloaded, const std::string& fingerprint, const std::string& keyring,
                  bool armor);
/// The check that `keyring` holds the key `fingerprint` (gpg --show-keys prints "fpr:::::::::<FPR>:").
Check fingerprint_check(const std::string& keyring, const std::string& fingerprint);

}  // namespace gpuenv::install
