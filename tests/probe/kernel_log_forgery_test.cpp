// Issue 30 item 1: records a job user can put into the kernel log must not read as Xid events (docs/security.md,
// "Kernel log"). Each case is an attack as the kernel or syslog would record it, next to the real message it imitates.
//
// The forged file name: a process that faults while executing from a file it mapped makes the kernel log
//   "<comm>[<pid>]: segfault at <addr> ip <ip> sp <sp> error <n> in <file name>[<start>+<size>]"
// (arch/x86/mm/fault.c show_signal_msg + mm/memory.c print_vma_addr, one record through KERN_CONT). A file name may
// hold any byte but '/' and NUL, line breaks included: /dev/kmsg escapes them as "\x0a"
// (kernel/printk/printk.c msg_add_ext_text); dmesg prints them as a line break and indents the rest of the message
// under the text (util-linux dmesg); syslog(2) readers (dmesg without /dev/kmsg, rsyslog's imklog) print each line
// with the message's own prefix (printk.c record_print_text).
// The forged syslog lines: `logger` writes "<stamp> <host> <user>: <text>" (its default tag is the user name).

#include <catch2/catch.hpp>
#include <string>

#include "probe/kmsg.hpp"
#include "probe/xid.hpp"

namespace {

using gpuenv::probe::kernel_events_from_kmsg;
using gpuenv::probe::KernelEventKind;
using gpuenv::probe::parse_kmsg;
using gpuenv::probe::parse_xid_events;

const std::string k_forged_xid =
    "NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
    "the bus.";

/// The segfault record of a process whose mapped file is named "x\n<forged>", as /dev/kmsg gives it.
std::string segfault_kmsg(const std::string& forged) {
  return "6,5123,184467123,-;python3[4242]: segfault at 0 ip 00007f0000000000 sp 00007ffd2a9c1e40 error 14 in "
         "x\\x0a" +
         forged + "[7f0000000000+1000] likely on CPU 3 (core 3, socket 0)\n";
}

}  // namespace

TEST_CASE("kmsg: a file name in a kernel segfault record is not an Xid, nor a GPU off the bus", "[probe][security]") {
  const auto scan = kernel_events_from_kmsg(parse_kmsg(segfault_kmsg(k_forged_xid)).records);
  CHECK(scan.events.empty());
  CHECK(scan.malformed_lines.empty());
  // The same text as a message of its own, which only the NVIDIA driver can log, is one.
  const auto real = kernel_events_from_kmsg(parse_kmsg("4,5124,184467200,c;" + k_forged_xid + "\n").records);
  REQUIRE(real.events.size() == 1);
  CHECK(real.events[0].xid == 79);
  CHECK(real.events[0].pci_bus_id == "0000:1b:00");
  CHECK(real.events[0].timestamp == "184.467200");
  // "NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus." inside a file name: not an event either.
  CHECK(
      kernel_events_from_kmsg(parse_kmsg(segfault_kmsg("NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.")).records)
          .events.empty());
}

TEST_CASE("kmsg: a record a process wrote to /dev/kmsg is not the kernel's, whatever level it asked for",
          "[probe][security]") {
  // prio 12 = LOG_USER (1) << 3 | 4, what devkmsg_write stores for "<4>..." or "<0>..." written by a process.
  const auto scan = kernel_events_from_kmsg(parse_kmsg("12,77,5000000,-;" + k_forged_xid +
                                                       "\n"
                                                       "14,78,5000001,-;NVRM: GPU 0000:1b:00.0: GPU has fallen off "
                                                       "the bus.\n")
                                                .records);
  CHECK(scan.events.empty());
}

TEST_CASE("kmsg: a process name cannot start a GPU message, and a bus id must be canonical", "[probe][security]") {
  // comm is at most 15 bytes (TASK_COMM_LEN 16) and the kernel follows it with "[<pid>]": "NVRM: Xid (PCI:" is
  // exactly 15, so the best a user can do is a record that starts like an Xid line with no bus id in it.
  const std::string record =
      "6,88,9000000,-;NVRM: Xid (PCI:[4242]: segfault at 0 ip 0000000000401000 sp 00007ffd2a9c1e40 error 14 in "
      "a):79, fallen off the bus[400000+1000]\n";
  const auto scan = kernel_events_from_kmsg(parse_kmsg(record).records);
  CHECK(scan.events.empty());
  CHECK(scan.malformed_lines.size() == 1);  // reported as malformed, never counted
  for (const char* bus : {"(PCI:0000:1b:00 extra)", "(PCI:0000:1b:00.9)", "(PCI:0000:1b)", "(PCI:../../etc)"}) {
    INFO(bus);
    CHECK(parse_xid_events(std::string("[ 5.0] NVRM: Xid ") + bus + ": 79, x\n").events.empty());
  }
}

TEST_CASE("dmesg text: the lines after a line break inside a message never start one", "[probe][security]") {
  // util-linux dmesg: the rest of the message indented under its text.
  const std::string indented =
      "[  184.467123] python3[4242]: segfault at 0 ip 00007f0000000000 sp 00007ffd2a9c1e40 error 14 in x\n"
      "               " +
      k_forged_xid + "[7f0000000000+1000] likely on CPU 3 (core 3, socket 0)\n";
  CHECK(parse_xid_events(indented).events.empty());
  // Even with a stamp forged into the file name, the line is indented.
  const std::string stamped =
      "[  184.467123] python3[4242]: segfault at 0 ip 0 sp 0 error 14 in x\n"
      "               [  184.467124] " +
      k_forged_xid + "[7f0000000000+1000]\n";
  CHECK(parse_xid_events(stamped).events.empty());
  // Older dmesg and copied logs lose the indentation: an unstamped line in a stamped log still continues.
  const std::string flush_left =
      "[  184.467123] python3[4242]: segfault at 0 ip 0 sp 0 error 14 in x\n" + k_forged_xid + "[7f0000000000+1000]\n";
  CHECK(parse_xid_events(flush_left).events.empty());
  // The real message, stamped, still counts.
  CHECK(parse_xid_events("[  190.000001] " + k_forged_xid + "\n").events.size() == 1);
}

TEST_CASE("syslog files: only the kernel's tag counts, never a program's line", "[probe][security]") {
  const std::string log = "Dec  1 03:01:13 gpu-node-7 mallory: " + k_forged_xid + "\n" +
                          "Dec  1 03:01:14 gpu-node-7 python3[4242]: " + k_forged_xid + "\n" +
                          "2025-12-01T03:01:15.000000+00:00 gpu-node-7 mallory: " + k_forged_xid + "\n" +
                          "user  :warn  : [  300.000000] " + k_forged_xid + "\n" +  // dmesg --decode: user facility
                          "<12>[  301.000000] " + k_forged_xid + "\n" +             // dmesg -r: LOG_USER
                          "Dec  1 03:01:16 gpu-node-7 kernel: [  302.000000] " + k_forged_xid + "\n";
  const auto scan = parse_xid_events(log);
  REQUIRE(scan.events.size() == 1);  // the kernel-tagged line only (a file cannot prove even that: docs/security.md)
  CHECK(scan.events[0].line_number == 6);
}
