// The /dev/kmsg record parser against records captured from a real kernel (tests/fixtures/probe/kmsg, SOURCES.md),
// the format's documented corners (Documentation/ABI/testing/dev-kmsg), and, as root, the running kernel itself.

#include "probe/kmsg.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <random>
#include <string>

#include "probe/xid.hpp"
#include "support/fake_system.hpp"
#include "support/skip.hpp"
#include "system/system.hpp"

using gpuenv::probe::kmsg_message_lines;
using gpuenv::probe::parse_kmsg;
using gpuenv::probe::parse_kmsg_record;

TEST_CASE("kmsg: records captured from Linux 6.18 parse whole, dictionary lines attached", "[probe][kmsg]") {
  const auto parsed = parse_kmsg(gpuenv::testing::read_fixture("probe/kmsg/dev-kmsg_linux-6.18-firecracker.log"));
  CHECK(parsed.malformed == 0);
  REQUIRE(parsed.records.size() == 22);
  const auto& banner = parsed.records[0];
  CHECK(banner.facility == 0);
  CHECK(banner.level == 5);
  CHECK(banner.sequence == 0);
  CHECK(banner.microseconds == 0);
  CHECK(banner.flags == "-");
  CHECK(banner.from_kernel());
  CHECK(banner.text.rfind("Linux version 6.18.44-fc-v1147 ", 0) == 0);
  std::size_t with_dictionary = 0;
  std::size_t escaped = 0;
  for (const auto& record : parsed.records) {
    CHECK(record.from_kernel());
    if (!record.dictionary.empty()) {
      ++with_dictionary;
      CHECK(record.dictionary[0].rfind("SUBSYSTEM=", 0) == 0);
    }
    if (record.text.find("\\x09") != std::string::npos) ++escaped;
  }
  CHECK(with_dictionary == 5);
  CHECK(escaped == 5);
}

TEST_CASE("kmsg: the header's fields, future fields ignored, and what is not a record", "[probe][kmsg]") {
  // "4,1227,437812449,c;..." is DCGM's test record for an Xid (NVIDIA/DCGM dcgmlib/src/tests/DcgmKmsgReaderTests.cpp);
  // printk.c info_print_ext_header prints ",caller=T123" with CONFIG_PRINTK_CALLER; dev-kmsg: "Future extensions
  // might add more comma separated values before the terminating ';'".
  const auto xid = parse_kmsg_record("4,1227,437812449,c,caller=T1814139;NVRM: Xid (PCI:0000:01:00): 43, a;b\n");
  REQUIRE(xid);
  CHECK(xid->facility == 0);
  CHECK(xid->level == 4);
  CHECK(xid->sequence == 1227);
  CHECK(xid->microseconds == 437812449);
  CHECK(xid->flags == "c");
  CHECK(xid->text == "NVRM: Xid (PCI:0000:01:00): 43, a;b");  // the first ';' ends the header
  const auto user = parse_kmsg_record("12,5,6,-;from a process");
  REQUIRE(user);
  CHECK(user->facility == 1);
  CHECK_FALSE(user->from_kernel());
  for (const char* bad : {"", "no header", "4,1;x", "x,1,2,-;y", "4,1,2", "-4,1,2,-;x",
                          "4,1,99999999999999999999999,-;x", "99999,1,2,-;x"}) {
    INFO(bad);
    CHECK_FALSE(parse_kmsg_record(bad));
  }
  const auto parsed = parse_kmsg(" DEVICE=+pci:0000:3b:00.0\ngarbage\n6,1,2,-;ok\n SUBSYSTEM=pci\n");
  CHECK(parsed.malformed == 2);
  REQUIRE(parsed.records.size() == 1);
  CHECK(parsed.records[0].dictionary == std::vector<std::string>{"SUBSYSTEM=pci"});
}

TEST_CASE("kmsg: a message's lines split only at the kernel's escaped line breaks", "[probe][kmsg]") {
  // NVIDIA's fallen-off-the-bus message is one printk with two line breaks (nv.c: "NVRM: The NVIDIA GPU %04x:...\n
  // NVRM: (PCI ID: %04x:%04x) installed in this system has\nNVRM: fallen off the bus ..."); a backslash of the text
  // itself is escaped as \x5c, so "\x0a" can only be a line break.
  const auto lines = kmsg_message_lines(
      "NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: (PCI ID: 10de:26b5) installed in this system has\\x0aNVRM: fallen "
      "off the bus and is not responding to commands.");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "NVRM: The NVIDIA GPU 0000:b3:00.0");
  CHECK(lines[2] == "NVRM: fallen off the bus and is not responding to commands.");
  // A user's literal "\x0a" reaches the log as "\x5cx0a" (the backslash escaped): no line break.
  CHECK(kmsg_message_lines("a\\x5cx0ab").size() == 1);
  CHECK(kmsg_message_lines("").size() == 1);
  CHECK(gpuenv::probe::kmsg_seconds_text(184467200) == "184.467200");

  const auto fallen = gpuenv::probe::kernel_events_from_kmsg(
      parse_kmsg("3,900,1843308145,c;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: (PCI ID: 10de:26b5) installed in "
                 "this system has\\x0aNVRM: fallen off the bus and is not responding to commands.\n")
          .records);
  REQUIRE(fallen.events.size() == 1);
  CHECK(fallen.events[0].kind == gpuenv::probe::KernelEventKind::fallen_off_bus);
  CHECK(fallen.events[0].pci_bus_id == "0000:b3:00.0");
}

TEST_CASE("/dev/kmsg on this machine: a write asking for the kernel's facility is stored as a user's",
          "[probe][kmsg][security][system-test]") {
  GPUENV_SKIP_UNLESS(::geteuid() == 0, "writing to /dev/kmsg needs root");
  std::ofstream device("/dev/kmsg");
  GPUENV_SKIP_UNLESS(device, "no /dev/kmsg to write to (a container)");
  // A marker no reader of this shared machine's log mistakes for anything (no "NVRM"), with a line break in it.
  const std::string marker =
      "gpuenv-kmsg-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device()());
  // "<6>": LOG_KERN (0) << 3 | info. The final newline ends the record: the ring buffer lets readers see a record
  // only once it is finalized, and one without it stays open for a continuation until the next message.
  device << "<6>" << marker << " first\nsecond\n" << std::flush;
  device.close();
  auto real = gpuenv::system::make_real_system();
  const auto text = real->read_kernel_messages();
  REQUIRE(text);
  const auto parsed = parse_kmsg(*text);
  CHECK(parsed.malformed == 0);
  const gpuenv::probe::KmsgRecord* found = nullptr;
  for (const auto& record : parsed.records) {
    if (record.text.find(marker) != std::string::npos) found = &record;
  }
  GPUENV_SKIP_UNLESS(found != nullptr, "the kernel dropped the write (printk.devkmsg=off or its rate limit)");
  CHECK(found->facility == 1);  // LOG_USER: dev-kmsg, "not possible to inject ... LOG_KERN (0)"
  CHECK_FALSE(found->from_kernel());
  CHECK(found->level == 6);
  CHECK(found->text == marker + " first\\x0asecond");  // one record, the line break escaped
}
