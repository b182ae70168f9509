#pragma once
// The kernel-log window doctor judges (--since): since the last boot by default, or the last N seconds. Pure
// functions over the log's text; the collector supplies the clock and the uptime.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuenv::probe {

/// The part of a log that falls in the window, and how it was chosen (for the kernel-log source in findings).
struct LogWindow {
  std::string text;
  std::string how;  ///< "since the last boot", "since 2026-12-01T03:00:00Z", "whole file: no boot line", ...
};

/// Seconds since boot of a `dmesg` line ("[  13.482051] NVRM: ..."), nullopt without one.
std::optional<double> dmesg_seconds(std::string_view line);

/// Unix seconds (UTC) of a syslog line: RFC 3339 ("2026-12-01T03:01:13.482+00:00 host kernel: ...") or BSD
/// ("Dec  1 03:01:13 host kernel: ...", no year or zone: read as UTC in `year`). nullopt without one.
std::optional<std::int64_t> syslog_seconds(std::string_view line, int year);

/// dmesg output from `since_uptime` seconds after boot on (lines without a stamp follow the line before).
std::string dmesg_since(std::string_view text, double since_uptime);

/// A kernel log file from its last boot on: after the last kernel message that starts with the "Linux version"
/// banner the kernel prints at boot (the `kernel:` tag, flush left); the whole text when it has none. A line that
/// merely contains the banner's words does not count.
LogWindow log_file_since_boot(std::string_view text);

/// A kernel log file from `since_unix` on, by each line's timestamp (BSD stamps read in the year of `now_unix`,
/// or the year before when that would put them in the future); unstamped lines follow the line before.
LogWindow log_file_since(std::string_view text, std::int64_t since_unix, std::int64_t now_unix);

/// "2026-12-01T03:00:00Z" for Unix seconds.
std::string iso_utc(std::int64_t unix_seconds);

/// The year (UTC) of Unix seconds.
int utc_year(std::int64_t unix_seconds);

}  // namespace gpuenv::probe
