#pragma once
// NVIDIA Xid codes (data/xid.toml, compiled in) and the kernel-log lines that report them.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/kmsg.hpp"
#include "util/data_table.hpp"
#include "util/expected.hpp"

namespace gpuenv::probe {

/// How bad an Xid is, derived from the table's own columns (rule in data/xid.toml's header).
enum class XidSeverity { info, warning, error, critical };

/// "info", "warning", "error", "critical".
std::string_view to_string(XidSeverity severity);
/// The severity a data row names (data/xid.toml, data/sxid.toml): "warning", "error", "critical", else info.
XidSeverity parse_severity(std::string_view name);

/// One row of data/xid.toml (NVIDIA's Xid catalog plus the health tools' verdicts, sources in the file).
struct XidInfo {
  int code = 0;
  std::string mnemonic;  ///< NVIDIA catalog mnemonic, e.g. "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
  std::string meaning;
  std::string causes;          ///< r555 cause flags, e.g. "HW, drv, bus"
  std::string catalog_action;  ///< NVIDIA's resolution buckets, "immediate / investigatory"
  std::string action;          ///< the remedy in gpuenv's words ("reboot node", "reset GPU", ...); "-" if none
  /// The same as one word of doctor's action vocabulary (report::Action's names): "none", "restart_job",
  /// "reset_gpu", "reboot", "drain_and_inspect" or "replace_hardware" (rule in data/xid.toml's header).
  std::string node_action;
  XidSeverity severity = XidSeverity::info;
  bool aznhc_fails = false;  ///< Azure aznhc fails the node on it
  std::string dcgm;          ///< DCGM health result and label, "-" when unmapped
  std::string k8s_dp;        ///< "ignored" or "unhealthy"
  std::string gpud;          ///< gpud event type
  std::string status;        ///< of the catalog columns: "secondary"
  std::string tools_status;  ///< of the tool columns: "verified"
  std::string source;
};

/// Parses an Xid table in data/xid.toml's format; an Error names the first bad row and key.
util::Expected<std::vector<XidInfo>> parse_xid_table(std::string_view toml_text, const util::Overlay& overlay = {});

/// probe's tables: the Xid table (xid.toml) and the SXid table (sxid.toml), rows keyed by `code` for overlays.
std::vector<util::DataTable> data_tables();
/// The compiled-in Xid table with `overlay` merged, parsed anew (for `gpuenv data check`).
util::Expected<std::vector<XidInfo>> load_xid_table(const util::Overlay& overlay);

/// The embedded table, parsed once; an Error only if the shipped data is broken (tests guard that).
util::Expected<const std::vector<XidInfo>*> xid_table();

/// The row for `code`, or nullopt when the table has none.
std::optional<XidInfo> xid_info(int code);

/// What a kernel-log record is about.
enum class KernelEventKind {
  xid,                ///< "NVRM: Xid (PCI:0000:3b:00): 79, ..."
  fallen_off_bus,     ///< "GPU has fallen off the bus" without an Xid line (multi-line or single-line form)
  probe_not_called,   ///< "NVRM: The NVIDIA probe routine was not called for N device(s)" (another driver owns it)
  probe_failed,       ///< "NVRM: The NVIDIA probe routine failed for N device(s)"
  no_adapter_probed,  ///< "NVRM: No NVIDIA graphics adapter probed!"
  nouveau,            ///< a message from the nouveau driver itself ("nouveau 0000:01:00.0: ...")
  driver_loaded,      ///< "NVRM: loading NVIDIA UNIX ... Kernel Module  <version> ..."
  init_failed,        ///< "NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0xffff:1529)" / "rm_init_adapter failed"
};

/// "xid", "fallen_off_bus", ...
std::string_view to_string(KernelEventKind kind);

/// One record of a kernel log that matters to GPU health.
struct KernelEvent {
  KernelEventKind kind = KernelEventKind::xid;
  std::optional<int> xid;  ///< the Xid code (kind xid only)
  std::string pci_bus_id;  ///< canonical as printed, without "PCI:": "0000:3b:00" or "0000:b3:00.0"; may be empty
  std::optional<int> gpu_instance;  ///< MIG "GPU-I:<n>" after the bus id
  std::string gpu_uuid;             ///< from an earlier "NVRM: GPU at <bus>: GPU-..." line for the same bus
  std::optional<long long> pid;     ///< "pid=<n>"; absent for "pid='<unknown>'"
  std::string process_name;         ///< "name=<process>"; empty when absent or "<unknown>"; a user's text
  /// The text after code/pid/name; for other kinds the whole NVRM text. Log text, partly a user's (a process name,
  /// a file name): for matching only, never repeated in findings, Slurm reasons or metrics (docs/security.md).
  std::string message;
  std::string timestamp;            ///< as printed: "1843.308145", "Sun Feb 23 16:24:18 2025", ISO, syslog
  std::string raw;                  ///< the physical line(s), continuation lines joined with '\n'
  std::size_t line_number = 0;      ///< 1-based number of the first physical line
  std::optional<int> device_count;  ///< "for N device(s)" in probe lines
  std::string driver_version;       ///< driver_loaded: the module version
  bool open_module = false;         ///< driver_loaded: the open kernel module
};

/// Everything found in a log, plus the Xid-looking lines that could not be parsed.
struct KernelLogScan {
  std::vector<KernelEvent> events;
  std::vector<std::string> malformed_lines;  ///< "NVRM: Xid" messages without a canonical bus id or a code
};

/// Scans kernel-log text (dmesg, dmesg -T, dmesg --decode --time-format iso, dmesg -r "<N>[ts]", journalctl,
/// syslog and kern.log prefixes; LF or CRLF; multi-line NVRM messages) for Xid and driver-health events. A pattern
/// counts only at the start of a kernel message: indented lines (and, in a stamped log, unstamped ones) continue
/// the message before them; syslog lines count only with the `kernel:` tag, prefixed lines only of the kernel
/// facility; bus ids only in a canonical spelling (docs/security.md, "Kernel log"). Text cannot prove that the
/// kernel wrote a line (a `logger -t kernel` line reads the same): /dev/kmsg can (kernel_events_from_kmsg).
KernelLogScan parse_xid_events(std::string_view log_text);

/// The same events from /dev/kmsg records: only records of the kernel facility (k_kernel_facility), each message
/// matched from the start of its text, escaped line breaks inside it continuing it.
KernelLogScan kernel_events_from_kmsg(const std::vector<KmsgRecord>& records);

}  // namespace gpuenv::probe
