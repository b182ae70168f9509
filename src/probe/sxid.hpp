#pragma once
// NVIDIA NVSwitch SXid codes (data/sxid.toml, compiled in) and the kernel-log lines that report them:
// "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)".

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/kmsg.hpp"
#include "probe/xid.hpp"
#include "util/data_table.hpp"
#include "util/expected.hpp"

namespace gpuenv::probe {

/// One row of data/sxid.toml (NVIDIA's Fabric Manager guide appendix through gpud's copy; sources in the file).
struct SxidInfo {
  int code = 0;
  std::string name;      ///< "egress nonposted PRIV error"
  std::string category;  ///< "non_fatal", "fatal", "always_fatal", "notable", "other"
  XidSeverity severity = XidSeverity::info;
  std::string action;       ///< gpuenv's remedy; "-" when none is needed
  std::string recovery;     ///< the guide's recovery text; "-" when it gives none
  bool gpud_fatal = false;  ///< leptonai/gpud treats it as fatal
  bool verified = false;    ///< status "verified": read in NVIDIA's guide itself (every row today is "secondary")
  std::string source;
};

/// Parses an SXid table in data/sxid.toml's format; an Error names the first bad row and key.
util::Expected<std::vector<SxidInfo>> parse_sxid_table(std::string_view toml_text, const util::Overlay& overlay = {});
/// The SXid table as a data table (sxid.toml, rows keyed by `code` for overlays).
std::vector<util::DataTable> sxid_data_tables();
/// The compiled-in table with `overlay` merged, parsed anew (for `gpuenv data check`).
util::Expected<std::vector<SxidInfo>> load_sxid_table(const util::Overlay& overlay);
/// The row for `code` in the compiled-in table (with the installed overlay), or nullopt.
std::optional<SxidInfo> sxid_info(int code);

/// What an SXid headline does to a verdict.
enum class SxidJudgement { pass, warn, fail };
/// How doctor's fabric.sxid and watch.sxid judge one SXid headline: the driver's own "Fatal" fails; otherwise the row's
/// severity (`info`; none: a code the table lacks warns) — info passes, warning warns, error or critical fails only
/// on a verified row: a secondary row's severity (gpud's copy of the guide, gpud's own "fatal" for three non-fatal
/// codes) warns at most, as no unverified figure changes a verdict (docs/fabric.md).
SxidJudgement judge_sxid(const std::optional<SxidInfo>& info, bool driver_fatal);

/// One SXid line of a kernel log. The driver prints a headline ("12028, Non-fatal, Link 32 ...") and, for some
/// errors, detail lines with the same code ("20034, Severity 1 Engine instance ...", "20034, Data {...}"): only
/// headlines become events.
struct SxidEvent {
  int code = 0;
  std::string nvswitch;    ///< the driver's device name, "nvidia-nvswitch3"
  std::string pci_bus_id;  ///< "0000:05:00.0"
  bool fatal = false;      ///< the driver printed "Fatal" (as opposed to "Non-fatal")
  std::string message;     ///< the text after "Fatal," / "Non-fatal,": "Link 32 egress non-posted PRIV error (First)"
  std::string timestamp;   ///< as printed, "6781753.400584"; empty when the line has none
  std::size_t line_number = 0;
};

/// Scans kernel-log text (dmesg, journalctl, syslog prefixes; LF or CRLF) for SXid headlines. Pure.
std::vector<SxidEvent> parse_sxid_events(std::string_view log_text);
/// The SXid headlines in /dev/kmsg records the kernel itself logged (a record of another facility is not the
/// driver's, docs/security.md "Kernel log"); the timestamp is dmesg's seconds, the line number the record's. Pure.
std::vector<SxidEvent> sxid_events_from_kmsg(const std::vector<KmsgRecord>& records);

}  // namespace gpuenv::probe
