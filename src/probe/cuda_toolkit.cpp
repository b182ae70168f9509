#include "probe/cuda_toolkit.hpp"

#include <array>
#include <cctype>
#include <map>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

using util::Error;
using util::Expected;
using util::Version;

/// The value of `#define <name> <integer>` in a C header, or nullopt.
std::optional<int> define_value(std::string_view header, std::string_view name) {
  for (const std::string_view raw : util::split_lines(header)) {
    std::string_view line = util::trim(raw);
    if (!util::starts_with(line, "#")) continue;
    line = util::trim(line.substr(1));  // "#  define" is legal C
    if (!util::starts_with(line, "define")) continue;
    line = util::trim(line.substr(6));
    if (!util::starts_with(line, name)) continue;
    line = line.substr(name.size());
    if (line.empty() || (line.front() != ' ' && line.front() != '\t')) continue;  // CUDNN_MAJOR vs CUDNN_MAJORX
    std::string_view number = util::trim(line);
    number = number.substr(0, number.find_first_of(" \t/"));  // a trailing comment
    if (const auto value = util::parse_int(number); value && *value >= 0 && *value < 1000000) {
      return static_cast<int>(*value);
    }
  }
  return std::nullopt;
}

Expected<Version> header_version(std::string_view header, const std::array<std::string_view, 3>& names,
                                 std::string_view what) {
  std::vector<int> parts;
  for (const std::string_view name : names) {
    const auto value = define_value(header, name);
    if (!value) return Error::input(std::string(what) + ": no `#define " + std::string(name) + " <number>`");
    parts.push_back(*value);
  }
  return Version(parts);
}

// version.json is a two-level object: {"cuda": {"name": "...", "version": "12.6.3"}, "libcublas": {...}}.
// A small strict reader keeps JSON libraries out of probe (ARCHITECTURE.md: nlohmann-json lives in report/cli);
// it keeps string members of second-level objects and validates, then ignores, everything else.
using JsonMembers = std::map<std::string, std::string>;
using JsonObject = std::map<std::string, JsonMembers>;

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : m_text(text) {}

  /// The top-level object, or nullopt for anything that is not exactly one valid JSON object.
  std::optional<JsonObject> document() {
    JsonObject out;
    skip_space();
    if (!object(0, &out, nullptr)) return std::nullopt;
    skip_space();
    if (m_pos != m_text.size()) return std::nullopt;
    return out;
  }

 private:
  static constexpr int k_max_depth = 64;

  void skip_space() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])) != 0) ++m_pos;
  }

  bool take(char c) {
    skip_space();
    if (m_pos < m_text.size() && m_text[m_pos] == c) {
      ++m_pos;
      return true;
    }
    return false;
  }

  /// A string; escapes other than \uXXXX are decoded, \u escapes are kept as written (never needed here).
  std::optional<std::string> string() {
    if (!take('"')) return std::nullopt;
    std::string out;
    while (m_pos < m_text.size()) {
      const char c = m_text[m_pos++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (m_pos >= m_text.size()) return std::nullopt;
      const char e = m_text[m_pos++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u':
          out += "\\u";
          break;
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        default:
          return std::nullopt;
      }
    }
    return std::nullopt;
  }

  /// Any JSON value; `text` receives it when it is a string, `members`/`top` when it is an object at that level.
  bool value(int depth, std::string* text, JsonMembers* members) {
    skip_space();
    if (m_pos >= m_text.size() || depth > k_max_depth) return false;
    const char c = m_text[m_pos];
    if (c == '"') {
      auto parsed = string();
      if (parsed && text != nullptr) *text = std::move(*parsed);
      return parsed.has_value();
    }
    if (c == '{') return object(depth, nullptr, members);
    if (c == '[') {
      ++m_pos;
      if (take(']')) return true;
      do {
        if (!value(depth + 1, nullptr, nullptr)) return false;
      } while (take(','));
      return take(']');
    }
    for (const std::string_view word : {"true", "false", "null"}) {
      if (m_text.substr(m_pos, word.size()) == word) {
        m_pos += word.size();
        return true;
      }
    }
    const std::size_t start = m_pos;
    while (m_pos < m_text.size() && (std::isdigit(static_cast<unsigned char>(m_text[m_pos])) != 0 ||
                                     std::string_view("+-.eE").find(m_text[m_pos]) != std::string_view::npos)) {
      ++m_pos;
    }
    return m_pos > start;
  }

  /// An object; at depth 0 its object members go to `top`, at depth 1 its string members go to `members`.
  bool object(int depth, JsonObject* top, JsonMembers* members) {
    if (!take('{')) return false;
    if (take('}')) return true;
    do {
      skip_space();
      auto key = string();
      if (!key || !take(':')) return false;
      std::string text;
      JsonMembers nested;
      skip_space();
      const bool is_string = m_pos < m_text.size() && m_text[m_pos] == '"';
      if (!value(depth + 1, &text, top != nullptr ? &nested : nullptr)) return false;
      if (top != nullptr && !is_string) (*top)[*key] = std::move(nested);
      if (members != nullptr && is_string) (*members)[*key] = std::move(text);
    } while (take(','));
    return take('}');
  }

  std::string_view m_text;
  std::size_t m_pos = 0;
};

std::optional<JsonObject> parse_json_object(std::string_view text) { return JsonReader(text).document(); }

}  // namespace

Expected<CudaVersionJson> parse_cuda_version_json(std::string_view json) {
  const std::optional<JsonObject> document = parse_json_object(json);
  if (!document) return Error::input("CUDA version.json is not a JSON object");
  CudaVersionJson out;
  for (const auto& [key, entry] : *document) {
    const auto version = entry.find("version");
    if (version == entry.end()) continue;
    const auto parsed = Version::parse(version->second);
    if (!parsed) continue;
    if (key == "cuda") {
      out.version = *parsed;
    } else {
      out.components[key] = *parsed;
    }
    if (const auto name = entry.find("name"); name != entry.end()) out.names[key] = name->second;
  }
  if (out.version.empty()) return Error::input("CUDA version.json has no \"cuda\": {\"version\": ...}");
  return out;
}

Expected<Version> parse_cuda_version_txt(std::string_view text) {
  for (const std::string_view raw : util::split_lines(text)) {
    const std::string_view line = util::trim(raw);
    if (!util::starts_with(line, "CUDA Version ")) continue;
    if (const auto version = Version::parse(util::trim(line.substr(13)))) return *version;
  }
  return Error::input("CUDA version.txt has no \"CUDA Version <x.y.z>\" line");
}

Expected<Version> parse_cudnn_header(std::string_view header) {
  return header_version(header, {"CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"}, "cuDNN header");
}

Expected<Version> parse_nccl_header(std::string_view header) {
  return header_version(header, {"NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"}, "nccl.h");
}

}  // namespace gpuenv::probe
