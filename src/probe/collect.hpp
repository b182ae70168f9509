#pragma once
// Collectors: read the machine through System and fill HostFacts. Parsing is left to the pure parsers.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/cloud.hpp"
#include "probe/cloud_metadata.hpp"
#include "probe/facts.hpp"
#include "probe/kmsg.hpp"
#include "probe/xid.hpp"
#include "system/deadline.hpp"
#include "system/system.hpp"

namespace gpuenv::probe {

struct CollectOptions {
  /// False under --root: read files only; run no command, load no library, ignore this process's environment.
  bool live = true;
  /// The NVML library to open (tests point it at a fake).
  std::string nvml_library = "libnvidia-ml.so.1";
  /// A captured `nvidia-smi -q -x` report to take GPU facts from instead of NVML.
  std::optional<std::string> nvidia_smi_xml;
  std::string nvidia_smi_xml_origin;  ///< its file name, for messages
  /// Ask the cloud's link-local metadata service for the instance type when DMI does not carry it (live only).
  bool cloud_metadata = false;
  /// Where to ask instead of the cloud's own address (tests: a loopback server).
  std::optional<MetadataEndpoint> metadata_endpoint;
  /// The whole metadata exchange's limit.
  std::chrono::milliseconds metadata_timeout{1000};
  /// Load libcuda and run cuInit (live only). Off in doctor's prolog tier, which reads NVML only: cuInit on eight
  /// GPUs without persistence mode can take longer than a Slurm prolog may.
  bool libcuda = true;
  /// Run the node's Python to see which frameworks import and what they see (live only; a skip under --root).
  bool frameworks = false;
  std::string python = "python3";
  /// Also run a tiny matmul on each device the frameworks see (doctor without --quick).
  bool framework_matmul = false;
  std::chrono::milliseconds framework_timeout{std::chrono::seconds(30)};
  /// --since: judge kernel-log lines from this long ago on; nullopt: since the last boot (dmesg's whole buffer, or a
  /// log file from its last boot banner on).
  std::optional<std::chrono::seconds> kernel_log_since;
  /// The current time in Unix seconds (the CLI's clock), for --since on log files' timestamps.
  std::int64_t now_unix = 0;
  /// Limit for each library call group or command that could hang.
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  /// Read the link counters (NVLink, PCIe replays, RDMA ports) at the start, for collect_link_counters_end (live).
  bool link_counters = true;
  /// The run's deadline (doctor --timeout), when one holds: NVML and libcuda waits are cut to its time left, and
  /// are reported to it when it cut them short. Commands are cut by running them through it as the System.
  system::DeadlineSystem* deadline = nullptr;
};

/// Everything doctor needs to know about the node. Never throws: what cannot be read becomes a
/// reason in the facts (an unreadable file is a finding, not a crash).
HostFacts collect_host_facts(system::System& system, const CollectOptions& options);

/// Reads the link counters again into facts.counters_end, when the start was read: call it at the end of the run
/// (after any load), so that their growth covers the whole run.
void collect_link_counters_end(system::System& system, const CollectOptions& options, HostFacts& facts);

/// The kernel log and where it came from (docs/security.md, "Kernel log"): when `live`, the kernel's own records
/// from /dev/kmsg, else (no /dev/kmsg, or not allowed) `dmesg`'s text; otherwise, and under --root, the last 4 MiB
/// of /var/log/kern.log, syslog or messages. Nothing (and the reason in `source`) when none can be read. Only
/// /dev/kmsg proves which lines the kernel wrote; `source` says so for the others.
struct KernelLog {
  std::optional<std::vector<KmsgRecord>> records;  ///< /dev/kmsg
  std::optional<std::string> text;                 ///< dmesg or a log file
  std::string source;                              ///< "/dev/kmsg", "dmesg", a path, or "unreadable: ..."
  std::vector<std::string> notes;                  ///< the window, and what the source cannot prove

  bool readable() const { return records.has_value() || text.has_value(); }
  /// The source with its notes, for findings: "/var/log/kern.log (since the last boot; kernel-tagged lines, ...)".
  std::string described() const;
};
KernelLog read_kernel_log(system::System& system, bool live);

/// The DMI strings of /sys/class/dmi/id (empty where unreadable), for classify_cloud.
DmiStrings read_dmi_strings(system::System& system);
/// The events in what read_kernel_log read (kernel_events_from_kmsg or parse_xid_events).
KernelLogScan kernel_log_events(const KernelLog& log);

/// GPU facts from a parsed nvidia-smi report, in NVML's shape.
GpuInventory inventory_from_nvidia_smi_xml(std::string_view xml, const std::string& origin);

/// The version in a versioned library file name: "libnvidia-ml.so.550.54.15" -> "550.54.15"; empty otherwise.
std::string version_from_library_name(std::string_view file_name, std::string_view stem);

}  // namespace gpuenv::probe
