#include "probe/sxid.hpp"

#include <cctype>
#include <set>
#include <span>

#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/strings.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::probe {

std::span<const util::EmbeddedFile> embedded_sxid_data();  // generated from data/sxid.toml

namespace {

using util::Error;
using util::Expected;

const std::vector<util::RowKey> k_sxid_keys = {{"sxid", {"code"}}};

SxidInfo read_sxid_row(util::TomlRow& row) {
  SxidInfo out;
  out.code = static_cast<int>(row.integer_in("code", 1, 100000, "a positive integer"));
  out.name = row.text("name");
  out.category = row.one_of("category", {"non_fatal", "fatal", "always_fatal", "notable", "other"});
  out.severity = parse_severity(row.one_of("severity", {"info", "warning", "error", "critical"}));
  out.action = row.text("action");
  out.recovery = row.text("recovery");
  out.gpud_fatal = row.one_of("gpud", {"fatal", "warning"}) == "fatal";
  out.verified = row.one_of("status", {"verified", "secondary", "unverified"}) == "verified";
  out.source = row.text("source");
  return out;
}

/// The bracketed monotonic stamp before `at` ("[6781753.400584] nvidia-nvswitch1: ..."), or empty.
std::string stamp_before(std::string_view line, std::size_t at) {
  const std::size_t close = line.rfind(']', at);
  if (close == std::string_view::npos) return {};
  const std::size_t open = line.rfind('[', close);
  if (open == std::string_view::npos) return {};
  const std::string_view inside = util::trim(line.substr(open + 1, close - open - 1));
  if (inside.empty() || inside.find_first_not_of("0123456789.") != std::string_view::npos) return {};
  return std::string(inside);
}

/// Parses "nvidia-nvswitchN: SXid (PCI:<bus>): <code>, <Fatal|Non-fatal>, <message>" from `at` on; nullopt for a
/// detail line (no Fatal/Non-fatal after the code) or a line that is not an SXid line.
std::optional<SxidEvent> headline(std::string_view text) {
  const std::size_t colon = text.find(": SXid (");
  if (colon == std::string_view::npos) return std::nullopt;
  SxidEvent event;
  event.nvswitch = std::string(text.substr(0, colon));
  std::string_view rest = text.substr(colon + std::string_view(": SXid (").size());
  const std::size_t close = rest.find(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view bus = rest.substr(0, close);
  if (util::starts_with(bus, "PCI:")) bus.remove_prefix(4);
  event.pci_bus_id = std::string(util::trim(bus));
  rest = rest.substr(close + 1);
  if (rest.empty() || rest.front() != ':') return std::nullopt;
  rest = util::trim(rest.substr(1));
  std::size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits])) != 0) ++digits;
  if (digits == 0 || digits > 6) return std::nullopt;
  event.code = static_cast<int>(*util::parse_int(rest.substr(0, digits)));
  rest = util::trim(rest.substr(digits));
  if (rest.empty() || rest.front() != ',') return std::nullopt;
  rest = util::trim(rest.substr(1));
  for (const auto& [word, fatal] : {std::pair{"Non-fatal", false}, std::pair{"Fatal", true}}) {
    if (!util::starts_with(rest, word)) continue;
    event.fatal = fatal;
    rest = util::trim(rest.substr(std::string_view(word).size()));
    if (!rest.empty() && rest.front() == ',') rest = util::trim(rest.substr(1));
    event.message = std::string(rest);
    return event;
  }
  return std::nullopt;  // "Severity 1 Engine instance ...", "Data {...}": details of the headline before
}

}  // namespace

Expected<std::vector<SxidInfo>> parse_sxid_table(std::string_view toml_text, const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto parsed,
                    util::read_data_table({"sxid.toml", {"sxid.toml", toml_text}, k_sxid_keys}, overlay));
  if (const auto key = parsed.unexpected_key({"sxid"}))
    return Error::internal("sxid.toml: unknown top-level key `" + *key + "`");
  std::vector<SxidInfo> out;
  GPUENV_TRY(parsed.append_rows("sxid", out, read_sxid_row));
  std::set<int> seen;
  for (const SxidInfo& info : out) {
    if (!seen.insert(info.code).second)
      return Error::internal("sxid.toml: SXid " + std::to_string(info.code) + " appears twice");
  }
  return out;
}

std::vector<util::DataTable> sxid_data_tables() {
  std::vector<util::DataTable> tables;
  for (const util::EmbeddedFile& file : embedded_sxid_data()) tables.push_back({"sxid.toml", file, k_sxid_keys});
  return tables;
}

Expected<std::vector<SxidInfo>> load_sxid_table(const util::Overlay& overlay) {
  for (const util::EmbeddedFile& file : embedded_sxid_data()) return parse_sxid_table(file.contents, overlay);
  return Error::internal("sxid.toml is not embedded in this build");
}

std::optional<SxidInfo> sxid_info(int code) {
  const auto table = util::builtin_table<&load_sxid_table>();
  if (!table) return std::nullopt;
  for (const SxidInfo& info : **table) {
    if (info.code == code) return info;
  }
  return std::nullopt;
}

SxidJudgement judge_sxid(const std::optional<SxidInfo>& info, bool driver_fatal) {
  if (driver_fatal) return SxidJudgement::fail;
  if (!info) return SxidJudgement::warn;
  if (info->severity >= XidSeverity::error) return info->verified ? SxidJudgement::fail : SxidJudgement::warn;
  return info->severity == XidSeverity::warning ? SxidJudgement::warn : SxidJudgement::pass;
}

std::vector<SxidEvent> parse_sxid_events(std::string_view log_text) {
  std::vector<SxidEvent> events;
  std::size_t number = 0;
  for (const std::string_view physical : util::split_lines(log_text)) {
    ++number;
    const std::size_t at = physical.find("nvidia-nvswitch");
    if (at == std::string_view::npos) continue;
    auto event = headline(util::trim(physical.substr(at)));
    if (!event) continue;
    event->timestamp = stamp_before(physical, at);
    event->line_number = number;
    events.push_back(std::move(*event));
  }
  return events;
}

std::vector<SxidEvent> sxid_events_from_kmsg(const std::vector<KmsgRecord>& records) {
  std::vector<SxidEvent> events;
  std::size_t number = 0;
  for (const KmsgRecord& record : records) {
    ++number;
    if (!record.from_kernel()) continue;
    const std::vector<std::string_view> lines = kmsg_message_lines(record.text);
    if (lines.empty() || !util::starts_with(lines.front(), "nvidia-nvswitch")) continue;
    auto event = headline(util::trim(lines.front()));
    if (!event) continue;
    event->timestamp = kmsg_seconds_text(record.microseconds);
    event->line_number = number;
    events.push_back(std::move(*event));
  }
  return events;
}

}  // namespace gpuenv::probe
