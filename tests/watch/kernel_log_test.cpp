// The watch's kernel-log follower on the kernel's own records: as root gpuenv reads /dev/kmsg (issue 30), whose
// records carry a sequence number ("<prio>,<seq>,<usec>,<flags>;<text>", Documentation/ABI/testing/dev-kmsg), so a
// record that repeats an earlier one's text is still new.

#include "watch/kernel_log.hpp"

#include <catch2/catch.hpp>

#include "support/fake_system.hpp"

using gpuenv::testing::FakeSystem;
using gpuenv::watch::KernelLogFollower;

namespace {

// An Xid 119 as the driver logs it (leptonai/gpud testdata, tests/fixtures/probe/errors), as a /dev/kmsg record of
// the kernel's facility (priority 4: facility 0, level warning).
std::string xid_119_record(int sequence) {
  return "4," + std::to_string(sequence) +
         ",437812449,-;NVRM: Xid (PCI:0000:3b:00): 119, pid=1234, name=python, Timeout after 6s of waiting for RPC "
         "response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).\n";
}

}  // namespace

TEST_CASE("watch: the kernel-log follower reads /dev/kmsg records and reports each new Xid record once", "[watch]") {
  FakeSystem system;
  system.files["/dev/kmsg"] = "5,0,0,-;Linux version 6.1.0-18-cloud-amd64\n" + xid_119_record(1);
  KernelLogFollower follower;
  CHECK(follower.poll(system, 1000).empty());  // the first poll learns what the log already holds
  CHECK(follower.readable());
  CHECK(follower.source() == "/dev/kmsg");

  system.files["/dev/kmsg"] += xid_119_record(2);  // the same text again: a new record
  const auto records = follower.poll(system, 2000);
  REQUIRE(records.size() == 1);
  CHECK(records[0].kind == "xid");
  CHECK(records[0].code == 119);
  CHECK(records[0].pci_bus_id.find("3b:00") != std::string::npos);
  CHECK(records[0].time_ms == 2000);

  CHECK(follower.poll(system, 3000).empty());  // nothing new since
}

// NVSwitch SXid headlines as gpud's SXid README quotes them after an Xid 79 (tests/fixtures/probe/sxid-xid79-h100.log,
// SOURCES.md): "nvidia-nvswitchN: SXid (PCI:...): 20034, Fatal, Link 48 LTSSM Fault Up", with detail lines ("Severity
// 1 ...", "Data {...}") that are not headlines. As /dev/kmsg records of the kernel's facility.
TEST_CASE("watch: the kernel-log follower reports each new NVSwitch SXid headline once, not its detail lines",
          "[watch]") {
  FakeSystem system;
  const std::string log = gpuenv::testing::read_fixture("probe/sxid-xid79-h100.log");
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < log.size();) {
    const std::size_t end = log.find('\n', at);
    lines.push_back(log.substr(at, end - at));
    at = end == std::string::npos ? log.size() : end + 1;
  }
  const auto kmsg = [&](std::size_t count) {
    std::string out;
    for (std::size_t i = 0; i < count && i < lines.size(); ++i) {
      const std::string& line = lines[i];
      const std::size_t close = line.find("] ");
      // "[6781753.400584] text" -> "4,<seq>,<usec>,-;text"
      const std::string usec =
          line.substr(1, line.find('.') - 1) + line.substr(line.find('.') + 1, close - line.find('.') - 1);
      out += "4," + std::to_string(i) + "," + usec + ",-;" + line.substr(close + 2) + "\n";
    }
    return out;
  };
  system.files["/dev/kmsg"] = kmsg(5);  // the Xid 79 lines only
  KernelLogFollower follower;
  CHECK(follower.poll(system, 1000).empty());
  system.files["/dev/kmsg"] = kmsg(lines.size());
  const auto records = follower.poll(system, 2000);
  std::vector<std::string> sxids;
  for (const auto& record : records) {
    if (record.kind == "sxid") sxids.push_back(record.pci_bus_id + " " + std::to_string(record.code.value_or(0)));
  }
  // Four headlines (switches 1, 0, 2, 0); the "Severity" and "Data" detail lines are not SXid events.
  CHECK(sxids == std::vector<std::string>{"0000:06:00.0 20034", "0000:05:00.0 20034", "0000:07:00.0 20034",
                                          "0000:05:00.0 20034"});
  CHECK(follower.poll(system, 3000).empty());
}
