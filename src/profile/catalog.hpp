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

/// Loads `name_or_path`: a path (contains '/' or ends in .toml) is read through `system`; anything
/// else names a shipped profile. Unknown names get a "did you mean".
util::Expected<ProfileDocument> load_profile(const std::string& name_or_path, system::System& system);

}  // namespace gpuenv::profile
