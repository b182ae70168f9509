#pragma once
// Kernel-log text and /dev/kmsg records turned into logical records: where each kernel message starts, its
// continuation lines, and whether the kernel wrote it. Internal to probe (xid.cpp matches events on them).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "probe/kmsg.hpp"

namespace gpuenv::probe {

/// One kernel message: the line it starts with and the continuation lines that belong to it.
struct LogRecord {
  std::string timestamp;
  std::string head;  ///< the message's first line, from its start (event patterns match here only)
  std::string body;  ///< head + continuation lines, joined with one space, their "NVRM:" dropped
  std::string raw;   ///< the physical line(s), continuation lines joined with '\n' (kmsg: the escaped record)
  std::size_t line_number = 0;
  bool prefixed = false;  ///< a timestamp or level prefix was recognised (text logs)
  bool kernel = true;     ///< written by the kernel, as far as the source can tell (never a foreign facility/tag)
};

/// Records of kernel-log text: dmesg (plain, -T, -r, --decode, --time-format iso), syslog files and journalctl
/// output. A line that starts with white space continues the record before it (dmesg indents the lines after a
/// line break inside a message); once a prefixed line has been seen, so does an unprefixed flush-left line. A
/// syslog line is the kernel's only with the tag `kernel:`; a level prefix or --decode column of another facility
/// marks a record as not the kernel's.
std::vector<LogRecord> records_from_text(std::string_view text);

/// True when the physical `line` starts a message the kernel wrote (flush left, with a prefix of the kernel
/// facility or the `kernel:` tag, or no prefix at all) whose text begins with `text` ("Linux version ").
bool kernel_line_starts_with(std::string_view line, std::string_view text);

/// Records of /dev/kmsg: the kernel's own facility only counts as kernel; a message starts at the record's text and
/// every escaped line break in it starts a continuation line.
std::vector<LogRecord> records_from_kmsg(const std::vector<KmsgRecord>& records);

}  // namespace gpuenv::probe
