#pragma once
// The install knowledge compiled in from data/install/*.toml: repositories, targets, driver package rows.

#include <span>
#include <string>
#include <vector>

#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/expected.hpp"

namespace gpuenv::install {

/// Where NVIDIA's repositories and keys are.
struct Repository {
  std::string cuda_base_url;
  std::string apt_keyring_file;  ///< cuda-keyring_1.1-1_all.deb
  std::string apt_keyring_path;  ///< where that package puts the key
  std::string rpm_key_file;      ///< D42D0685.pub
  std::string toolkit_base_url;  ///< https://nvidia.github.io/libnvidia-container
  std::string toolkit_deb_path;  ///< appended to the base: the apt repository ($(ARCH) is apt's)
  std::string toolkit_key_path;  ///< appended to the upstream base: the signing key (a mirror keeps upstream's key)
  std::string toolkit_rpm_path;  ///< appended to the base: the yum baseurl ($basearch is dnf's)
  std::string source;
};

/// One supported distribution release.
struct TargetRow {
  std::string distro;
  std::string version;
  std::string manager;  ///< apt | dnf
  std::string repo_dir;
  std::vector<std::string> arches;  ///< repository arches: x86_64, sbsa
  std::vector<std::string> headers;
  std::vector<std::string> prerequisites;
  std::string driver_lock;  ///< dnf: module-stream | versionlock; apt: empty (per driver row)
  std::string source;
};

/// Driver packages for one package manager, origin, branch range and module flavour.
struct DriverRow {
  std::string manager;
  std::string origin;  ///< nvidia | distro
  int first_branch = 0;
  int last_branch = 0;
  std::string modules;  ///< open | proprietary
  std::string lock;     ///< hold | pinning-package | target
  std::string stream;   ///< dnf module stream template
  std::vector<std::string> packages;
  std::string source;
};

/// Package-name templates for the CUDA stack.
struct PackageNames {
  std::string cuda_toolkit;
  std::string cuda_compat;
  std::string cudnn;
  std::string distro_cuda_toolkit;
  std::string container_toolkit;
  std::string source;
};

struct InstallData {
  Repository repository;
  std::vector<TargetRow> targets;
  std::vector<DriverRow> drivers;
  PackageNames packages;

  /// The target row for a distro and version (EL versions match on the major), or nullptr.
  const TargetRow* find_target(const std::string& distro, const std::string& version) const;
  /// "ubuntu 20.04, ubuntu 22.04, ..." for refusals.
  std::string supported_list() const;
};

/// Parses the install data files; an internal Error naming the file and row when one is malformed.
util::Expected<InstallData> parse_install_data(std::span<const util::EmbeddedFile> files,
                                               const util::Overlay& overlay = {});

/// The install table (targets.toml, compiled in) and how overlay rows replace its rows.
std::vector<util::DataTable> data_tables();
/// The compiled-in table with `overlay` merged, parsed anew (for `gpuenv data check`).
util::Expected<InstallData> load_install_data(const util::Overlay& overlay);
/// The compiled-in data (parsed once).
util::Expected<const InstallData*> builtin_install_data();

}  // namespace gpuenv::install
