#include <cstdio>

#include "dockerfile/dockerfile.hpp"
#include "dockerfile/doctor_stage.hpp"
#include "dockerfile/sources.hpp"
#include "dockerfile/text.hpp"
#include "profile/fields.hpp"
#include "util/strings.hpp"

namespace gpuenv::dockerfile {

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string canonical_fields(const profile::Profile& p) {
  std::string out;
  for (const profile::FieldSpec& spec : profile::scalar_fields()) {
    // Mirrors change where the bytes come from, not what the image holds.
    if (spec.key == "name" || spec.key == "description" || util::starts_with(spec.key, "mirrors.")) continue;
    const std::string value = profile::get_field(p, spec.key);
    if (!value.empty()) out += std::string(spec.key) + "=" + value + "\n";
  }
  if (!p.gpu_compute_capabilities.empty())
    out += "gpu.compute_capabilities=" + util::join(p.gpu_compute_capabilities, ",") + "\n";
  if (!p.gpu_models.empty()) out += "gpu.models=" + util::join(p.gpu_models, ",") + "\n";
  return out;
}

std::string profile_hash(const profile::Profile& p) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(canonical_fields(p))));
  return std::string("fnv1a64:") + hex;
}

std::vector<std::string> helper_images(const profile::Profile& profile, const Data& data, bool with_doctor) {
  std::vector<std::string> out{k_syntax_image};
  if (plan_python(profile, data).method == PythonPlan::Method::uv) out.push_back(data.uv.image);
  if (with_doctor) out.push_back(data.curl.image);
  return out;
}

std::string cell_file_name(const std::string& profile_name, const profile::Assignments& assignments) {
  std::string out = profile_name;
  for (const auto& [key, value] : assignments) out += "_" + key + "-" + value;
  for (char& c : out) {
    const bool safe =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!safe) c = '-';
  }
  return out + ".Dockerfile";
}

std::string unique_cell_file_name(const std::string& profile_name, const profile::Assignments& assignments,
                                  std::set<std::string>& taken) {
  const std::string plain = cell_file_name(profile_name, assignments);
  std::string file = plain;
  const std::string stem = plain.substr(0, plain.size() - std::string_view(".Dockerfile").size());
  for (int n = 2; !taken.insert(file).second; ++n) file = stem + "-" + std::to_string(n) + ".Dockerfile";
  return file;
}

std::string cell_label(const std::string& profile_name, const profile::Assignments& assignments) {
  if (assignments.empty()) return profile_name;
  std::string out;
  for (const auto& [key, value] : assignments) out += (out.empty() ? "" : ",") + key + "=" + value;
  return out;
}

std::string set_arguments(const profile::Assignments& assignments) {
  std::string out;
  for (const auto& [key, value] : assignments)
    out += (out.empty() ? "" : " ") + std::string("--set ") + key + "=" + value;
  return out;
}

std::string regenerate_arguments(const Options& options) {
  std::string out = one_line(options.profile_argument);
  for (const auto& [key, value] : options.selection) out += " --set " + one_line(key) + "=" + one_line(value);
  if (options.with_doctor) out += " --with-doctor";
  if (!options.digest_argument.empty()) out += " " + one_line(options.digest_argument);
  if (options.hashed_requirements) out += " --hashed-requirements " + one_line(options.hashed_requirements->path);
  return out;
}

}  // namespace gpuenv::dockerfile
