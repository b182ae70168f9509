// NVSwitch SXid lines in kernel logs and the SXid table (data/sxid.toml).

#include "probe/sxid.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <set>
#include <string>

#include "support/fake_system.hpp"

using gpuenv::probe::parse_sxid_events;
using gpuenv::probe::XidSeverity;
using gpuenv::testing::read_fixture;

TEST_CASE("parse_sxid_events: the headlines of a real Xid 79 + SXid 20034 log, detail lines left out",
          "[probe][sxid]") {
  // leptonai/gpud components/accelerator/nvidia/sxid/README.md @ 4a8de33a: a GPU fell off the bus and three NVSwitches
  // reported their links to it down (tests/fixtures/probe/sxid-xid79-h100.log).
  const auto events = parse_sxid_events(read_fixture("probe/sxid-xid79-h100.log"));
  REQUIRE(events.size() == 4);
  CHECK(events[0].code == 20034);
  CHECK(events[0].nvswitch == "nvidia-nvswitch1");
  CHECK(events[0].pci_bus_id == "0000:06:00.0");
  CHECK(events[0].fatal);
  CHECK(events[0].message == "Link 48 LTSSM Fault Up");
  CHECK(events[0].timestamp == "6781753.400584");
  CHECK(events[0].line_number == 6);
  CHECK(events[1].pci_bus_id == "0000:05:00.0");
  CHECK(events[1].message == "Link 63 LTSSM Fault Up");
  CHECK(events[2].nvswitch == "nvidia-nvswitch2");
  CHECK(events[2].message == "Link 37 LTSSM Fault Up");
  CHECK(events[3].message == "Link 62 LTSSM Fault Up");
  // The Xid of the same log is still the Xid parser's.
  const auto xids = gpuenv::probe::parse_xid_events(read_fixture("probe/sxid-xid79-h100.log"));
  REQUIRE_FALSE(xids.events.empty());
  CHECK(xids.events.front().xid == 79);
}

TEST_CASE("parse_sxid_events: non-fatal headlines, syslog prefixes, CRLF, lines that only look alike",
          "[probe][sxid]") {
  // The headline format of NVIDIA's driver as gpud's kmsg tests quote it (sxid/kmsg_test.go @ 4a8de33a), under a
  // syslog prefix and with a CRLF line end.
  const std::string log =
      "Feb  5 13:09:34 node kernel: [131453.740743] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, "
      "Link 32 egress non-posted PRIV error (First)\r\n"
      "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM Fault Up\n"
      "[ 17256.647980] nvidia-nvswitch: Probing device 0000:08:00.0, Vendor Id = 0x10de, Device Id = 0x22a3\n"
      "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): notanumber, Fatal, x\n";
  const auto events = parse_sxid_events(log);
  REQUIRE(events.size() == 2);
  CHECK(events[0].code == 12028);
  CHECK_FALSE(events[0].fatal);
  CHECK(events[0].message == "Link 32 egress non-posted PRIV error (First)");
  CHECK(events[0].timestamp == "131453.740743");
  CHECK(events[1].code == 20034);
  CHECK(events[1].timestamp.empty());
  CHECK(parse_sxid_events("").empty());
}

TEST_CASE("sxid_events_from_kmsg: headlines of the kernel's own records, not a user's record that looks alike",
          "[probe][sxid]") {
  // The gpud log's lines (fixture above) as /dev/kmsg gives them (Documentation/ABI/testing/dev-kmsg:
  // "<prio>,<seq>,<usec>,<flags>;<text>"); prio 3 is facility 0 (the kernel), 11 = facility 1 (LOG_USER), what a
  // process writing to /dev/kmsg gets even when it asks for facility 0 (printk.c devkmsg_write).
  const auto records = gpuenv::probe::parse_kmsg(
      "3,1001,6781753400584,-;nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up\n"
      "11,1002,6781753404587,-;nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 63 LTSSM Fault Up\n"
      "3,1003,6781753404848,-;nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 "
      "Sub-engine instance 00\n"
      "4,1004,6781753407899,c;nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 37 egress "
      "non-posted PRIV error (First)\n");
  REQUIRE(records.records.size() == 4);
  const auto events = gpuenv::probe::sxid_events_from_kmsg(records.records);
  REQUIRE(events.size() == 2);
  CHECK(events[0].code == 20034);
  CHECK(events[0].nvswitch == "nvidia-nvswitch1");
  CHECK(events[0].pci_bus_id == "0000:06:00.0");
  CHECK(events[0].fatal);
  CHECK(events[0].timestamp == "6781753.400584");
  CHECK(events[0].line_number == 1);
  CHECK(events[1].code == 12028);
  CHECK_FALSE(events[1].fatal);
  CHECK(events[1].message == "Link 37 egress non-posted PRIV error (First)");
  CHECK(events[1].line_number == 4);
}

TEST_CASE("SXid table: parses, every row sourced, severity follows the rule in the file's header", "[probe][sxid]") {
  auto table = gpuenv::probe::load_sxid_table({});
  REQUIRE(table);
  CHECK(table->size() >= 90);
  std::set<std::string> categories;
  for (const auto& row : *table) {
    INFO("SXid " << row.code);
    categories.insert(row.category);
    CHECK_FALSE(row.source.empty());
    XidSeverity expected = XidSeverity::warning;
    if (row.category == "always_fatal" || row.code == 10003) {
      expected = XidSeverity::critical;
    } else if (row.category == "fatal" || row.gpud_fatal) {
      expected = XidSeverity::error;
    } else if (row.name == "Single bit ECC errors" || row.code == 22013) {
      expected = XidSeverity::info;
    }
    CHECK(row.severity == expected);
  }
  CHECK(categories == std::set<std::string>{"non_fatal", "fatal", "always_fatal", "notable", "other"});
  // Spot checks against the guide's sections as gpud copies them.
  CHECK(gpuenv::probe::sxid_info(20034)->category == "fatal");
  CHECK(gpuenv::probe::sxid_info(23001)->severity == XidSeverity::critical);
  CHECK(gpuenv::probe::sxid_info(11012)->severity == XidSeverity::info);
  CHECK_FALSE(gpuenv::probe::sxid_info(99999));
}

TEST_CASE("SXid table: a duplicate code or an unknown category is an error naming the row", "[probe][sxid]") {
  const std::string row =
      "[[sxid]]\ncode = 1\nname = \"n\"\ncategory = \"fatal\"\nseverity = \"error\"\naction = \"a\"\nrecovery = "
      "\"r\"\ngpud = \"fatal\"\nstatus = \"secondary\"\nsource = \"s\"\n";
  CHECK(gpuenv::probe::parse_sxid_table(row));
  auto twice = gpuenv::probe::parse_sxid_table(row + row);
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message.find("appears twice") != std::string::npos);
  std::string bad = row;
  bad.replace(bad.find("\"fatal\"\nseverity"), 7, "\"fatl\"");
  auto unknown = gpuenv::probe::parse_sxid_table(bad);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message.find("category") != std::string::npos);
}

TEST_CASE("judge_sxid: the driver's Fatal fails, a secondary row's error severity warns at most", "[probe][sxid]") {
  using gpuenv::probe::judge_sxid;
  using gpuenv::probe::SxidInfo;
  using gpuenv::probe::SxidJudgement;
  const auto row = [](XidSeverity severity, bool verified) {
    SxidInfo info;
    info.code = 12028;
    info.severity = severity;
    info.verified = verified;
    return std::optional<SxidInfo>(info);
  };
  const struct {
    std::optional<SxidInfo> info;
    bool driver_fatal;
    SxidJudgement expected;
  } cases[] = {
      {row(XidSeverity::critical, false), true, SxidJudgement::fail},
      {row(XidSeverity::critical, false), false, SxidJudgement::warn},  // secondary: the table alone never fails
      {row(XidSeverity::error, false), false, SxidJudgement::warn},
      {row(XidSeverity::error, true), false, SxidJudgement::fail},  // a verified row's error fails
      {row(XidSeverity::warning, true), false, SxidJudgement::warn},
      {row(XidSeverity::info, false), false, SxidJudgement::pass},
      {row(XidSeverity::info, false), true, SxidJudgement::fail},  // the driver's own word wins
      {std::nullopt, false, SxidJudgement::warn},
      {std::nullopt, true, SxidJudgement::fail},
  };
  for (const auto& c : cases) {
    INFO("severity " << (c.info ? static_cast<int>(c.info->severity) : -1) << ", fatal " << c.driver_fatal);
    CHECK(judge_sxid(c.info, c.driver_fatal) == c.expected);
  }
  // Every row of the shipped table is secondary (gpud's copy of the guide): none fails a node on its own.
  for (int code : {11004, 12028, 19084, 20034}) {
    INFO("SXid " << code);
    const auto info = gpuenv::probe::sxid_info(code);
    REQUIRE(info);
    CHECK_FALSE(info->verified);
  }
}
