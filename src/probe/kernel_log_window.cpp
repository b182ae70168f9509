#include "probe/kernel_log_window.hpp"

#include <array>
#include <cstdio>

#include "probe/kernel_log_records.hpp"
#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct Civil {
  std::int64_t year;
  unsigned month;
  unsigned day;
};

Civil civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

/// `count` decimal digits at `at`, or -1.
int digits(std::string_view text, std::size_t at, std::size_t count) {
  if (at + count > text.size()) return -1;
  int value = 0;
  for (std::size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

/// "HH:MM:SS" at `at` -> seconds into the day, or -1.
int time_of_day(std::string_view text, std::size_t at) {
  const int h = digits(text, at, 2), m = digits(text, at + 3, 2), s = digits(text, at + 6, 2);
  if (h < 0 || m < 0 || s < 0 || text[at + 2] != ':' || text[at + 5] != ':' || h > 23 || m > 59 || s > 60) return -1;
  return h * 3600 + m * 60 + s;
}

std::optional<std::int64_t> rfc3339_seconds(std::string_view line) {
  const int y = digits(line, 0, 4), mo = digits(line, 5, 2), d = digits(line, 8, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || line[4] != '-' || line[7] != '-' || line.size() < 19 ||
      (line[10] != 'T' && line[10] != ' '))
    return std::nullopt;
  const int tod = time_of_day(line, 11);
  if (tod < 0) return std::nullopt;
  std::int64_t seconds = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + tod;
  std::size_t at = 19;
  if (at < line.size() && line[at] == '.') {
    ++at;
    while (at < line.size() && line[at] >= '0' && line[at] <= '9') ++at;
  }
  if (at < line.size() && (line[at] == '+' || line[at] == '-')) {
    const int oh = digits(line, at + 1, 2), om = digits(line, at + 4, 2);
    if (oh >= 0 && om >= 0) seconds -= (line[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  }
  return seconds;
}

std::optional<std::int64_t> bsd_seconds(std::string_view line, int year) {
  static constexpr std::array<std::string_view, 12> k_months = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (line.size() < 15 || line[3] != ' ') return std::nullopt;
  unsigned month = 0;
  for (unsigned i = 0; i < k_months.size(); ++i) {
    if (line.substr(0, 3) == k_months[i]) month = i + 1;
  }
  if (month == 0) return std::nullopt;
  const int day = line[4] == ' ' ? digits(line, 5, 1) : digits(line, 4, 2);
  const int tod = line[6] == ' ' ? time_of_day(line, 7) : -1;
  if (day < 1 || tod < 0) return std::nullopt;
  return days_from_civil(year, month, static_cast<unsigned>(day)) * 86400 + tod;
}

/// The banner the kernel prints first at boot (init/version.c linux_banner: "Linux version %s ..."): a kernel
/// message that starts with it, not any line that contains it (a user's `logger "] Linux version "` after a real
/// Xid would otherwise hide it from --since boot).
bool is_boot_banner(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return kernel_line_starts_with(line, "Linux version ");
}

/// Keeps the lines from the first one `keep` accepts on; unstamped lines (keep returns nullopt) follow the previous.
template <typename Keep>
std::string lines_from(std::string_view text, Keep keep) {
  std::string out;
  bool keeping = false;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view line = text.substr(start, end - start);
    if (const std::optional<bool> decision = keep(line)) keeping = *decision;
    if (keeping) out.append(line);
    start = end;
  }
  return out;
}

}  // namespace

std::optional<double> dmesg_seconds(std::string_view line) {
  const std::string_view trimmed = util::trim(line);
  if (trimmed.empty() || trimmed.front() != '[') return std::nullopt;
  const auto close = trimmed.find(']');
  if (close == std::string_view::npos) return std::nullopt;
  const std::string number(util::trim(trimmed.substr(1, close - 1)));
  if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos) return std::nullopt;
  return util::parse_double(number);  // nullopt for "." or "1.2.3", which the filter lets through
}

std::optional<std::int64_t> syslog_seconds(std::string_view line, int year) {
  if (auto seconds = rfc3339_seconds(line)) return seconds;
  return bsd_seconds(line, year);
}

std::string dmesg_since(std::string_view text, double since_uptime) {
  return lines_from(text, [&](std::string_view line) -> std::optional<bool> {
    const auto seconds = dmesg_seconds(line);
    if (!seconds) return std::nullopt;
    return *seconds >= since_uptime;
  });
}

LogWindow log_file_since_boot(std::string_view text) {
  std::size_t banner = std::string_view::npos;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    if (is_boot_banner(text.substr(start, end - start))) banner = start;
    start = end;
  }
  if (banner == std::string_view::npos) return {std::string(text), "whole file: it has no boot line"};
  return {std::string(text.substr(banner)), "since the last boot"};
}

LogWindow log_file_since(std::string_view text, std::int64_t since_unix, std::int64_t now_unix) {
  const int year = utc_year(now_unix);
  std::string kept = lines_from(text, [&](std::string_view line) -> std::optional<bool> {
    auto seconds = syslog_seconds(line, year);
    if (!seconds) return std::nullopt;
    if (*seconds > now_unix + 86400) seconds = syslog_seconds(line, year - 1);  // BSD stamps carry no year
    return *seconds >= since_unix;
  });
  return {std::move(kept), "since " + iso_utc(since_unix)};
}

std::string iso_utc(std::int64_t unix_seconds) {
  const std::int64_t days = (unix_seconds >= 0 ? unix_seconds : unix_seconds - 86399) / 86400;
  const auto tod = static_cast<int>(unix_seconds - days * 86400);
  const Civil c = civil_from_days(days);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%04lld-%02u-%02uT%02d:%02d:%02dZ", static_cast<long long>(c.year), c.month,
                c.day, tod / 3600, tod / 60 % 60, tod % 60);
  return buffer;
}

int utc_year(std::int64_t unix_seconds) {
  const std::int64_t days = (unix_seconds >= 0 ? unix_seconds : unix_seconds - 86399) / 86400;
  return static_cast<int>(civil_from_days(days).year);
}

}  // namespace gpuenv::probe
