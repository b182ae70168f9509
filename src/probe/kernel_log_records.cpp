// Where kernel messages start in kernel-log text and in /dev/kmsg records (docs/security.md, "Kernel log"). A user
// can put any text into the kernel's log inside a kernel message: a file name the kernel prints when a process
// faults in a mapped file may hold line breaks, and dmesg prints it over several lines; `logger` puts lines into
// syslog files. So a message counts only from where the kernel started it, and only when the kernel wrote it.

#include "probe/kernel_log_records.hpp"

#include <cctype>
#include <optional>
#include <set>

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

/// A physical line split into its timestamp and the kernel message.
struct Prefix {
  bool recognized = false;  ///< a timestamp or log-level prefix was found
  bool kernel = true;       ///< false when the prefix names another facility or program
  std::string_view timestamp;
  std::string_view body;
};

/// Removes "[ 1234.567890] " at the start of `text`; returns the bracket's contents.
std::optional<std::string_view> take_bracket(std::string_view& text) {
  if (text.empty() || text.front() != '[') return std::nullopt;
  const std::size_t close = text.find(']');
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view inside = util::trim(text.substr(1, close - 1));
  text = util::trim(text.substr(close + 1));
  return inside;
}

/// "[ 1234.567890]" (dmesg) as opposed to "[drm]" or "[nvidia-drm]": digits and one dot only.
bool is_monotonic_stamp(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (!util::is_digit(c) && c != '.') return false;
  }
  return true;
}

/// After a syslog stamp: "<host> kernel: <message>" -> "<message>" (an inner "[ 12.3] " dropped); nullopt when the
/// tag is not `kernel:` (a program's line: `logger`, a daemon).
std::optional<std::string_view> kernel_tagged(std::string_view rest) {
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view after_host = util::trim(rest.substr(space + 1));
  if (!util::starts_with(after_host, "kernel: ")) return std::nullopt;
  after_host = util::trim(after_host.substr(7));
  std::string_view copy = after_host;
  if (const auto inner = take_bracket(copy); inner && is_monotonic_stamp(*inner)) return copy;
  return after_host;
}

/// "Jan 18 11:38:05" (syslog, kern.log, journalctl short).
bool is_syslog_stamp(std::string_view text) {
  if (text.size() < 16) return false;
  const bool month = std::isupper(static_cast<unsigned char>(text[0])) != 0 &&
                     std::islower(static_cast<unsigned char>(text[1])) != 0 &&
                     std::islower(static_cast<unsigned char>(text[2])) != 0 && text[3] == ' ';
  const bool day = (text[4] == ' ' || util::is_digit(text[4])) && util::is_digit(text[5]) && text[6] == ' ';
  const bool time = util::is_digit(text[7]) && util::is_digit(text[8]) && text[9] == ':' && util::is_digit(text[10]) &&
                    util::is_digit(text[11]) && text[12] == ':' && util::is_digit(text[13]) &&
                    util::is_digit(text[14]) && text[15] == ' ';
  return month && day && time;
}

/// "2025-01-21T04:41:44,283302+00:00" (dmesg --time-format iso, journalctl -o short-iso, rsyslog).
bool is_iso_stamp(std::string_view text) {
  return text.size() >= 19 && util::is_digit(text[0]) && util::is_digit(text[1]) && util::is_digit(text[2]) &&
         util::is_digit(text[3]) && text[4] == '-' && util::is_digit(text[5]) && util::is_digit(text[6]) &&
         text[7] == '-' && util::is_digit(text[8]) && util::is_digit(text[9]) && text[10] == 'T';
}

/// "Sun Feb 23 16:24:18 2025" (dmesg -T).
bool is_ctime_stamp(std::string_view text) {
  const auto word = [&](std::size_t at) {
    return at + 3 < text.size() && std::isupper(static_cast<unsigned char>(text[at])) != 0 &&
           std::islower(static_cast<unsigned char>(text[at + 1])) != 0 &&
           std::islower(static_cast<unsigned char>(text[at + 2])) != 0 && text[at + 3] == ' ';
  };
  return text.size() >= 20 && word(0) && word(4) && util::contains(text, ":");
}

/// dmesg --decode's "facility:level: " columns ("kern  :warn  : "): the facility and the text after them.
struct Columns {
  std::string_view facility;
  std::string_view rest;
};
std::optional<Columns> decode_columns(std::string_view text) {
  static const std::set<std::string_view> k_facilities = {
      "kern",     "user", "mail",   "daemon", "auth",   "syslog", "lpr",    "news",   "uucp",   "cron",
      "authpriv", "ftp",  "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"};
  static const std::set<std::string_view> k_levels = {"emerg", "alert",  "crit", "err",
                                                      "warn",  "notice", "info", "debug"};
  const std::size_t first = text.find(':');
  if (first == std::string_view::npos || first > 12) return std::nullopt;
  const std::size_t second = text.find(':', first + 1);
  if (second == std::string_view::npos || second > first + 12) return std::nullopt;
  const std::string_view facility = util::trim(text.substr(0, first));
  if (!k_facilities.contains(facility) || !k_levels.contains(util::trim(text.substr(first + 1, second - first - 1))))
    return std::nullopt;
  return Columns{facility, util::trim(text.substr(second + 1))};
}

/// "<4>" (dmesg -r): the syslog priority before the stamp, whose facility (prio >> 3) must be the kernel's.
std::optional<int> take_priority(std::string_view& text) {
  if (text.size() <= 3 || text.front() != '<') return std::nullopt;
  const std::size_t close = text.find('>');
  if (close == std::string_view::npos || close < 2 || close > 5) return std::nullopt;
  int prio = 0;
  for (std::size_t i = 1; i < close; ++i) {
    if (!util::is_digit(text[i])) return std::nullopt;
    prio = prio * 10 + (text[i] - '0');
  }
  text = text.substr(close + 1);
  return prio;
}

Prefix split_prefix(std::string_view line) {
  Prefix out;
  std::string_view text = util::trim(line);
  if (const auto prio = take_priority(text)) {
    out.recognized = true;
    out.kernel = (*prio >> 3) == k_kernel_facility;
  }
  if (const auto columns = decode_columns(text)) {
    text = columns->rest;
    out.recognized = true;
    out.kernel = out.kernel && columns->facility == "kern";
  }
  std::string_view copy = text;
  if (const auto stamp = take_bracket(copy)) {
    // "[ 1843.308145] NVRM: ..." or "[Sun Feb 23 16:24:18 2025] NVRM: ..." (dmesg -T); not "[drm] ...".
    if (is_monotonic_stamp(*stamp) || is_ctime_stamp(*stamp)) {
      out.recognized = true;
      out.timestamp = *stamp;
      out.body = copy;
      return out;
    }
  }
  if (is_iso_stamp(text)) {
    const std::size_t space = text.find(' ');
    out.recognized = true;
    out.timestamp = text.substr(0, space);
    const std::string_view rest = space == std::string_view::npos ? std::string_view() : util::trim(text.substr(space));
    // dmesg --time-format iso writes "…:44,283302+00:00 <message>" (a comma before the microseconds, no host);
    // syslog and journalctl write a host and a tag after theirs.
    if (util::contains(out.timestamp, ",")) {
      out.body = rest;
    } else if (const auto kernel = kernel_tagged(rest)) {
      out.body = *kernel;
    } else {
      out.body = rest;
      out.kernel = false;
    }
    return out;
  }
  if (is_syslog_stamp(text)) {
    out.recognized = true;
    out.timestamp = text.substr(0, 15);
    const std::string_view rest = util::trim(text.substr(16));
    const auto kernel = kernel_tagged(rest);
    out.body = kernel ? *kernel : rest;
    out.kernel = out.kernel && kernel.has_value();
    return out;
  }
  out.body = text;
  return out;
}

/// Adds a continuation line to `record`: its text joins the body (a leading "NVRM:" dropped).
void continue_record(LogRecord& record, std::string_view physical, std::string_view text) {
  text = util::trim(text);
  if (util::starts_with(text, "NVRM:")) text = util::trim(text.substr(5));
  if (!text.empty()) record.body += (record.body.empty() ? "" : " ") + std::string(text);
  record.raw += "\n" + std::string(physical);
}

}  // namespace

std::vector<LogRecord> records_from_text(std::string_view text) {
  std::vector<LogRecord> out;
  std::size_t number = 0;
  bool seen_prefix = false;
  for (const std::string_view physical : util::split_lines(text)) {
    ++number;
    if (util::trim(physical).empty()) continue;
    // dmesg indents the lines that follow a line break inside one message (a multi-line NVRM message, or a file
    // name a user chose): such a line never starts a message, whatever it looks like.
    const bool indented = physical.front() == ' ' || physical.front() == '\t';
    if (indented) {
      if (!out.empty()) continue_record(out.back(), physical, physical);
      continue;
    }
    const Prefix prefix = split_prefix(physical);
    // Flush left without a stamp, in a log whose messages carry stamps: a continuation too (copied logs lose the
    // indentation). Only a log with no stamps at all has bare lines as messages.
    if (!prefix.recognized && seen_prefix) {
      continue_record(out.back(), physical, prefix.body);
      continue;
    }
    seen_prefix = seen_prefix || prefix.recognized;
    LogRecord record;
    record.timestamp = std::string(prefix.timestamp);
    record.head = std::string(util::trim(prefix.body));
    record.body = record.head;
    record.raw = std::string(physical);
    record.line_number = number;
    record.prefixed = prefix.recognized;
    record.kernel = prefix.kernel;
    out.push_back(std::move(record));
  }
  return out;
}

bool kernel_line_starts_with(std::string_view line, std::string_view text) {
  if (line.empty() || line.front() == ' ' || line.front() == '\t') return false;
  const Prefix prefix = split_prefix(line);
  return prefix.kernel && util::starts_with(prefix.body, text);
}

std::vector<LogRecord> records_from_kmsg(const std::vector<KmsgRecord>& records) {
  std::vector<LogRecord> out;
  out.reserve(records.size());
  std::size_t number = 0;
  for (const KmsgRecord& kmsg : records) {
    ++number;
    const std::vector<std::string_view> lines = kmsg_message_lines(kmsg.text);
    LogRecord record;
    record.timestamp = kmsg_seconds_text(kmsg.microseconds);
    record.head = std::string(lines.front());
    record.body = record.head;
    // The record as the kernel gave it: its sequence number tells two identical messages apart.
    record.raw = std::to_string(kmsg.facility << 3 | kmsg.level) + "," + std::to_string(kmsg.sequence) + "," +
                 std::to_string(kmsg.microseconds) + "," + kmsg.flags + ";" + kmsg.text;
    record.line_number = number;
    record.prefixed = true;
    record.kernel = kmsg.from_kernel();
    for (std::size_t i = 1; i < lines.size(); ++i) {
      std::string_view more = util::trim(lines[i]);
      if (util::starts_with(more, "NVRM:")) more = util::trim(more.substr(5));
      if (!more.empty()) record.body += (record.body.empty() ? "" : " ") + std::string(more);
    }
    out.push_back(std::move(record));
  }
  return out;
}

}  // namespace gpuenv::probe
