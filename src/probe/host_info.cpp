#include "probe/host_info.hpp"

#include <algorithm>
#include <cctype>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

using util::Error;
using util::Expected;

/// An os-release value without its quotes; backslash escapes are honoured inside double quotes only.
std::string unquote(std::string_view value) {
  if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
    return std::string(value.substr(1, value.size() - 2));
  }
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    std::string out;
    const std::string_view inner = value.substr(1, value.size() - 2);
    for (std::size_t i = 0; i < inner.size(); ++i) {
      if (inner[i] == '\\' && i + 1 < inner.size()) ++i;
      out += inner[i];
    }
    return out;
  }
  return std::string(value);
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

}  // namespace

OsRelease parse_os_release(std::string_view text) {
  OsRelease out;
  for (const std::string_view raw : util::split_lines(text)) {
    const std::string_view line = util::trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::size_t equals = line.find('=');
    if (equals == std::string_view::npos || equals == 0) continue;
    const std::string_view key = line.substr(0, equals);
    if (!std::all_of(key.begin(), key.end(), [](char c) {
          return std::isupper(static_cast<unsigned char>(c)) != 0 || std::isdigit(static_cast<unsigned char>(c)) != 0 ||
                 c == '_';
        })) {
      continue;
    }
    out.fields[std::string(key)] = unquote(util::trim(line.substr(equals + 1)));
  }
  const auto field = [&](const char* key) {
    const auto it = out.fields.find(key);
    return it == out.fields.end() ? std::string() : it->second;
  };
  out.id = field("ID");
  out.version_id = field("VERSION_ID");
  out.pretty_name = field("PRETTY_NAME");
  return out;
}

std::optional<long long> parse_meminfo_total_kib(std::string_view text) {
  for (const std::string_view raw : util::split_lines(text)) {
    const std::string_view line = util::trim(raw);
    if (!util::starts_with(line, "MemTotal:")) continue;
    std::string_view rest = util::trim(line.substr(9));
    rest = rest.substr(0, rest.find_first_of(" \t"));
    const auto value = util::parse_int(rest);
    if (value && *value >= 0) return value;
    return std::nullopt;
  }
  return std::nullopt;
}

int count_cpuinfo_processors(std::string_view text) {
  int count = 0;
  for (const std::string_view raw : util::split_lines(text)) {
    const std::string_view line = util::trim(raw);
    // "processor\t: 0" on x86; aarch64 also uses "processor : N". Other "processor"-prefixed keys do not count.
    if (!util::starts_with(line, "processor")) continue;
    const std::string_view rest = util::trim(line.substr(9));
    if (!rest.empty() && rest.front() == ':') ++count;
  }
  return count;
}

bool LoadedModules::contains(std::string_view name) const {
  return std::find(names.begin(), names.end(), name) != names.end();
}

LoadedModules parse_proc_modules(std::string_view text) {
  LoadedModules out;
  for (const std::string_view raw : util::split_lines(text)) {
    const std::string_view line = util::trim(raw);
    if (line.empty()) continue;
    std::size_t end = 0;
    while (end < line.size() && !is_space(line[end])) ++end;
    out.names.emplace_back(line.substr(0, end));
  }
  return out;
}

Expected<bool> parse_secure_boot_efivar(std::string_view bytes) {
  if (bytes.size() != 5) {
    return Error::input("SecureBoot efivar has " + std::to_string(bytes.size()) +
                        " bytes, expected 5 (4 attribute bytes and 1 value byte)");
  }
  const auto value = static_cast<unsigned char>(bytes[4]);
  if (value == 1) return true;
  if (value == 0) return false;
  return Error::input("SecureBoot efivar value byte is " + std::to_string(value) + ", expected 0 or 1");
}

}  // namespace gpuenv::probe
