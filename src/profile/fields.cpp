#include "profile/fields.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <regex>

#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::profile {
namespace {

using util::Error;

/// The field grammars are a fixed set of patterns: compile each once, not on every validation (a 1,000-cell
/// matrix validates thousands of values). Single-threaded use only, like the parser.
bool matches(std::string_view value, const char* pattern) {
  static std::map<std::string, std::regex, std::less<>> compiled;
  auto it = compiled.find(pattern);
  if (it == compiled.end()) it = compiled.emplace(pattern, std::regex(pattern)).first;
  return std::regex_match(value.begin(), value.end(), it->second);
}

bool one_of(std::string_view value, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), value) != options.end();
}

/// A scalar field: its spec, its check and where it lives in Profile.
struct FieldEntry {
  FieldSpec spec;
  std::function<bool(std::string_view)> valid;
  std::string Profile::*member;
};

const std::vector<FieldEntry>& entries() {
  static const std::vector<FieldEntry> table = {
      {{"name", "[a-z0-9][a-z0-9._-]{0,63} (lower-case letters, digits, '.', '_', '-')", true},
       [](std::string_view v) { return matches(v, "[a-z0-9][a-z0-9._-]{0,63}"); },
       &Profile::name},
      {{"description", "any text", false}, [](std::string_view) { return true; }, &Profile::description},
      {{"os.distro", "one of ubuntu, debian, rockylinux, rhel, ubi, amzn", true},
       [](std::string_view v) {
         return one_of(v, {"ubuntu", "debian", "rockylinux", "rhel", "ubi", "amzn"});
       },
       &Profile::os_distro},
      {{"os.version", "the distribution's version, e.g. \"22.04\", \"9\", \"2023\"", true},
       [](std::string_view v) { return matches(v, "[0-9]{1,4}(\\.[0-9]{1,2})?"); },
       &Profile::os_version},
      {{"cuda.version", "X.Y.Z, as NVIDIA names releases and nvidia/cuda tags (e.g. \"12.4.1\")", true},
       [](std::string_view v) { return matches(v, "[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}"); },
       &Profile::cuda_version},
      {{"cudnn.version", "a major (\"9\") or major.minor[.patch] (\"8.9\", \"9.1.0\")", false},
       [](std::string_view v) { return matches(v, "[0-9]{1,2}(\\.[0-9]{1,3}){0,3}"); },
       &Profile::cudnn_version},
      {{"driver.min", "a driver version such as \"550.54.15\" or \"570.26\"", false},
       [](std::string_view v) { return matches(v, "[0-9]{3}(\\.[0-9]{1,3}){0,2}"); },
       &Profile::driver_min},
      {{"driver.branch", "a three-digit driver branch such as \"550\"", false},
       [](std::string_view v) { return matches(v, "[0-9]{3}"); },
       &Profile::driver_branch},
      {{"driver.modules", "one of open, proprietary", false},
       [](std::string_view v) {
         return one_of(v, {"open", "proprietary"});
       },
       &Profile::driver_modules},
      // --- install additions (docs/install.md) ---
      {{"driver.source", "one of nvidia (NVIDIA's CUDA repository), distro (the distribution's archive)", false},
       [](std::string_view v) {
         return one_of(v, {"nvidia", "distro"});
       },
       &Profile::driver_source},
      {{"install.container_toolkit", "true or false", false, true},
       [](std::string_view v) {
         return one_of(v, {"true", "false"});
       },
       &Profile::install_container_toolkit},
      {{"install.cuda_compat", "true or false", false, true},
       [](std::string_view v) {
         return one_of(v, {"true", "false"});
       },
       &Profile::install_cuda_compat},
      // --- end install additions ---
      {{"image.flavor", "one of base, runtime, devel", false},
       [](std::string_view v) {
         return one_of(v, {"base", "runtime", "devel"});
       },
       &Profile::image_flavor},
      {{"framework.name", "one of pytorch, tensorflow", false},
       [](std::string_view v) {
         return one_of(v, {"pytorch", "tensorflow"});
       },
       &Profile::framework_name},
      {{"framework.version", "X.Y or X.Y.Z (e.g. \"2.4.1\")", false},
       [](std::string_view v) { return matches(v, "[0-9]{1,2}\\.[0-9]{1,3}(\\.[0-9]{1,3})?"); },
       &Profile::framework_version},
      {{"framework.python", "X.Y (e.g. \"3.11\")", false},
       [](std::string_view v) { return matches(v, "[23]\\.[0-9]{1,2}"); },
       &Profile::framework_python},
      {{"framework.variant", "a PyTorch wheel variant cuXYZ (e.g. \"cu124\")", false},
       [](std::string_view v) { return matches(v, "cu[0-9]{2,3}"); },
       &Profile::framework_variant},
  };
  return table;
}

const FieldEntry* find_entry(std::string_view key) {
  for (const FieldEntry& entry : entries()) {
    if (entry.spec.key == key) return &entry;
  }
  return nullptr;
}

constexpr std::string_view k_array_fields[] = {"gpu.compute_capabilities", "gpu.models"};

Error unknown_field(std::string_view key) {
  std::string message = "unknown field `" + std::string(key) + "`";
  if (auto suggestion = util::closest_match(key, all_field_keys())) {
    message += "; did you mean `" + *suggestion + "`?";
  }
  return Error::input(message, "see docs/profile-format.md for the fields of schema 1");
}

}  // namespace

const std::vector<FieldSpec>& scalar_fields() {
  static const std::vector<FieldSpec> specs = [] {
    std::vector<FieldSpec> out;
    for (const FieldEntry& entry : entries()) out.push_back(entry.spec);
    return out;
  }();
  return specs;
}

std::vector<std::string> all_field_keys() {
  std::vector<std::string> keys;
  for (const FieldEntry& entry : entries()) keys.emplace_back(entry.spec.key);
  for (std::string_view key : k_array_fields) keys.emplace_back(key);
  return keys;
}

std::vector<std::string> keys_in_section(std::string_view section) {
  std::vector<std::string> keys;
  if (section.empty()) keys = {"schema", "matrix"};
  for (const std::string& key : all_field_keys()) {
    const std::size_t dot = key.find('.');
    const std::string_view key_section =
        dot == std::string::npos ? std::string_view() : std::string_view(key).substr(0, dot);
    if (key_section != section) continue;
    if (section.empty()) {
      keys.push_back(key);
    } else {
      keys.push_back(key.substr(dot + 1));
    }
  }
  if (section.empty()) {
    for (std::string_view table : {"os", "cuda", "cudnn", "driver", "image", "framework", "gpu", "install"})
      keys.emplace_back(table);
  }
  return keys;
}

bool is_boolean_field(std::string_view key) {
  const FieldEntry* entry = find_entry(key);
  return entry != nullptr && entry->spec.boolean;
}

bool is_compute_capability(std::string_view text) { return matches(text, "[1-9][0-9]?\\.[0-9]"); }

util::Expected<util::Ok> validate_field(std::string_view key, std::string_view value) {
  const FieldEntry* entry = find_entry(key);
  if (entry == nullptr) return unknown_field(key);
  if (!entry->valid(value)) {
    return Error::input("`" + std::string(key) + "` = \"" + std::string(value) + "\" is not valid",
                        "write " + std::string(entry->spec.grammar));
  }
  return util::Ok{};
}

util::Expected<util::Ok> set_field(Profile& profile, std::string_view key, std::string_view value) {
  if (auto valid = validate_field(key, value); !valid) return valid.error();
  profile.*(find_entry(key)->member) = std::string(value);
  return util::Ok{};
}

std::string get_field(const Profile& profile, std::string_view key) {
  const FieldEntry* entry = find_entry(key);
  return entry == nullptr ? std::string() : profile.*(entry->member);
}

}  // namespace gpuenv::profile
