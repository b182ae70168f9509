#pragma once
// Records of the kernel's log buffer as /dev/kmsg gives them: a pure parser, for doctor's and smoke's one-shot reads
// and for a reader that follows the log. The format is the kernel's ABI (Documentation/ABI/testing/dev-kmsg;
// kernel/printk/printk.c info_print_ext_header and msg_add_ext_text):
//   "<prio>,<seq>,<usec>,<flags>[,<more>...];<text>\n" then optional " KEY=value\n" dictionary lines,
// where prio = facility << 3 | level, and the text has every byte below 0x20, from 0x7f up, and '\' escaped as
// "\xNN", so a record is always one line and a line break inside a message reads "\x0a".

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuenv::probe {

/// The syslog facility of the kernel's own messages. A process that writes to /dev/kmsg gets LOG_USER (1) or the
/// facility it asks for, never this one (dev-kmsg: "It is not possible to inject messages from userspace with the
/// facility number LOG_KERN (0)"; printk.c devkmsg_write keeps facility 1 when the prefix asks for 0).
inline constexpr int k_kernel_facility = 0;

/// One record.
struct KmsgRecord {
  int facility = 0;                ///< prio >> 3
  int level = 0;                   ///< prio & 7 (0 emerg ... 7 debug)
  std::uint64_t sequence = 0;      ///< the record's 64-bit sequence number
  std::uint64_t microseconds = 0;  ///< monotonic time since boot
  std::string flags;               ///< "-", or "c" for a fragment (a hint only: NVIDIA's messages all carry "c")
  std::string text;                ///< the message, escaped as the kernel escaped it
  std::vector<std::string> dictionary;  ///< "SUBSYSTEM=pci", "DEVICE=+pci:0000:3b:00.0", ...

  /// True when the kernel itself logged the record.
  bool from_kernel() const { return facility == k_kernel_facility; }
};

/// The header and text of one record line (without its dictionary lines); nullopt when it is not one.
std::optional<KmsgRecord> parse_kmsg_record(std::string_view line);

/// Every record of a /dev/kmsg read, with the dictionary lines attached to the record before them.
struct KmsgParse {
  std::vector<KmsgRecord> records;
  std::size_t malformed = 0;  ///< lines that are neither a record nor a dictionary line
};
KmsgParse parse_kmsg(std::string_view text);

/// The lines of an escaped message: split at its escaped line breaks ("\x0a"). The first is where the message
/// starts; the rest continue it, whatever they look like.
std::vector<std::string_view> kmsg_message_lines(std::string_view escaped_text);

/// "12.345678" (dmesg's seconds since boot) for a record's microseconds.
std::string kmsg_seconds_text(std::uint64_t microseconds);

}  // namespace gpuenv::probe
