#include "system/child_process.hpp"

#include <unistd.h>  // environ (POSIX; declared under _GNU_SOURCE, which g++ and clang++ define for C++)

#include <algorithm>
#include <cstring>

namespace gpuenv::system {
namespace {

/// Variables a child may inherit whoever runs gpuenv: they select a network route or the GPUs, and load no code.
constexpr std::string_view k_inherited[] = {"http_proxy",
                                            "https_proxy",
                                            "no_proxy",
                                            "all_proxy",
                                            "HTTP_PROXY",
                                            "HTTPS_PROXY",
                                            "NO_PROXY",
                                            "ALL_PROXY",
                                            "CUDA_VISIBLE_DEVICES",
                                            "NVIDIA_VISIBLE_DEVICES",
                                            "CUDA_DEVICE_ORDER",
                                            "SLURM_CONF"};

/// A locale name ("C.UTF-8", "en_US.utf8", "de_DE@euro"), not a path: glibc reads a name with a slash as a directory
/// of locale files, which a user could have written.
bool is_locale_name(std::string_view value) {
  if (value.empty() || value.front() == '.') return false;
  return std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '@' || c == '-';
  });
}

bool inherited(std::string_view name, std::string_view value, bool root) {
  if (name == "LD_LIBRARY_PATH") return !root;  // a user's own children may load what the user's modules set up
  if (name == "LANG" || name.substr(0, 3) == "LC_") return is_locale_name(value);
  return std::find(std::begin(k_inherited), std::end(k_inherited), name) != std::end(k_inherited);
}

std::string joined(const std::vector<std::string>& directories) {
  std::string out;
  for (const std::string& directory : directories) out += (out.empty() ? "" : ":") + directory;
  return out;
}

}  // namespace

std::vector<std::string> program_search_path(const std::optional<std::string>& path, const DirectoryCheck& searchable) {
  std::vector<std::string> out;
  const auto add = [&out, &searchable](std::string_view directory) {
    if (directory.empty() || directory.front() != '/') return;  // "" and "bin" are the working directory's
    if (std::find(out.begin(), out.end(), directory) != out.end()) return;
    if (!searchable || searchable(std::string(directory))) out.emplace_back(directory);
  };
  if (path) {
    std::string_view rest = *path;
    while (true) {
      const std::size_t colon = rest.find(':');
      add(rest.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  for (const std::string_view directory : k_system_directories) add(directory);
  return out;
}

EnvironmentList child_environment(const EnvironmentList& parent, const std::string& home, bool root,
                                  const DirectoryCheck& searchable) {
  std::optional<std::string> path;
  EnvironmentList out;
  const auto listed = [&out](const std::string& name) {
    return std::any_of(out.begin(), out.end(), [&name](const auto& entry) { return entry.first == name; });
  };
  // The first of repeated names counts, as for getenv.
  for (const auto& [name, value] : parent) {
    if (name == "PATH" && !path) path = value;
    if (inherited(name, value, root) && !listed(name)) out.emplace_back(name, value);
  }
  out.emplace_back("PATH", joined(program_search_path(path, searchable)));
  out.emplace_back("HOME", home.empty() ? std::string("/") : home);
  return out;
}

EnvironmentList process_environment() {
  EnvironmentList out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const char* equals = std::strchr(*entry, '=');
    if (equals == nullptr) continue;
    out.emplace_back(std::string(*entry, static_cast<std::size_t>(equals - *entry)), std::string(equals + 1));
  }
  return out;
}

}  // namespace gpuenv::system
