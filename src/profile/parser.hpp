#pragma once
// Profile TOML text -> ProfileDocument. Pure: no file access.

#include <string_view>

#include "profile/profile.hpp"
#include "util/expected.hpp"

namespace gpuenv::profile {

/// Parses a schema-1 profile. `origin` names the text in messages ("profiles/x.toml"); errors read
/// "origin:line:column: message" with the fix in the remedy.
util::Expected<ProfileDocument> parse_profile(std::string_view text, std::string_view origin);

}  // namespace gpuenv::profile
