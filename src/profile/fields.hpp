#pragma once
// The profile schema as data: each settable field with its grammar, so parsing, --set and matrix
// axes share one definition.

#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.hpp"
#include "util/expected.hpp"

namespace gpuenv::profile {

/// One scalar field of the schema ("cuda.version").
struct FieldSpec {
  std::string_view key;
  std::string_view grammar;  ///< shown in error messages, e.g. "X.Y.Z, as NVIDIA names releases"
  bool required;
  bool boolean = false;  ///< written as a TOML boolean (true / false), stored as "true" / "false"
};

/// Every scalar (string) field, in schema order.
const std::vector<FieldSpec>& scalar_fields();
/// All dotted keys a user may write, scalar or array, for "did you mean".
std::vector<std::string> all_field_keys();
/// Keys allowed inside table `section` ("" for the top level).
std::vector<std::string> keys_in_section(std::string_view section);

/// Checks `value` against the grammar of `key`; an input Error that names the field, the value and the expected form.
util::Expected<util::Ok> validate_field(std::string_view key, std::string_view value);
/// Validates and stores `value` in `profile`; an Error for an unknown key or a bad value.
util::Expected<util::Ok> set_field(Profile& profile, std::string_view key, std::string_view value);
/// The current value of a scalar field ("" when unset).
std::string get_field(const Profile& profile, std::string_view key);
/// True for a field written as a TOML boolean ("install.container_toolkit").
bool is_boolean_field(std::string_view key);
/// Checks a compute capability string "X.Y".
bool is_compute_capability(std::string_view text);
/// Why `value` is not an https URL gpuenv accepts for a mirror or a repository ("" when it is): white space, quotes,
/// control characters, credentials, a query or fragment, any scheme but https, a bad host or port. Every URL
/// source (profile [mirrors], install's --repo-url and GPUENV_*_REPO_URL) goes through it.
std::string https_url_problem(std::string_view value);

}  // namespace gpuenv::profile
