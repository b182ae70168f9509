#pragma once
// Finds profiles: the shipped ones compiled into the binary, or a user's file read through System.

#include <string>
#include <vector>

#include "profile/profile.hpp"
#include "system/system.hpp"
#include "util/expected.hpp"

namespace gpuenv::profile {

/// A profile shipped with gpuenv (profiles/*.toml, embedded at build time).
struct ShippedProfile {
  std::string name;  ///< the file's stem, which equals its `name` field
  std::string text;
};

/// All shipped profiles, sorted by name.
const std::vector<ShippedProfile>& shipped_profiles();

/// True when `name_or_path` names a file (contains '/' or ends in .toml), not a shipped profile.
bool names_a_file(const std::string& name_or_path);

/// Loads `name_or_path`: a file (names_a_file) is read through `system`; anything else names a shipped profile.
/// Unknown names get a "did you mean".
util::Expected<ProfileDocument> load_profile(const std::string& name_or_path, system::System& system);

}  // namespace gpuenv::profile
