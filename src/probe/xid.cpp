#include "probe/xid.hpp"

#include <cctype>
#include <map>
#include <set>
#include <span>

#include "probe/kernel_log_records.hpp"
#include "probe/pci_bus_id.hpp"
#include "probe/proc_driver_version.hpp"
#include "probe/sxid.hpp"
#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/strings.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::probe {

std::span<const util::EmbeddedFile> embedded_xid_data();  // generated from data/xid.toml

XidSeverity parse_severity(std::string_view text) {
  if (text == "warning") return XidSeverity::warning;
  if (text == "error") return XidSeverity::error;
  if (text == "critical") return XidSeverity::critical;
  return XidSeverity::info;
}

namespace {

using util::Error;
using util::Expected;

// ---- the table --------------------------------------------------------------------------------------------------

/// Reads one [[xid]] row; every key is required.
XidInfo read_xid_row(util::TomlRow& row) {
  XidInfo out;
  out.code = static_cast<int>(row.integer_in("code", 1, 100000, "a positive integer"));
  out.mnemonic = row.text("mnemonic");
  out.meaning = row.text("meaning");
  out.causes = row.text("causes");
  out.catalog_action = row.text("catalog_action");
  out.action = row.text("action");
  out.node_action = row.one_of("node_action",
                               {"none", "restart_job", "reset_gpu", "reboot", "drain_and_inspect", "replace_hardware"});
  out.dcgm = row.text("dcgm");
  out.k8s_dp = row.text("k8s_dp");
  out.gpud = row.text("gpud");
  out.status = row.text("status");
  out.tools_status = row.text("tools_status");
  out.source = row.text("source");
  out.severity = parse_severity(row.one_of("severity", {"info", "warning", "error", "critical"}));
  out.aznhc_fails = row.one_of("aznhc", {"FAIL", "-"}) == "FAIL";
  // This table's own word for a key no reader asks for (the shared reader says "unexpected key").
  for (const std::string& key : row.unread_keys()) row.fail("unknown key `" + key + "`");
  return out;
}

// ---- kernel log events ------------------------------------------------------------------------------------------

/// `token` as a bus id when it is exactly one canonical spelling ("0000:3b:00", "0000:b3:00.0", "PCI:0000:9b:00"),
/// else nullopt: a bus id is the only log text findings repeat, so nothing else passes for one.
std::optional<std::string> exact_bus_id(std::string_view token) {
  if (token.empty() || token.find_first_of(" \t") != std::string_view::npos) return std::nullopt;
  if (!canonical_pci_bus_id(token)) return std::nullopt;
  return std::string(util::starts_with(token, "PCI:") ? token.substr(4) : token);
}

/// A message the driver prints about one GPU, "NVRM: GPU 0000:18:00.0: <rest>" (NV_DEV_PRINTF), "NVRM: GPU at
/// PCI:0000:9b:00: <rest>", "NVRM: GPU at 0000:01:00.0 <rest>" or "NVRM: The NVIDIA GPU 0000:b3:00.0 <rest>": the
/// bus and the rest. Each lead-in with the canonical bus id it must carry is longer than a process name (15 bytes,
/// TASK_COMM_LEN), so a message the kernel starts with a user's process name ("<comm>[<pid>]: segfault at ...")
/// cannot pose as one.
struct GpuMessage {
  std::string bus;
  std::string_view rest;
};
std::optional<GpuMessage> gpu_message(std::string_view head) {
  for (const std::string_view lead : {"NVRM: GPU at PCI:", "NVRM: GPU at ", "NVRM: The NVIDIA GPU ", "NVRM: GPU "}) {
    if (!util::starts_with(head, lead)) continue;
    std::string_view rest = head.substr(lead.size());
    const std::size_t end = rest.find(' ');
    std::string_view token = rest.substr(0, end);
    if (!token.empty() && token.back() == ':') token.remove_suffix(1);
    const std::string with_prefix = lead == "NVRM: GPU at PCI:" ? "PCI:" + std::string(token) : std::string(token);
    const auto bus = exact_bus_id(with_prefix);
    if (!bus) return std::nullopt;
    return GpuMessage{*bus, end == std::string_view::npos ? std::string_view() : util::trim(rest.substr(end))};
  }
  return std::nullopt;
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
  while (digits < rest.size() && util::is_digit(rest[digits])) ++digits;
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

/// Parses "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, name=x, message" from `at` on; nullopt unless the
/// parenthesis holds a canonical bus id (and a MIG instance) and a code follows.
std::optional<KernelEvent> xid_event(std::string_view at) {
  KernelEvent event;
  std::string_view rest = at.substr(std::string_view("NVRM: Xid (").size());
  const std::size_t close = rest.find(')');
  if (close == std::string_view::npos) return std::nullopt;
  // "(PCI:0000:01:00)" or "(PCI:0000:01:00 GPU-I:05)": a canonical bus id, then at most a MIG instance.
  const std::vector<std::string_view> parts = util::split(rest.substr(0, close), ' ');
  const auto bus = exact_bus_id(parts.front());
  if (!bus || parts.size() > 2) return std::nullopt;
  event.pci_bus_id = *bus;
  if (parts.size() == 2) {
    const auto instance = util::starts_with(parts[1], "GPU-I:") ? util::parse_int(parts[1].substr(6)) : std::nullopt;
    if (!instance || *instance < 0 || *instance >= 1000) return std::nullopt;
    event.gpu_instance = static_cast<int>(*instance);
  }
  rest = rest.substr(close + 1);
  if (rest.empty() || rest.front() != ':') return std::nullopt;
  rest = util::trim(rest.substr(1));
  std::size_t digits = 0;
  while (digits < rest.size() && util::is_digit(rest[digits])) ++digits;
  if (digits == 0 || digits > 6) return std::nullopt;
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
  GPUENV_TRY_ASSIGN(const auto text, util::embedded_text(embedded_xid_data(), "xid.toml"));
  return parse_xid_table(text, overlay);
}

Expected<std::vector<XidInfo>> parse_xid_table(std::string_view toml_text, const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto parsed,
                    util::read_data_table({"xid.toml", {"xid.toml", toml_text}, k_xid_keys}, overlay));
  if (const auto key = parsed.unexpected_key({"xid"})) {
    return Error::internal("xid.toml: unknown top-level key `" + *key + "`");
  }
  if (!parsed.contains("xid")) return Error::internal("xid.toml: no [[xid]] rows");
  std::vector<XidInfo> out;
  GPUENV_TRY(parsed.append_rows("xid", out, read_xid_row));
  std::set<int> seen;
  for (const XidInfo& info : out) {
    if (!seen.insert(info.code).second) {
      return Error::internal("xid.toml: Xid " + std::to_string(info.code) + " appears twice");
    }
  }
  return out;
}

Expected<const std::vector<XidInfo>*> xid_table() { return util::builtin_table<&load_xid_table>(); }

std::optional<XidInfo> xid_info(int code) {
  const auto table = xid_table();
  if (!table) return std::nullopt;
  for (const XidInfo& info : **table) {
    if (info.code == code) return info;
  }
  return std::nullopt;
}

namespace {

/// The event a kernel message reports, matched from the message's start only; nullopt for other messages.
/// `uuid_by_bus` collects "NVRM: GPU at PCI:<bus>: GPU-<uuid>" lines for the Xid lines after them.
std::optional<KernelEvent> event_of(const LogRecord& record, std::map<std::string, std::string>& uuid_by_bus,
                                    std::vector<std::string>& malformed) {
  const std::string_view head = record.head;
  const std::string_view body = record.body;
  KernelEvent event;
  if (util::starts_with(head, "NVRM: Xid (")) {
    auto parsed = xid_event(body);
    if (!parsed) {
      malformed.push_back(record.raw);
      return std::nullopt;
    }
    event = std::move(*parsed);
  } else if (const auto gpu = gpu_message(head)) {
    if (util::starts_with(gpu->rest, "GPU-")) {
      // "NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-...": the UUID for later Xid lines on that bus.
      uuid_by_bus[bus_key(gpu->bus)] = std::string(util::trim(gpu->rest));
      return std::nullopt;
    }
    if (util::contains(body, "fallen off the bus")) {
      event.kind = KernelEventKind::fallen_off_bus;
    } else if (util::starts_with(gpu->rest, "RmInitAdapter failed") ||
               util::starts_with(gpu->rest, "rm_init_adapter failed")) {
      event.kind = KernelEventKind::init_failed;  // missing from NVML: the bus id is the only handle on it
    } else {
      return std::nullopt;
    }
    event.pci_bus_id = gpu->bus;
    event.message = std::string(util::trim(body.substr(5)));  // the NVRM text without "NVRM:"
  } else if (util::starts_with(head, "NVRM: RmInitAdapter failed") ||
             util::starts_with(head, "NVRM: rm_init_adapter failed")) {
    event.kind = KernelEventKind::init_failed;
  } else if (util::starts_with(head, "NVRM: The NVIDIA probe routine was not called")) {
    event.kind = KernelEventKind::probe_not_called;
    event.device_count = device_count(head);
  } else if (util::starts_with(head, "NVRM: The NVIDIA probe routine failed")) {
    event.kind = KernelEventKind::probe_failed;
    event.device_count = device_count(head);
  } else if (util::starts_with(head, "NVRM: No NVIDIA graphics adapter probed")) {
    event.kind = KernelEventKind::no_adapter_probed;
  } else if (util::starts_with(head, "nouveau ") || util::starts_with(head, "[drm] Initialized nouveau ")) {
    // "nouveau 0000:01:00.0: DRM: ..." (dev_printk) or "[drm] Initialized nouveau ... for 0000:01:00.0 ...".
    const std::string_view after = head.substr(head.front() == 'n' ? 8 : 26);
    std::string_view token = after.substr(0, after.find(' '));
    if (!token.empty() && token.back() == ':') token.remove_suffix(1);
    const auto bus = exact_bus_id(token);
    if (head.front() == 'n' && !bus) return std::nullopt;
    event.kind = KernelEventKind::nouveau;
    if (bus) event.pci_bus_id = *bus;
    event.message = std::string(body);
  } else if (util::starts_with(head, "NVRM: loading NVIDIA UNIX")) {
    const auto banner = parse_kernel_module_banner(head.substr(std::string_view("NVRM: loading ").size()));
    if (!banner) return std::nullopt;
    event.kind = KernelEventKind::driver_loaded;
    event.driver_version = banner->version;
    event.open_module = banner->open_module;
  } else {
    return std::nullopt;
  }
  if (event.message.empty() && event.kind != KernelEventKind::xid) {
    event.message = std::string(util::trim(body.substr(5)));  // the NVRM text without "NVRM:"
  }
  if (!event.pci_bus_id.empty()) {
    if (const auto it = uuid_by_bus.find(bus_key(event.pci_bus_id)); it != uuid_by_bus.end()) {
      event.gpu_uuid = it->second;
    }
  }
  event.timestamp = record.timestamp;
  event.raw = record.raw;
  event.line_number = record.line_number;
  return event;
}

/// The events of the kernel's own records; records another facility or program wrote are passed over.
KernelLogScan events_of(const std::vector<LogRecord>& records) {
  KernelLogScan scan;
  std::map<std::string, std::string> uuid_by_bus;
  for (const LogRecord& record : records) {
    if (!record.kernel) continue;
    if (auto event = event_of(record, uuid_by_bus, scan.malformed_lines)) scan.events.push_back(std::move(*event));
  }
  return scan;
}

}  // namespace

KernelLogScan parse_xid_events(std::string_view log_text) { return events_of(records_from_text(log_text)); }

KernelLogScan kernel_events_from_kmsg(const std::vector<KmsgRecord>& records) {
  return events_of(records_from_kmsg(records));
}

}  // namespace gpuenv::probe
