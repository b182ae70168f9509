#include "util/host_text.hpp"

#include <algorithm>
#include <cstdio>

namespace gpuenv::util {
namespace {

constexpr std::string_view k_replacement = "\xEF\xBF\xBD";  // U+FFFD

/// The length of the well-formed UTF-8 sequence at `i`, or 0 when the byte there does not start one.
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto at = [&text](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char byte = at(i);
  // The lead byte fixes the length and the range of the second byte (RFC 3629 section 4); later bytes are 0x80-0xBF.
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (byte < 0x80) {
    return 1;
  } else if (byte >= 0xC2 && byte <= 0xDF) {
    length = 2;
  } else if (byte >= 0xE0 && byte <= 0xEF) {
    length = 3;
    if (byte == 0xE0) low = 0xA0;
    if (byte == 0xED) high = 0x9F;
  } else if (byte >= 0xF0 && byte <= 0xF4) {
    length = 4;
    if (byte == 0xF0) low = 0x90;
    if (byte == 0xF4) high = 0x8F;
  }
  if (length == 0 || i + length > text.size()) return 0;
  if (at(i + 1) < low || at(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return length;
}

std::string escaped(unsigned char c) {
  if (c == '\n') return "\\n";
  if (c == '\t') return "\\t";
  if (c == '\r') return "\\r";
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\x%02X", c);
  return buffer;
}

std::string plural(std::size_t count, std::string_view one, std::string_view many) {
  return std::to_string(count) + " " + std::string(count == 1 ? one : many);
}

}  // namespace

std::string TextRepairs::describe() const {
  std::string out;
  const auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (invalid_utf8 > 0) add(plural(invalid_utf8, "invalid UTF-8 byte", "invalid UTF-8 bytes") + " replaced by U+FFFD");
  if (control > 0) add(plural(control, "control character", "control characters") + " escaped");
  if (truncated > 0) add(plural(truncated, "over-long string", "over-long strings") + " cut");
  return out;
}

std::string clean_host_text(std::string_view text, const CleanOptions& options, TextRepairs& repairs) {
  std::string out;
  out.reserve(std::min(text.size(), options.max_bytes) + k_cut_marker.size());
  std::size_t i = 0;
  while (i < text.size()) {
    std::string piece;
    const std::size_t length = sequence_length(text, i);
    const auto byte = static_cast<unsigned char>(text[i]);
    if (length == 0) {
      piece = k_replacement;
      ++repairs.invalid_utf8;
      ++i;
    } else if (options.escape_control && (byte < 0x20 || byte == 0x7F)) {
      piece = escaped(byte);
      ++repairs.control;
      ++i;
    } else {
      piece.assign(text, i, length);
      i += length;
    }
    if (out.size() + piece.size() > options.max_bytes) {
      out += k_cut_marker;
      ++repairs.truncated;
      return out;
    }
    out += piece;
  }
  return out;
}

std::string shell_inert(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (k_shell_quote_breakers.find(c) != std::string_view::npos) continue;
    const auto byte = static_cast<unsigned char>(c);
    out += byte < 0x20 || byte == 0x7F ? ' ' : c;
  }
  return out;
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = sequence_length(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  // Step back over continuation bytes (10xxxxxx) to the start of the character that would be split.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace gpuenv::util
