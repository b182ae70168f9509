#include "profile/catalog.hpp"

#include <algorithm>

#include "profile/parser.hpp"
#include "util/embedded_file.hpp"
#include "util/strings.hpp"

namespace gpuenv::profile {

std::span<const util::EmbeddedFile> embedded_profiles();  // generated from profiles/*.toml

const std::vector<ShippedProfile>& shipped_profiles() {
  static const std::vector<ShippedProfile> profiles = [] {
    std::vector<ShippedProfile> out;
    for (const util::EmbeddedFile& file : embedded_profiles()) {
      std::string name(file.name);
      if (util::ends_with(name, ".toml")) name.resize(name.size() - 5);
      out.push_back({name, std::string(file.contents)});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
  }();
  return profiles;
}

bool names_a_file(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos || util::ends_with(name_or_path, ".toml");
}

util::Expected<ProfileDocument> load_profile(const std::string& name_or_path, system::System& system) {
  if (names_a_file(name_or_path)) {
    auto text = system.read_file(name_or_path, system::FileKind::profile);
    // A read that failed for a reason with its own fix (a device, a file over the limit) keeps that fix.
    if (!text)
      return util::Error::input(text.error().message,
                                text.error().remedy.empty()
                                    ? "check the path, or give a shipped profile's name (gpuenv profile list)"
                                    : text.error().remedy);
    return parse_profile(*text, name_or_path);
  }
  std::vector<std::string> names;
  for (const ShippedProfile& shipped : shipped_profiles()) {
    if (shipped.name == name_or_path) return parse_profile(shipped.text, "builtin:" + shipped.name);
    names.push_back(shipped.name);
  }
  std::string message = "no shipped profile named `" + name_or_path + "`";
  if (auto suggestion = util::closest_match(name_or_path, names)) message += "; did you mean `" + *suggestion + "`?";
  return util::Error::input(message, "run `gpuenv profile list`, or give a path to a .toml file");
}

}  // namespace gpuenv::profile
