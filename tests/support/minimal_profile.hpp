#pragma once
// The smallest valid profile as TOML text, for tests that parse or write a profile of their own.

#include <string>

namespace gpuenv::testing {

/// The required keys only (docs/profile-format.md), seven lines: `schema = 1`, `name = "t"`, [os] distro and version,
/// [cuda] version. Tests append tables to it or replace lines in it.
inline std::string minimal_profile(const std::string& distro = "ubuntu", const std::string& version = "22.04",
                                   const std::string& cuda = "12.4.1") {
  return "schema = 1\nname = \"t\"\n[os]\ndistro = \"" + distro + "\"\nversion = \"" + version +
         "\"\n[cuda]\nversion = \"" + cuda + "\"\n";
}

}  // namespace gpuenv::testing
