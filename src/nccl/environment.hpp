#pragma once
// The NCCL settings the in-process all-reduce (allreduce.hpp) runs with: NCCL reads its parameters from the process
// environment, and before the first read it adds the lines of its configuration files to the environment without
// overwriting a variable already set (NVIDIA/nccl@5067397 src/misc/param.cc initEnvFunc/setEnvFile, setenv(name,
// value, 0) in src/os/linux.cc:107): NCCL_CONF_FILE when set (NCCL 2.23 on), else ~/.nccl.conf; then /etc/nccl.conf.
// So the environment wins over the user's file, which wins over /etc/nccl.conf. These are the pure readers of that
// (the files' text, the settings in effect and what each can do to the sweep) and the one gatherer through System.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "system/system.hpp"

namespace gpuenv::nccl {

/// What a setting can do to the single-node all-reduce.
enum class SettingEffect {
  breaks_init,       ///< can make ncclCommInitAll fail (bootstrap interface, rendezvous address, forced network...)
  lowers_bandwidth,  ///< restricts or retunes what NCCL uses between the GPUs (transports, algorithms, channels...)
  loads_code,        ///< makes NCCL dlopen a library into this (root) process
  writes_file,       ///< makes NCCL create or overwrite a file the setting names
};

/// One thing a setting does, and where NCCL documents it.
struct SettingNote {
  SettingEffect effect = SettingEffect::lowers_bandwidth;
  std::string why;     ///< "disables the P2P transport (NVLink or PCIe between the GPUs)"
  std::string source;  ///< NCCL's documentation or source
};

/// One NCCL_* variable in effect for NCCL.
struct NcclSetting {
  std::string name;
  std::string value;
  std::string origin;              ///< "environment", or the configuration file that set it
  std::vector<SettingNote> notes;  ///< empty: reported only (it cannot change this sweep's result, or is not known)

  bool has(SettingEffect effect) const;
};

/// A configuration file NCCL reads, with its text (absent files are left out).
struct NcclConfigFile {
  std::string path;
  std::string text;
};

/// The files NCCL reads, in its order: `conf_file` (NCCL_CONF_FILE, when set and not empty, from NCCL 2.23 on;
/// `version_code` 0 means unknown and is taken as a current NCCL) else `home`/.nccl.conf, then /etc/nccl.conf.
std::vector<std::string> nccl_config_paths(const std::optional<std::string>& conf_file,
                                           const std::optional<std::string>& home, int version_code);

/// The NAME=value lines of a configuration file as NCCL's setEnvFile reads them: the line's end (LF, then CR) cut,
/// lines starting with '#' skipped, the name up to the first '=' as written (no trimming), the value the rest; lines
/// without '=' or with an empty name skipped. A name given twice keeps its first value (setenv does not overwrite).
std::vector<std::pair<std::string, std::string>> parse_nccl_config(std::string_view text);

/// What `name`=`value` can do to the sweep (table-driven; NCCL's own rules for each value, e.g. NCCL_P2P_DISABLE
/// disables P2P only at 1). Empty for a variable that cannot change a single-node all-reduce (NCCL_IB_HCA, ...).
std::vector<SettingNote> classify_nccl_setting(std::string_view name, std::string_view value);

/// The NCCL_* settings in effect: the environment's (the first of a repeated name, as getenv), then each file's in
/// `files` order for names not set yet, each classified. NCCL_VERSION, which the CUDA container images set to the
/// libnccl2 package version and NCCL never reads, is left out.
std::vector<NcclSetting> nccl_settings(const std::vector<std::pair<std::string, std::string>>& environment,
                                       const std::vector<NcclConfigFile>& files);

/// "NCCL_P2P_DISABLE=1 (environment), NCCL_SOCKET_IFNAME==eth0 (/etc/nccl.conf)", each value cut at 120 bytes; with
/// `reasons_of`, each setting's reasons of that effect after its origin ("(environment: disables the P2P
/// transport ...)").
std::string describe_settings(const std::vector<const NcclSetting*>& settings, std::optional<SettingEffect> reasons_of);

/// The settings among `settings` that have `effect`.
std::vector<const NcclSetting*> settings_with(const std::vector<NcclSetting>& settings, SettingEffect effect);

/// What to run without them: "unset NCCL_P2P_DISABLE in the environment; remove NCCL_ALGO from /etc/nccl.conf".
std::string without_settings(const std::vector<const NcclSetting*>& settings);

/// The settings NCCL will run with, read through `system`: the environment's NCCL_* variables and the files of
/// nccl_config_paths (NCCL_CONF_FILE and HOME from the environment; NCCL 2.30 takes ~ from HOME, older versions from
/// the password database, which System does not read: a root whose HOME differs is read at HOME).
std::vector<NcclSetting> read_nccl_settings(system::System& system, int version_code);

}  // namespace gpuenv::nccl
