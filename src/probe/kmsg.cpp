#include "probe/kmsg.hpp"

#include <cstdio>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

/// A non-negative decimal of at most 20 digits, all of `text`.
std::optional<std::uint64_t> decimal(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace

std::optional<KmsgRecord> parse_kmsg_record(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  // The header holds digits, commas, flags and "caller=T123": the first ';' ends it (the text may hold more).
  const std::size_t semicolon = line.find(';');
  if (semicolon == std::string_view::npos) return std::nullopt;
  const std::vector<std::string_view> fields = util::split(line.substr(0, semicolon), ',');
  if (fields.size() < 3) return std::nullopt;
  const auto prio = decimal(fields[0]);
  const auto sequence = decimal(fields[1]);
  const auto microseconds = decimal(fields[2]);
  // prio is (facility << 3) | level with an 8-bit facility (dev-kmsg).
  if (!prio || *prio > 0x7ff || !sequence || !microseconds) return std::nullopt;
  KmsgRecord record;
  record.facility = static_cast<int>(*prio >> 3);
  record.level = static_cast<int>(*prio & 7);
  record.sequence = *sequence;
  record.microseconds = *microseconds;
  record.flags = fields.size() > 3 ? std::string(fields[3]) : std::string("-");
  record.text = std::string(line.substr(semicolon + 1));
  return record;
}

KmsgParse parse_kmsg(std::string_view text) {
  KmsgParse out;
  for (const std::string_view line : util::split_lines(text)) {
    if (line.empty()) continue;
    // " KEY=value": a dictionary line of the record before it (dev-kmsg: "A line starting with ' ', is a
    // continuation line, adding key/value pairs to the log message").
    if (line.front() == ' ') {
      if (out.records.empty()) {
        ++out.malformed;
      } else {
        out.records.back().dictionary.emplace_back(line.substr(1));
      }
      continue;
    }
    if (auto record = parse_kmsg_record(line)) {
      out.records.push_back(std::move(*record));
    } else {
      ++out.malformed;
    }
  }
  return out;
}

std::vector<std::string_view> kmsg_message_lines(std::string_view escaped_text) {
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t at = escaped_text.find("\\x0a");
    out.push_back(escaped_text.substr(0, at));
    if (at == std::string_view::npos) break;
    escaped_text.remove_prefix(at + 4);
  }
  return out;
}

std::string kmsg_seconds_text(std::uint64_t microseconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%llu.%06llu", static_cast<unsigned long long>(microseconds / 1000000),
                static_cast<unsigned long long>(microseconds % 1000000));
  return buffer;
}

}  // namespace gpuenv::probe
