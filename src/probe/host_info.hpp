#pragma once
// Host facts from /etc/os-release, /proc and efivars, parsed from their text (or bytes).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.hpp"

namespace gpuenv::probe {

/// /etc/os-release (os-release(5)).
struct OsRelease {
  std::string id;                             ///< "ubuntu", "debian", "rhel"; empty when missing
  std::string version_id;                     ///< "22.04"; empty when missing (rolling distributions)
  std::string pretty_name;                    ///< "Ubuntu 22.04.4 LTS"
  std::map<std::string, std::string> fields;  ///< every KEY=value, unquoted and unescaped
};

/// Parses os-release: KEY=value lines, values bare, "double" or 'single' quoted; comments and junk lines skipped.
OsRelease parse_os_release(std::string_view text);

/// MemTotal from /proc/meminfo in KiB ("MemTotal: 24683656 kB"); nullopt when missing or unreadable.
std::optional<long long> parse_meminfo_total_kib(std::string_view text);

/// The number of "processor : N" lines in /proc/cpuinfo (logical CPUs; 0 when there are none).
int count_cpuinfo_processors(std::string_view text);

/// /proc/modules: the names of the loaded kernel modules.
struct LoadedModules {
  std::vector<std::string> names;  ///< the first field of each line, in file order

  /// True when module `name` is loaded.
  bool contains(std::string_view name) const;
  /// The proprietary or open NVIDIA kernel module ("nvidia").
  bool nvidia() const { return contains("nvidia"); }
  /// The nouveau driver, which keeps nvidia.ko from binding the GPU.
  bool nouveau() const { return contains("nouveau"); }
};

/// Parses /proc/modules (proc(5): "name size refcount dependencies state address [taint]" per line).
LoadedModules parse_proc_modules(std::string_view text);

/// Secure Boot state from the bytes of /sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c:
/// 4 attribute bytes, then one value byte (1 enabled, 0 disabled). An Error for any other length or value.
util::Expected<bool> parse_secure_boot_efivar(std::string_view bytes);

}  // namespace gpuenv::probe
