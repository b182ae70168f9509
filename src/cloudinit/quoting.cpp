#include "cloudinit/quoting.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace gpuenv::cloudinit {

std::string sh_quote(std::string_view value) {
  std::string out = "'";
  for (const char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string base64(std::string_view bytes) {
  static constexpr std::string_view k_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    unsigned chunk = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      chunk = (chunk << 8U) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
    }
    for (std::size_t k = 0; k < 4; ++k) {
      out += k <= n ? k_alphabet[(chunk >> (18U - 6U * k)) & 0x3FU] : '=';
    }
  }
  return out;
}

bool literal_block_safe(std::string_view text) {
  const bool printable =
      std::all_of(text.begin(), text.end(), [](char c) { return c == '\n' || (c >= 0x20 && c < 0x7f); });
  if (!printable || text.find_first_not_of('\n') == std::string_view::npos) return false;
  for (const std::string_view line : util::split(text, '\n')) {
    if (!line.empty() && line.find_first_not_of(' ') == std::string_view::npos) return false;
  }
  return true;
}

std::string yaml_content(std::string_view text, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (!literal_block_safe(text)) return pad + "encoding: b64\n" + pad + "content: " + base64(text) + "\n";

  std::size_t trailing = 0;
  while (trailing < text.size() && text[text.size() - 1 - trailing] == '\n') ++trailing;
  // Explicit indentation (2 more than the key) keeps a first line that starts with spaces; the chomping indicator
  // keeps exactly the text's trailing newlines: none (-), one (clip), several (+).
  const char* chomp = trailing == 0 ? "-" : (trailing == 1 ? "" : "+");
  std::string out = pad + "content: |2" + chomp + "\n";
  const std::string_view body = text.substr(0, text.size() - trailing);
  if (!body.empty()) {
    for (const std::string_view line : util::split(body, '\n')) {
      out += line.empty() ? std::string() : pad + "  " + std::string(line);
      out += "\n";
    }
  }
  for (std::size_t i = 1; i < trailing; ++i) out += "\n";
  return out;
}

std::string comment_safe(std::string_view text) {
  std::string out(text);
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c < 0x20 || c >= 0x7f; }, '?');
  return out;
}

}  // namespace gpuenv::cloudinit
