#include "probe/xid.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "probe/pci_bus_id.hpp"
#include "support/fake_system.hpp"
#include "util/strings.hpp"

using gpuenv::probe::KernelEvent;
using gpuenv::probe::KernelEventKind;
using gpuenv::probe::KernelLogScan;
using gpuenv::probe::parse_xid_events;
using gpuenv::probe::parse_xid_table;
using gpuenv::probe::xid_info;
using gpuenv::probe::xid_table;
using gpuenv::probe::XidInfo;
using gpuenv::probe::XidSeverity;
using gpuenv::testing::read_fixture;

namespace {

/// The severity rule stated in data/xid.toml's header, applied to a row's own columns.
XidSeverity derived_severity(const XidInfo& row, const std::map<int, XidInfo>& by_code) {
  using gpuenv::util::starts_with;
  if (starts_with(row.action, "follow Xid ")) {
    const int other = std::stoi(row.action.substr(11));
    return derived_severity(by_code.at(other), by_code);
  }
  if (starts_with(row.dcgm, "FAIL*") || starts_with(row.action, "reboot node")) return XidSeverity::critical;
  if (starts_with(row.action, "reset GPU") || starts_with(row.dcgm, "FAIL") || row.aznhc_fails) {
    return XidSeverity::error;
  }
  if (starts_with(row.action, "restart app") || starts_with(row.action, "check") || starts_with(row.dcgm, "WARN") ||
      gpuenv::util::contains(row.action, "144-150 Decode")) {
    return XidSeverity::warning;
  }
  return XidSeverity::info;
}

/// The node_action rule stated in data/xid.toml's header: NVIDIA's immediate resolution bucket in one word.
std::string derived_node_action(const XidInfo& row) {
  const std::string bucket = row.catalog_action.substr(0, row.catalog_action.find(" / "));
  if (gpuenv::util::starts_with(bucket, "WORKFLOW_NVLINK5_ERR"))
    return row.code == 150 ? "reset_gpu" : "drain_and_inspect";
  static const std::map<std::string, std::string> k_buckets = {
      {"IGNORE", "none"},
      {"RESTART_APP", "restart_job"},
      {"RESET_GPU", "reset_gpu"},
      {"RESTART_BM", "reboot"},
      {"RESTART_VM", "reboot"},
      {"CONTACT_SUPPORT", "drain_and_inspect"},
      {"CHECK_MECHANICALS", "drain_and_inspect"},
      {"WORKFLOW_XID_45", "none"},
      {"WORKFLOW_XID_48", "reset_gpu"},
      {"WORKFLOW_NVLINK_ERR", "reset_gpu"},
      {"XID_154", "drain_and_inspect"},
      {"(blank)", "reset_gpu"},  // 171 and 172: "follow Xid 48"
  };
  const auto it = k_buckets.find(bucket);
  return it == k_buckets.end() ? "(bucket " + bucket + " has no rule)" : it->second;
}

KernelLogScan scan_fixture(const std::string& name) { return parse_xid_events(read_fixture("probe/errors/" + name)); }

}  // namespace

TEST_CASE("Xid table: the embedded data/xid.toml is Table 1 of reference/xid.md", "[probe][xid]") {
  const auto loaded = xid_table();
  INFO((loaded ? std::string() : loaded.error().message));
  REQUIRE(loaded.has_value());
  const std::vector<XidInfo>& table = **loaded;
  CHECK(table.size() == 51);
  std::map<int, XidInfo> by_code;
  for (const XidInfo& row : table) by_code[row.code] = row;
  REQUIRE(by_code.size() == table.size());
  std::set<int> aznhc;
  std::set<int> k8s_ignored;
  std::set<int> devastating;
  for (const XidInfo& row : table) {
    INFO("Xid " << row.code);
    CHECK(row.severity == derived_severity(row, by_code));
    CHECK(row.node_action == derived_node_action(row));
    CHECK_FALSE(row.mnemonic.empty());
    CHECK_FALSE(row.meaning.empty());
    CHECK(row.status == "secondary");
    CHECK(row.tools_status == "verified");
    CHECK_FALSE(row.source.empty());
    if (row.aznhc_fails) aznhc.insert(row.code);
    if (row.k8s_dp == "ignored") k8s_ignored.insert(row.code);
    if (gpuenv::util::starts_with(row.dcgm, "FAIL*")) devastating.insert(row.code);
  }
  // Cross-checks against the tools' own lists quoted in xid.md's Sources section.
  CHECK(aznhc == std::set<int>{48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120});
  CHECK(k8s_ignored == std::set<int>{13, 31, 43, 45, 68, 109});
  CHECK(devastating == std::set<int>{48, 74, 79, 95, 119, 120, 140});
}

TEST_CASE("Xid table: xid_info rows", "[probe][xid]") {
  struct Row {
    int code;
    const char* mnemonic;
    const char* action;
    XidSeverity severity;
    bool aznhc;
    const char* k8s;
    const char* gpud;
  };
  const Row rows[] = {
      {13, "ROBUST_CHANNEL_GR_EXCEPTION / GR_ERROR_SW_NOTIFY",
       "restart app (r555 doc: run DCGM + field diag to rule out HW, else debug app)", XidSeverity::warning, false,
       "ignored", "Warning"},
      {45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "none if other Xids present; if alone, restart Fabric Manager",
       XidSeverity::info, false, "ignored", "Warning"},
      {63, "INFOROM_DRAM_RETIREMENT_EVENT",
       "none now. Reset GPU when convenient so the remap takes effect. With Xid 94: restart the affected app",
       XidSeverity::error, true, "unhealthy", "Fatal"},
      {79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "reboot node", XidSeverity::critical, true, "unhealthy",
       "Fatal"},
      {94, "ROBUST_CHANNEL_CONTAINED_ERROR", "restart app; reset GPU when convenient (r555)", XidSeverity::warning,
       false, "unhealthy", "Fatal"},
      {119, "GSP_RPC_TIMEOUT", "reset GPU", XidSeverity::critical, true, "unhealthy", "Fatal"},
      {154, "GPU_RECOVERY_ACTION_CHANGED",
       "follow the recovery action printed in the line (NVML nvmlDeviceGpuRecoveryAction_t)", XidSeverity::info, false,
       "unhealthy", "(none set)"},
      {172, "UNCORRECTABLE_SRAM_ERROR", "follow Xid 48", XidSeverity::critical, false, "unhealthy", "Warning"},
  };
  for (const Row& row : rows) {
    INFO("Xid " << row.code);
    const auto info = xid_info(row.code);
    REQUIRE(info.has_value());
    CHECK(info->mnemonic == row.mnemonic);
    CHECK(info->action == row.action);
    CHECK(info->severity == row.severity);
    CHECK(info->aznhc_fails == row.aznhc);
    CHECK(info->k8s_dp == row.k8s);
    CHECK(info->gpud == row.gpud);
  }
  CHECK(xid_info(79)->meaning == "GPU has fallen off the bus (driver cannot reach the GPU over PCIe)");
  CHECK(xid_info(79)->catalog_action == "RESTART_BM / CONTACT_SUPPORT");
  CHECK(xid_info(48)->dcgm == "FAIL* \"Double Bit ECC Error\"");
  for (const int absent : {0, 1, 14, 999, -5}) CHECK_FALSE(xid_info(absent).has_value());
  CHECK(gpuenv::probe::to_string(XidSeverity::critical) == "critical");
}

TEST_CASE("Xid table: malformed data is an Error naming the row", "[probe][xid]") {
  const std::string good =
      "[[xid]]\ncode = 79\nmnemonic = \"M\"\nmeaning = \"m\"\ncauses = \"HW\"\ncatalog_action = \"RESTART_BM\"\n"
      "action = \"reboot node\"\nnode_action = \"reboot\"\nseverity = \"critical\"\naznhc = \"FAIL\"\ndcgm = "
      "\"FAIL*\"\nk8s_dp = \"unhealthy\"\n"
      "gpud = \"Fatal\"\nstatus = \"secondary\"\ntools_status = \"verified\"\nsource = \"test\"\n";
  REQUIRE(parse_xid_table(good).has_value());
  struct Row {
    std::string text;
    const char* message;
  };
  const Row rows[] = {
      {good + good, "appears twice"},
      {good + "colour = \"red\"\n", "unknown key `colour`"},
      {"[[xid]]\ncode = \"79\"\n", "`code` must be a positive integer"},
      {gpuenv::util::join(
           {good.substr(0, good.find("severity")), "severity = \"fatal\"\n", good.substr(good.find("aznhc"))}, ""),
       "`severity` must be"},
      {gpuenv::util::join({good.substr(0, good.find("node_action")), "node_action = \"reset node\"\n",
                           good.substr(good.find("severity"))},
                          ""),
       "`node_action` must be"},
      {"[[xid]\n", "xid.toml:1"},
      {"title = \"x\"\n", "unknown top-level key"},
      {"", "no [[xid]] rows"},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    const auto parsed = parse_xid_table(row.text);
    REQUIRE_FALSE(parsed.has_value());
    CHECK_THAT(parsed.error().message, Catch::Contains(row.message));
  }
}

TEST_CASE("Kernel log: dmesg --decode --time-format iso, Xid 13 and 43", "[probe][xid]") {
  const KernelLogScan scan = scan_fixture("dmesg-decode-iso_xid-13-and-43.log");
  CHECK(scan.malformed_lines.empty());
  REQUIRE(scan.events.size() == 17);
  for (std::size_t i = 0; i < 16; ++i) {
    INFO("line " << i + 1);
    CHECK(scan.events[i].kind == KernelEventKind::xid);
    CHECK(scan.events[i].xid == 13);
    CHECK(scan.events[i].pci_bus_id == "0000:38:00");
    CHECK_FALSE(scan.events[i].pid.has_value());  // pid='<unknown>'
    CHECK(scan.events[i].process_name.empty());   // name=<unknown>
    CHECK(scan.events[i].line_number == i + 1);
  }
  const KernelEvent& first = scan.events.front();
  CHECK(first.timestamp == "2025-01-21T04:41:44,283302+00:00");
  CHECK(first.message == "Graphics SM Global Exception on (GPC 8, TPC 5, SM 1): Multiple Warp Errors");
  const KernelEvent& last = scan.events.back();
  CHECK(last.xid == 43);
  CHECK(last.pid == 2924364);
  CHECK(last.process_name == "pt_main_thread");
  CHECK(last.message == "Ch 00000008");
  CHECK(last.timestamp == "2025-01-21T04:41:44,287197+00:00");
  CHECK(last.line_number == 17);
  CHECK(gpuenv::util::starts_with(last.raw, "kern  :warn  : 2025-01-21T04:41:44,287197+00:00 NVRM: Xid"));
}

TEST_CASE("Kernel log: dmesg -T, Xid 119 with the GPU's UUID from the preceding identity line", "[probe][xid]") {
  const KernelLogScan scan = scan_fixture("dmesg_xid-119_gsp-rpc-timeout.log");
  CHECK(scan.malformed_lines.empty());
  struct Row {
    const char* timestamp;
    long long pid;
    const char* name;
    const char* message_end;
  };
  const Row rows[] = {
      {"Sun Feb 23 16:24:18 2025", 2024380, "nvidia-smi", "Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4)."},
      {"Sun Feb 23 16:24:24 2025", 2024380, "nvidia-smi", "Expected function 10 (FREE) (0xa55a0210 0x0)."},
      {"Sun Feb 23 16:24:30 2025", 2024380, "nvidia-smi", "Expected function 10 (FREE) (0xa55a0090 0x0)."},
      {"Sun Feb 23 16:27:12 2025", 1263500, "cache_mgr_main",
       "Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c)."},
      {"Sun Feb 23 16:30:13 2025", 1240590, "gpud", "Expected function 76 (GSP_RM_CONTROL) (0x20803032 0x58c)."},
  };
  REQUIRE(scan.events.size() == std::size(rows));
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    INFO("event " << i);
    const KernelEvent& event = scan.events[i];
    CHECK(event.kind == KernelEventKind::xid);
    CHECK(event.xid == 119);
    CHECK(event.pci_bus_id == "0000:9b:00");
    CHECK(event.gpu_uuid == "GPU-509665ad-b600-ac93-3616-d754b23d636d");
    CHECK(event.timestamp == rows[i].timestamp);
    CHECK(event.pid == rows[i].pid);
    CHECK(event.process_name == rows[i].name);
    CHECK(gpuenv::util::starts_with(event.message, "Timeout after 6s of waiting for RPC response from GPU4 GSP!"));
    CHECK(gpuenv::util::ends_with(event.message, rows[i].message_end));
  }
  CHECK(scan.events[0].line_number == 3);
}

TEST_CASE("Kernel log: fallen off the bus without an Xid, multi-line, then probe failure and driver load",
          "[probe][xid]") {
  const KernelLogScan scan = scan_fixture("dmesg_gpu-fallen-off-bus_no-xid_open-module-570.158.01.log");
  REQUIRE(scan.events.size() == 3);
  const KernelEvent& fallen = scan.events[0];
  CHECK(fallen.kind == KernelEventKind::fallen_off_bus);
  CHECK_FALSE(fallen.xid.has_value());
  CHECK(fallen.pci_bus_id == "0000:b3:00.0");
  CHECK(fallen.timestamp == "1843.308145");
  CHECK(fallen.message ==
        "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen off the bus and is not "
        "responding to commands.");
  CHECK(std::count(fallen.raw.begin(), fallen.raw.end(), '\n') == 2);
  CHECK(fallen.line_number == 1);
  CHECK(scan.events[1].kind == KernelEventKind::probe_failed);
  CHECK(scan.events[1].device_count == 1);
  CHECK(scan.events[1].line_number == 4);
  CHECK(scan.events[2].kind == KernelEventKind::driver_loaded);
  CHECK(scan.events[2].driver_version == "570.158.01");
  CHECK(scan.events[2].open_module);
}

TEST_CASE("Kernel log: nouveau owns the GPU, NVRM probe routine not called", "[probe][xid]") {
  const KernelLogScan scan = scan_fixture("dmesg_nvrm-probe-routine-not-called_nouveau-conflict.log");
  REQUIRE(scan.events.size() == 2);
  CHECK(scan.events[0].kind == KernelEventKind::no_adapter_probed);
  CHECK(scan.events[0].timestamp == "188497.595099");
  CHECK(scan.events[1].kind == KernelEventKind::probe_not_called);
  CHECK(scan.events[1].device_count == 3);
  CHECK(scan.events[1].message == "The NVIDIA probe routine was not called for 3 device(s).");
  CHECK(scan.events[1].line_number == 4);
}

TEST_CASE("Kernel log: /dev/kmsg-style driver load and unload", "[probe][xid]") {
  const KernelLogScan scan = scan_fixture("dmesg-kmsg_nvrm-driver-load-unload_550.144.03.log");
  REQUIRE(scan.events.size() == 2);
  for (const KernelEvent& event : scan.events) {
    CHECK(event.kind == KernelEventKind::driver_loaded);
    CHECK(event.driver_version == "550.144.03");
    CHECK_FALSE(event.open_module);
  }
  CHECK(scan.events[0].timestamp == "1126.635824");
  CHECK(scan.events[1].timestamp == "1137.356721");
}

TEST_CASE("Kernel log: other prefixes and Xid shapes from reference/xid.md Table 3 (inline samples)", "[probe][xid]") {
  // Written for the test: each message is a Table 3 example; the prefixes are syslog, journalctl short-iso and
  // plain dmesg shapes, with CRLF on some lines.
  const std::string log =
      "Jan 18 11:38:05 gpu-node-7 kernel: [  269.516977] NVRM: GPU at 0000:01:00.0 has fallen off the bus.\r\n"
      "Jan 18 11:38:05 gpu-node-7 kernel: [  269.517039] NVRM: Xid (0000:03:00): 14, Channel 00000001\r\n"
      "2025-03-01T10:00:00+0000 gpu-node-7 kernel: NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: "
      "CE User Channel (0x9). RST: No, D-RST: No\n"
      "[ 5.000000] NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 08 (0x004505c6 0x00000000 "
      "0x00000000 0x00000000 0x00000000 0x00000000)\n"
      "[ 6.000000] NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and "
      "Reset)\n"
      "[ 7.000000] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n"
      "[ 8.000000] NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.\n"
      "[ 9.000000] nouveau 0000:01:00.0: DRM: VRAM: 8192 MiB\n";
  const KernelLogScan scan = parse_xid_events(log);
  CHECK(scan.malformed_lines.empty());
  struct Row {
    KernelEventKind kind;
    std::optional<int> xid;
    const char* bus;
    const char* timestamp;
    const char* message;
  };
  const Row rows[] = {
      {KernelEventKind::fallen_off_bus, std::nullopt, "0000:01:00.0", "Jan 18 11:38:05",
       "GPU at 0000:01:00.0 has fallen off the bus."},
      {KernelEventKind::xid, 14, "0000:03:00", "Jan 18 11:38:05", "Channel 00000001"},
      {KernelEventKind::xid, 94, "0000:01:00", "2025-03-01T10:00:00+0000",
       "Contained: CE User Channel (0x9). RST: No, D-RST: No"},
      {KernelEventKind::xid, 149, "0018:01:00", "5.000000",
       "NETIR_LINK_EVT Fatal XC0 i0 Link 08 (0x004505c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"},
      {KernelEventKind::xid, 154, "0009:01:00", "6.000000",
       "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)"},
      {KernelEventKind::xid, 79, "0000:01:00", "7.000000", "GPU has fallen off the bus."},
      {KernelEventKind::fallen_off_bus, std::nullopt, "0000:18:00.0", "8.000000",
       "GPU 0000:18:00.0: GPU has fallen off the bus."},
      {KernelEventKind::nouveau, std::nullopt, "0000:01:00.0", "9.000000", "nouveau 0000:01:00.0: DRM: VRAM: 8192 MiB"},
  };
  REQUIRE(scan.events.size() == std::size(rows));
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    INFO("event " << i << ": " << scan.events[i].raw);
    CHECK(scan.events[i].kind == rows[i].kind);
    CHECK(scan.events[i].xid == rows[i].xid);
    CHECK(scan.events[i].pci_bus_id == rows[i].bus);
    CHECK(scan.events[i].timestamp == rows[i].timestamp);
    CHECK(scan.events[i].message == rows[i].message);
  }
  CHECK(scan.events[2].gpu_instance == 5);
  CHECK(scan.events[2].pid == 7194);
  CHECK(scan.events[2].process_name.empty());
  CHECK(gpuenv::probe::to_string(scan.events[0].kind) == "fallen_off_bus");
  // A log with no stamps at all (a pasted excerpt): each line is a message.
  const KernelLogScan bare = parse_xid_events(
      "NVRM: GPU at PCI:0000:3b:00: GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\n"
      "NVRM: Xid (PCI:0000:3b:00): 31, pid=1234, name=python, Ch 00000010\n");
  REQUIRE(bare.events.size() == 1);
  CHECK(bare.events[0].xid == 31);
  CHECK(bare.events[0].pid == 1234);
  CHECK(bare.events[0].process_name == "python");
  CHECK(bare.events[0].gpu_uuid == "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
  CHECK(bare.events[0].timestamp.empty());
  // In a stamped log an unstamped line continues the message before it, even one that reads as an Xid line: a line
  // break inside a message (a file name a user chose) is printed that way (docs/security.md, "Kernel log").
  const KernelLogScan mixed = parse_xid_events(
      "[ 1.000000] NVRM: GPU at PCI:0000:3b:00: GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\n"
      "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a, An uncorrectable double bit error (DBE) has been detected\n");
  CHECK(mixed.events.empty());
}

TEST_CASE("Kernel log: malformed Xid lines are reported, garbage and truncation never crash", "[probe][xid]") {
  const KernelLogScan scan = parse_xid_events(
      "[ 1.0] NVRM: Xid (PCI:0000:3b:0\n"
      "[ 2.0] NVRM: Xid (PCI:0000:3b:00): , no code\n"
      "[ 3.0] NVRM: Xid (): 79, no bus\n"
      "[ 4.0] nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 12028, not a GPU Xid\n"
      "\x01\x02\xff\xfe [ NVRM: \r\n"
      "[\n"
      "<\n"
      "kern  :\n");
  CHECK(scan.events.empty());
  CHECK(scan.malformed_lines.size() == 3);
  CHECK(parse_xid_events("").events.empty());
  const std::string whole = read_fixture("probe/errors/dmesg_xid-119_gsp-rpc-timeout.log");
  for (std::size_t cut = 0; cut < whole.size(); cut += 53) {
    const KernelLogScan partial = parse_xid_events(std::string_view(whole).substr(0, cut));
    CHECK(partial.events.size() <= 5);
  }
}

TEST_CASE("PCI bus ids reduce to one spelling", "[probe][xid]") {
  struct Row {
    const char* text;
    std::optional<std::string> canonical;
  };
  const Row rows[] = {
      {"00000000:3B:00.0", "0000:3b:00.0"},
      {"PCI:0000:9b:00", "0000:9b:00.0"},
      {"0000:b3:00.0", "0000:b3:00.0"},
      {" 0018:01:00 ", "0018:01:00.0"},
      {"0000:01:00.7", "0000:01:00.7"},
      {"0000:01:20.0", std::nullopt},
      {"0000:01:00.8", std::nullopt},
      {"10de:26b5", std::nullopt},
      {"", std::nullopt},
      {"1:2:3:4", std::nullopt},
      {"0000:zz:00.0", std::nullopt},
      {"000000000:01:00.0", std::nullopt},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK(gpuenv::probe::canonical_pci_bus_id(row.text) == row.canonical);
  }
}

TEST_CASE("parse_xid_events: RmInitAdapter failures name the GPU that did not initialise", "[probe]") {
  const std::string log =
      "Dec  1 03:01:13 ip-10-0-1-23 kernel: [   13.482051] NVRM: GPU 0000:a0:1d.0: RmInitAdapter failed! "
      "(0x26:0xffff:1529)\n"
      "Dec  1 03:01:13 ip-10-0-1-23 kernel: [   13.482110] NVRM: GPU 0000:a0:1d.0: rm_init_adapter failed, device "
      "minor number 7\n"
      "[   12.101010] NVRM: RmInitAdapter failed! (0x31:0x40:2452)\n"
      "[   12.101020] NVRM: rm_init_adapter failed for device bearing minor number 0\n"
      "[   12.200000] NVRM: GPU 0000:3b:00.0: RmInitAdapterRetry ok\n";
  const KernelLogScan scan = parse_xid_events(log);
  REQUIRE(scan.events.size() == 4);
  for (const KernelEvent& event : scan.events) CHECK(event.kind == KernelEventKind::init_failed);
  CHECK(scan.events[0].pci_bus_id == "0000:a0:1d.0");
  CHECK(scan.events[0].message == "GPU 0000:a0:1d.0: RmInitAdapter failed! (0x26:0xffff:1529)");
  CHECK(scan.events[0].timestamp == "Dec  1 03:01:13");  // the syslog prefix, as for Xid lines
  CHECK(scan.events[1].pci_bus_id == "0000:a0:1d.0");
  CHECK(scan.events[2].pci_bus_id.empty());
  CHECK(scan.events[3].line_number == 4);
  CHECK(gpuenv::probe::to_string(KernelEventKind::init_failed) == "init_failed");
}
