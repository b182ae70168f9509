#include "probe/xid.hpp"

#include <cctype>
#include <map>
#include <set>
#include <span>

#include "probe/pci_bus_id.hpp"
#include "probe/proc_driver_version.hpp"
#include "probe/sxid.hpp"
#include "util/embedded_file.hpp"
#include "util/strings.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::probe {

std::span<const util::EmbeddedFile> embedded_xid_data();  // generated from data/xid.toml

namespace {

using util::Error;
using util::Expected;

// ---- the table --------------------------------------------------------------------------------------------------

XidSeverity severity_from(std::string_view text) {
  if (text == "warning") return XidSeverity::warning;
  if (text == "error") return XidSeverity::error;
  if (text == "critical") return XidSeverity::critical;
  return XidSeverity::info;
}

/// Reads one [[xid]] row; every key is required.
XidInfo read_row(util::TomlRow& row) {
  XidInfo out;
  out.code = static_cast<int>(row.integer_in("code", 1, 100000, "a positive integer"));
  out.mnemonic = row.text("mnemonic");
  out.meaning = row.text("meaning");
  out.causes = row.text("causes");
  out.catalog_action = row.text("catalog_action");
  out.action = row.text("action");
  out.dcgm = row.text("dcgm");
  out.k8s_dp = row.text("k8s_dp");
  out.gpud = row.text("gpud");
  out.status = row.text("status");
  out.tools_status = row.text("tools_status");
  out.source = row.text("source");
  out.severity = severity_from(row.one_of("severity", {"info", "warning", "error", "critical"}));
  out.aznhc_fails = row.one_of("aznhc", {"FAIL", "-"}) == "FAIL";
  // This table's own word for a key no reader asks for (the shared reader says "unexpected key").
  for (const std::string& key : row.unread_keys()) row.fail("unknown key `" + key + "`");
  return out;
}

// ---- kernel log lines -------------------------------------------------------------------------------------------

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

/// A physical line split into its timestamp and the kernel message.
struct Prefix {
  bool recognized = false;  ///< a timestamp or log-level prefix was found
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
    if (!is_digit(c) && c != '.') return false;
  }
  return true;
}

/// After a syslog or journalctl stamp: "<host> kernel: <message>" -> "<message>", dropping an inner "[ 12.3] ".
std::string_view strip_host_and_tag(std::string_view rest) {
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos) return rest;
  std::string_view after_host = util::trim(rest.substr(space + 1));
  if (!util::starts_with(after_host, "kernel:")) return rest;
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
  const bool day = (text[4] == ' ' || is_digit(text[4])) && is_digit(text[5]) && text[6] == ' ';
  const bool time = is_digit(text[7]) && is_digit(text[8]) && text[9] == ':' && is_digit(text[10]) &&
                    is_digit(text[11]) && text[12] == ':' && is_digit(text[13]) && is_digit(text[14]) &&
                    text[15] == ' ';
  return month && day && time;
}

/// "2025-01-21T04:41:44,283302+00:00" (dmesg --time-format iso, journalctl -o short-iso, rsyslog).
bool is_iso_stamp(std::string_view text) {
  return text.size() >= 19 && is_digit(text[0]) && is_digit(text[1]) && is_digit(text[2]) && is_digit(text[3]) &&
         text[4] == '-' && is_digit(text[5]) && is_digit(text[6]) && text[7] == '-' && is_digit(text[8]) &&
         is_digit(text[9]) && text[10] == 'T';
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

/// The text after dmesg --decode's "facility:level: " columns ("kern  :warn  : "), or nullopt.
std::optional<std::string_view> decode_columns(std::string_view text) {
  static const std::set<std::string_view> k_facilities = {
      "kern",     "user", "mail",   "daemon", "auth",   "syslog", "lpr",    "news",   "uucp",   "cron",
      "authpriv", "ftp",  "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"};
  static const std::set<std::string_view> k_levels = {"emerg", "alert",  "crit", "err",
                                                      "warn",  "notice", "info", "debug"};
  const std::size_t first = text.find(':');
  if (first == std::string_view::npos || first > 12) return std::nullopt;
  const std::size_t second = text.find(':', first + 1);
  if (second == std::string_view::npos || second > first + 12) return std::nullopt;
  if (!k_facilities.contains(util::trim(text.substr(0, first))) ||
      !k_levels.contains(util::trim(text.substr(first + 1, second - first - 1)))) {
    return std::nullopt;
  }
  return util::trim(text.substr(second + 1));
}

Prefix split_prefix(std::string_view line) {
  Prefix out;
  std::string_view text = util::trim(line);
  // "<4>[ 1126.635824] ..." (/dev/kmsg, dmesg -r): a syslog level before the stamp.
  if (text.size() > 3 && text.front() == '<') {
    const std::size_t close = text.find('>');
    if (close != std::string_view::npos && close > 1 && close < 5) {
      bool digits = true;
      for (std::size_t i = 1; i < close; ++i) digits = digits && is_digit(text[i]);
      if (digits) {
        text = text.substr(close + 1);
        out.recognized = true;
      }
    }
  }
  // "kern  :warn  : 2025-01-21T..." (dmesg --decode): facility and level columns.
  if (const auto columns = decode_columns(text)) {
    text = *columns;
    out.recognized = true;
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
    out.body =
        space == std::string_view::npos ? std::string_view() : strip_host_and_tag(util::trim(text.substr(space)));
    return out;
  }
  if (is_syslog_stamp(text)) {
    out.recognized = true;
    out.timestamp = text.substr(0, 15);
    out.body = strip_host_and_tag(util::trim(text.substr(16)));
    return out;
  }
  out.body = text;
  return out;
}

/// One logical record: a prefixed line and the continuation lines that belong to it.
struct Record {
  std::string timestamp;
  std::string body;  ///< continuation lines appended with one space, their "NVRM:" dropped
  std::string raw;
  std::size_t line_number = 0;
  bool prefixed = false;
};

std::vector<Record> records(std::string_view text) {
  std::vector<Record> out;
  std::size_t number = 0;
  for (const std::string_view physical : util::split_lines(text)) {
    ++number;
    if (util::trim(physical).empty()) continue;
    const Prefix prefix = split_prefix(physical);
    const bool indented = physical.front() == ' ' || physical.front() == '\t';
    // Multi-line NVRM messages go on without a stamp: indented under it (dmesg) or flush left (copied logs).
    // A flush-left line continues only an NVRM record, and never when it starts an Xid line of its own.
    const bool flush_left_nvrm = !out.empty() && out.back().prefixed && util::starts_with(out.back().body, "NVRM:") &&
                                 util::starts_with(prefix.body, "NVRM:") &&
                                 !util::starts_with(prefix.body, "NVRM: Xid (");
    const bool continuation = !out.empty() && !prefix.recognized && (indented || flush_left_nvrm);
    if (continuation) {
      std::string_view more = prefix.body;
      if (util::starts_with(more, "NVRM:")) more = util::trim(more.substr(5));
      Record& last = out.back();
      if (!more.empty()) last.body += (last.body.empty() ? "" : " ") + std::string(more);
      last.raw += "\n" + std::string(physical);
      continue;
    }
    Record record;
    record.timestamp = std::string(prefix.timestamp);
    record.body = std::string(util::trim(prefix.body));
    record.raw = std::string(physical);
    record.line_number = number;
    record.prefixed = prefix.recognized;
    out.push_back(std::move(record));
  }
  return out;
}

/// The first PCI address in `text` ("0000:b3:00.0", "0000:3b:00"), or empty.
std::string find_pci_address(std::string_view text) {
  for (std::size_t i = 0; i + 10 <= text.size(); ++i) {
    if (i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1])) != 0) continue;
    std::size_t end = i;
    while (end < text.size() &&
           (std::isxdigit(static_cast<unsigned char>(text[end])) != 0 || text[end] == ':' || text[end] == '.')) {
      ++end;
    }
    std::string_view candidate = text.substr(i, end - i);
    while (!candidate.empty() && (candidate.back() == ':' || candidate.back() == '.')) candidate.remove_suffix(1);
    if (canonical_pci_bus_id(candidate)) return std::string(candidate);
  }
  return {};
}

/// The map key for a bus id: canonical without the function, since Xid lines omit it.
std::string bus_key(std::string_view bus) {
  const auto canonical = canonical_pci_bus_id(bus);
  return canonical ? canonical->substr(0, canonical->size() - 2) : std::string(bus);
}

/// "for 3 device(s)" -> 3.
std::optional<int> device_count(std::string_view body) {
  const std::size_t at = body.find(" for ");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = body.substr(at + 5);
  std::size_t digits = 0;
  while (digits < rest.size() && is_digit(rest[digits])) ++digits;
  if (digits == 0 || digits > 6) return std::nullopt;
  return static_cast<int>(*util::parse_int(rest.substr(0, digits)));
}

/// Reads "pid=<n>, " and "name=<process>, " off the front of `rest`.
void take_pid_and_name(std::string_view& rest, KernelEvent& event) {
  if (util::starts_with(rest, "pid=")) {
    const std::size_t comma = rest.find(',');
    const std::string_view pid = rest.substr(4, comma == std::string_view::npos ? std::string_view::npos : comma - 4);
    event.pid = util::parse_int(util::trim(pid));
    rest = comma == std::string_view::npos ? std::string_view() : util::trim(rest.substr(comma + 1));
  }
  if (util::starts_with(rest, "name=")) {
    const std::size_t comma = rest.find(", ");
    const std::string_view name = rest.substr(5, comma == std::string_view::npos ? std::string_view::npos : comma - 5);
    if (name != "<unknown>" && name != "'<unknown>'") event.process_name = std::string(util::trim(name));
    rest = comma == std::string_view::npos ? std::string_view() : util::trim(rest.substr(comma + 1));
  }
}

/// Parses "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, name=x, message" from `at` on.
std::optional<KernelEvent> xid_event(std::string_view at) {
  KernelEvent event;
  std::string_view rest = at.substr(std::string_view("NVRM: Xid (").size());
  const std::size_t close = rest.find(')');
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view inside = rest.substr(0, close);
  for (const std::string_view part : util::split(inside, ' ')) {
    if (part.empty()) continue;
    if (util::starts_with(part, "GPU-I:")) {
      const auto instance = util::parse_int(part.substr(6));
      if (instance && *instance >= 0 && *instance < 1000) event.gpu_instance = static_cast<int>(*instance);
    } else if (event.pci_bus_id.empty()) {
      event.pci_bus_id = std::string(util::starts_with(part, "PCI:") ? part.substr(4) : part);
    }
  }
  rest = rest.substr(close + 1);
  if (rest.empty() || rest.front() != ':') return std::nullopt;
  rest = util::trim(rest.substr(1));
  std::size_t digits = 0;
  while (digits < rest.size() && is_digit(rest[digits])) ++digits;
  if (digits == 0 || digits > 6 || event.pci_bus_id.empty()) return std::nullopt;
  event.xid = static_cast<int>(*util::parse_int(rest.substr(0, digits)));
  rest = util::trim(rest.substr(digits));
  if (!rest.empty() && rest.front() == ',') rest = util::trim(rest.substr(1));
  take_pid_and_name(rest, event);
  event.message = std::string(rest);
  return event;
}

}  // namespace

std::string_view to_string(XidSeverity severity) {
  switch (severity) {
    case XidSeverity::info:
      return "info";
    case XidSeverity::warning:
      return "warning";
    case XidSeverity::error:
      return "error";
    case XidSeverity::critical:
      return "critical";
  }
  return "info";
}

std::string_view to_string(KernelEventKind kind) {
  switch (kind) {
    case KernelEventKind::xid:
      return "xid";
    case KernelEventKind::fallen_off_bus:
      return "fallen_off_bus";
    case KernelEventKind::probe_not_called:
      return "probe_not_called";
    case KernelEventKind::probe_failed:
      return "probe_failed";
    case KernelEventKind::no_adapter_probed:
      return "no_adapter_probed";
    case KernelEventKind::nouveau:
      return "nouveau";
    case KernelEventKind::init_failed:
      return "init_failed";
    case KernelEventKind::driver_loaded:
      return "driver_loaded";
  }
  return "xid";
}

namespace {

const std::vector<util::RowKey> k_xid_keys = {{"xid", {"code"}}};

}  // namespace

std::vector<util::DataTable> data_tables() {
  std::vector<util::DataTable> tables;
  for (const util::EmbeddedFile& file : embedded_xid_data()) tables.push_back({"xid.toml", file, k_xid_keys});
  for (util::DataTable& table : sxid_data_tables()) tables.push_back(std::move(table));
  return tables;
}

Expected<std::vector<XidInfo>> load_xid_table(const util::Overlay& overlay) {
  for (const util::EmbeddedFile& file : embedded_xid_data()) return parse_xid_table(file.contents, overlay);
  return Error::internal("xid.toml is not embedded in this build");
}

Expected<std::vector<XidInfo>> parse_xid_table(std::string_view toml_text, const util::Overlay& overlay) {
  const auto parsed = util::read_data_table({"xid.toml", {"xid.toml", toml_text}, k_xid_keys}, overlay);
  if (!parsed) return parsed.error();
  if (const auto key = parsed->unexpected_key({"xid"})) {
    return Error::internal("xid.toml: unknown top-level key `" + *key + "`");
  }
  if (!parsed->contains("xid")) return Error::internal("xid.toml: no [[xid]] rows");
  std::vector<XidInfo> out;
  if (auto read = parsed->append_rows("xid", out, read_row); !read) return read.error();
  std::set<int> seen;
  for (const XidInfo& info : out) {
    if (!seen.insert(info.code).second) {
      return Error::internal("xid.toml: Xid " + std::to_string(info.code) + " appears twice");
    }
  }
  return out;
}

const Expected<std::vector<XidInfo>>& xid_table() {
  static const Expected<std::vector<XidInfo>> table = []() -> Expected<std::vector<XidInfo>> {
    for (const util::EmbeddedFile& file : embedded_xid_data()) {
      if (file.name == "xid.toml") return parse_xid_table(file.contents, util::installed_overlay());
    }
    return Error::internal("xid.toml is not embedded in this build");
  }();
  return table;
}

std::optional<XidInfo> xid_info(int code) {
  const auto& table = xid_table();
  if (!table) return std::nullopt;
  for (const XidInfo& info : *table) {
    if (info.code == code) return info;
  }
  return std::nullopt;
}

KernelLogScan parse_xid_events(std::string_view log_text) {
  KernelLogScan scan;
  std::map<std::string, std::string> uuid_by_bus;
  for (const Record& record : records(log_text)) {
    const std::string_view body = record.body;
    KernelEvent event;
    const std::size_t xid_at = body.find("NVRM: Xid (");
    if (xid_at != std::string_view::npos) {
      auto parsed = xid_event(body.substr(xid_at));
      if (!parsed) {
        scan.malformed_lines.push_back(record.raw);
        continue;
      }
      event = std::move(*parsed);
    } else if (util::contains(body, "fallen off the bus")) {
      event.kind = KernelEventKind::fallen_off_bus;
      event.pci_bus_id = find_pci_address(body);
      event.message = std::string(util::starts_with(body, "NVRM:") ? util::trim(body.substr(5)) : body);
    } else if (util::contains(body, "RmInitAdapter failed") || util::contains(body, "rm_init_adapter failed")) {
      // The GPU failed to initialise and is missing from NVML; the bus id is the only handle on it.
      event.kind = KernelEventKind::init_failed;
      event.pci_bus_id = find_pci_address(body);
      event.message = std::string(util::starts_with(body, "NVRM:") ? util::trim(body.substr(5)) : body);
    } else if (util::starts_with(body, "NVRM: GPU at ")) {
      // "NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-...": remember the UUID for later Xid lines on that bus.
      const std::size_t uuid_at = body.find(": GPU-");
      if (uuid_at != std::string_view::npos) {
        const std::string_view bus = util::trim(body.substr(13, uuid_at - 13));
        uuid_by_bus[bus_key(util::starts_with(bus, "PCI:") ? bus.substr(4) : bus)] =
            std::string(util::trim(body.substr(uuid_at + 2)));
      }
      continue;
    } else if (util::starts_with(body, "NVRM: The NVIDIA probe routine was not called")) {
      event.kind = KernelEventKind::probe_not_called;
    } else if (util::starts_with(body, "NVRM: The NVIDIA probe routine failed")) {
      event.kind = KernelEventKind::probe_failed;
    } else if (util::starts_with(body, "NVRM: No NVIDIA graphics adapter probed")) {
      event.kind = KernelEventKind::no_adapter_probed;
    } else if (util::starts_with(body, "nouveau ") || util::starts_with(body, "nouveau:") ||
               util::contains(body, "Initialized nouveau")) {
      event.kind = KernelEventKind::nouveau;
      event.pci_bus_id = find_pci_address(body);
      event.message = std::string(body);
    } else if (util::starts_with(body, "NVRM: loading NVIDIA UNIX")) {
      const auto banner = parse_kernel_module_banner(body.substr(std::string_view("NVRM: loading ").size()));
      if (!banner) continue;
      event.kind = KernelEventKind::driver_loaded;
      event.driver_version = banner->version;
      event.open_module = banner->open_module;
    } else {
      continue;
    }
    if (event.message.empty() && event.kind != KernelEventKind::xid) {
      event.message = std::string(util::trim(body.substr(5)));  // the NVRM text without "NVRM:"
    }
    if (event.kind == KernelEventKind::probe_not_called || event.kind == KernelEventKind::probe_failed) {
      event.device_count = device_count(body);
    }
    if (!event.pci_bus_id.empty()) {
      if (const auto it = uuid_by_bus.find(bus_key(event.pci_bus_id)); it != uuid_by_bus.end()) {
        event.gpu_uuid = it->second;
      }
    }
    event.timestamp = record.timestamp;
    event.raw = record.raw;
    event.line_number = record.line_number;
    scan.events.push_back(std::move(event));
  }
  return scan;
}

}  // namespace gpuenv::probe
