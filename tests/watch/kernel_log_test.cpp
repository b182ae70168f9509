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
