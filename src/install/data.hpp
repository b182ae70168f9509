#pragma once
// The install knowledge compiled in from data/install/*.toml: repositories and what they carry, targets, driver
// package rows, the driver branches and their kind, fabric manager packages, signing keys and GPUs by PCI id.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/expected.hpp"
#include "util/version.hpp"

namespace gpuenv::install {

/// Where NVIDIA's repositories and keys are.
struct Repository {
  std::string cuda_base_url;        ///< NVIDIA's host: keys and the keyring package always come from here
  std::string keyring_file;         ///< cuda-keyring_1.1-1_all.deb
  std::string keyring_path;         ///< where that package puts the key
  std::string apt_pin_label;        ///< the Release file's Label of NVIDIA's repositories ("NVIDIA CUDA")
  std::string apt_driver_packages;  ///< apt_preferences(5) name pattern of the driver packages pinned to a branch
  std::string toolkit_base_url;     ///< https://nvidia.github.io/libnvidia-container
  std::string toolkit_deb_path;     ///< appended to the base: the apt repository ($(ARCH) is apt's)
  std::string toolkit_key_path;     ///< appended to the upstream base: the signing key (a mirror keeps upstream's key)
  std::string toolkit_rpm_path;     ///< appended to the base: the yum baseurl ($basearch is dnf's)
  std::string source;
};

/// One supported distribution release, and what NVIDIA's repository for it carries.
struct TargetRow {
  std::string distro;
  std::string version;
  std::string manager;  ///< apt | dnf
  std::string repo_dir;
  std::vector<std::string> arches;          ///< repository arches: x86_64, sbsa
  std::string key;                          ///< the signing key's id (a KeyRow)
  std::vector<std::string> headers;         ///< the running kernel's headers
  std::vector<std::string> future_headers;  ///< the packages that bring the headers of kernels installed later
  std::string ga_kernel;                    ///< Ubuntu: the release's GA kernel major.minor ("5.15"); else empty
  std::string distro_cuda_toolkit;          ///< Ubuntu: the CUDA major.minor of the archive's nvidia-cuda-toolkit
  std::string driver_lock;                  ///< dnf: module-stream | versionlock; apt: empty
  std::vector<std::string> crb;             ///< argv enabling CodeReady Builder / PowerTools; empty: none needed
  std::string crb_repo;                     ///< that repository's id, to check it is enabled
  std::string crb_rhui;           ///< RHEL: glob of the CRB repository id under RHUI (cloud pay-as-you-go); empty: none
  std::string archive_origin;     ///< apt: the distribution archive's Release Origin ("Ubuntu", "Debian")
  std::vector<std::string> epel;  ///< argv installing epel-release; empty: none needed
  util::Version cuda_first;       ///< the first CUDA toolkit the repository carries
  std::optional<util::Version> cuda_last;  ///< the last one, for a repository NVIDIA stopped filling
  int branch_first = 0;                    ///< the first driver branch it carries
  int branch_last = 0;                     ///< the last one; 0: still filled
  bool cudnn = true;                       ///< it carries cuDNN 9 packages
  std::string status;
  std::string source;
};

/// Driver packages for one package manager, distribution, origin, branch range and module flavour.
struct DriverRow {
  std::string manager;
  std::string distro;  ///< empty: every distribution of the manager
  std::string origin;  ///< nvidia | distro
  int first_branch = 0;
  int last_branch = 0;
  std::string modules;  ///< open | proprietary
  std::string stream;   ///< dnf module stream template
  std::string pinning_package;
  std::vector<std::string> packages;
  std::vector<std::string> compute_only;
  std::vector<std::string> verify;  ///< installed versions must start with "<branch>."
  std::string signed_modules;       ///< Ubuntu archive: the linux-modules-nvidia meta of the kernel flavour
  std::string signed_modules_abi;   ///< ... and of the running kernel's ABI (exists when signed modules do)
  std::string dkms;                 ///< ... the DKMS fallback when the running kernel has none
  std::string status;
  std::string source;
};

/// A driver branch and what kind of branch NVIDIA made it.
struct BranchRow {
  int branch = 0;
  std::string kind;         ///< lts | production | feature
  std::string end_of_life;  ///< "YYYY-MM"; "ended": end of life, no date published; "": the source gives none
  std::string status;
  std::string source;
};

/// Fabric manager packages for a manager, origin and branch range.
struct FabricRow {
  std::string manager;
  std::string origin;
  int first_branch = 0;
  int last_branch = 0;
  std::vector<std::string> packages;
  std::string status;
  std::string source;
};

/// The fabric manager service and what NVLink5 (Blackwell) systems need besides.
struct FabricService {
  std::string service;
  std::vector<std::string> nvlink5_packages;
  std::vector<std::string> nvlink5_modules;
  std::string source;
};

/// A repository signing key.
struct KeyRow {
  std::string id;
  std::string file;
  std::string fingerprint;  ///< 40 hex digits; empty when no published fingerprint is known
  std::string status;
  std::string source;
};

/// The SHA-256 of one repository's cuda-keyring package.
struct KeyringRow {
  std::string repo_dir;
  std::string arch;
  std::string sha256;
  std::string status;
  std::string source;
};

/// NVIDIA GPUs with PCI device ids in [first, last].
struct GpuRow {
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  std::string name;
  std::string compute_capability;
  bool open_only = false;
  std::string source;
};

/// Branch limits that hold for every target.
struct Limits {
  int open_first_branch = 0;
  int open_default_from = 0;
  int pre_turing_last_branch = 0;
  int compute_only_from = 0;
  std::string source;
};

/// Package-name templates for the CUDA stack and the services gpuenv enables.
struct PackageNames {
  std::string cuda_toolkit;
  std::string cuda_compat;
  std::string cudnn;
  std::string distro_cuda_toolkit;
  std::string container_toolkit;
  std::string dcgm;
  std::string dcgm_service;
  std::string persistenced_service;
  std::string source;
};

struct InstallData {
  std::string as_of;  ///< "YYYY-MM-DD": end-of-life dates are compared with it
  Repository repository;
  std::vector<TargetRow> targets;
  std::vector<DriverRow> drivers;
  std::vector<BranchRow> branches;  ///< sorted by branch
  std::vector<FabricRow> fabric;
  FabricService fabric_service;
  std::vector<KeyRow> keys;
  std::vector<KeyringRow> keyrings;
  std::vector<GpuRow> gpus;
  Limits limits;
  PackageNames packages;

  /// The target row for a distro and version (EL versions match on the major), or nullptr.
  const TargetRow* find_target(const std::string& distro, const std::string& version) const;
  /// "ubuntu 20.04, ubuntu 22.04, ..." for refusals.
  std::string supported_list() const;
  const BranchRow* find_branch(int branch) const;
  const KeyRow* find_key(const std::string& id) const;
  const KeyringRow* find_keyring(const std::string& repo_dir, const std::string& arch) const;
  const GpuRow* find_gpu(std::uint16_t device) const;
  /// True when the branch's end of life (its month) is before `as_of`'s month.
  bool past_end_of_life(const BranchRow& branch) const;
};

/// Parses the install data files; an internal Error naming the file and row when one is malformed.
util::Expected<InstallData> parse_install_data(std::span<const util::EmbeddedFile> files,
                                               const util::Overlay& overlay = {});

/// The install tables (data/install/*.toml, compiled in) and how overlay rows replace their rows.
std::vector<util::DataTable> data_tables();
/// The compiled-in tables with `overlay` merged, parsed anew (for `gpuenv data check`).
util::Expected<InstallData> load_install_data(const util::Overlay& overlay);
/// The compiled-in data (parsed once).
util::Expected<const InstallData*> builtin_install_data();

}  // namespace gpuenv::install
