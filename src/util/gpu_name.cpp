#include "util/gpu_name.hpp"

#include <cctype>

namespace gpuenv::util {

namespace {

/// Where " mig <N>g.<M>gb" (or "<N>c.<N>g.<M>gb") starts in a normalized name, else npos.
std::size_t mig_suffix(const std::string& name) {
  const std::size_t at = name.rfind(" mig ");
  if (at == std::string::npos) return at;
  const std::string profile = name.substr(at + 5);
  const bool shaped = !profile.empty() && std::isdigit(static_cast<unsigned char>(profile[0])) != 0 &&
                      profile.find('.') != std::string::npos && profile.find("gb") != std::string::npos;
  return shaped ? at : std::string::npos;
}

}  // namespace

std::string normalized_gpu_name(std::string_view name) {
  std::string out;
  for (const char raw : name) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(raw)));
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (space && (out.empty() || out.back() == ' ')) continue;
    out.push_back(space ? ' ' : c);
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  for (const std::string_view vendor : {"nvidia ", "tesla "}) {
    if (out.rfind(vendor, 0) == 0) out.erase(0, vendor.size());
  }
  return out;
}

std::optional<std::string> gpu_mig_profile(std::string_view device_name) {
  const std::string name = normalized_gpu_name(device_name);
  const std::size_t at = mig_suffix(name);
  if (at == std::string::npos) return std::nullopt;
  return name.substr(at + 5);
}

std::string gpu_name_without_mig(std::string_view device_name) {
  std::string name = normalized_gpu_name(device_name);
  if (const std::size_t at = mig_suffix(name); at != std::string::npos) name.erase(at);
  return name;
}

bool gpu_name_matches(std::string_view device_name, std::span<const std::string> names) {
  const std::string wanted = gpu_name_without_mig(device_name);
  if (wanted.empty()) return false;
  for (const std::string& name : names) {
    if (!name.empty() && normalized_gpu_name(name) == wanted) return true;
  }
  return false;
}

}  // namespace gpuenv::util
