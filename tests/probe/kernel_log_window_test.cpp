// The --since kernel-log window: timestamps of dmesg and syslog lines, since-boot cuts at the boot banner, and
// duration windows by timestamp, through the collector as well.

#include "probe/kernel_log_window.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "probe/collect.hpp"
#include "support/fake_system.hpp"

using gpuenv::probe::log_file_since;
using gpuenv::probe::log_file_since_boot;
using gpuenv::probe::syslog_seconds;

namespace {

// 2026-12-01T05:00:00Z
constexpr std::int64_t k_now = 1796101200;

const std::string k_two_boots =
    "Nov 30 22:00:00 node kernel: [    0.000000] Linux version 5.15.0-119-generic (buildd@lcy02)\n"
    "Nov 30 22:10:00 node kernel: [  600.100000] NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n"
    "Dec  1 02:00:00 node kernel: [    0.000000] Linux version 5.15.0-119-generic (buildd@lcy02)\n"
    "Dec  1 02:00:05 node kernel: [    5.000000] nvidia: loading out-of-tree module taints kernel.\n"
    "  a continuation line without a stamp\n"
    "Dec  1 04:30:00 node kernel: [ 9000.000000] NVRM: Xid (PCI:0000:17:00): 13, pid=2, Graphics Exception\n";

}  // namespace

TEST_CASE("syslog_seconds: RFC 3339 with its zone, BSD stamps in the given year as UTC", "[probe]") {
  CHECK(syslog_seconds("2026-12-01T05:00:00+00:00 node kernel: x", 2026) == k_now);
  CHECK(syslog_seconds("2026-12-01T06:00:00.123456+01:00 node kernel: x", 2026) == k_now);
  CHECK(syslog_seconds("Dec  1 05:00:00 node kernel: x", 2026) == k_now);
  CHECK(syslog_seconds("Dec 01 05:00:00 node kernel: x", 2026) == k_now);
  CHECK_FALSE(syslog_seconds("[   12.5] NVRM: x", 2026));
  CHECK_FALSE(syslog_seconds("Foo  1 05:00:00 node", 2026));
  CHECK(gpuenv::probe::dmesg_seconds("[   13.482051] NVRM: x") == Approx(13.482051));
  CHECK_FALSE(gpuenv::probe::dmesg_seconds("NVRM: x"));
  CHECK(gpuenv::probe::iso_utc(k_now) == "2026-12-01T05:00:00Z");
}

TEST_CASE("log_file_since_boot: from the last boot banner, the whole file without one", "[probe]") {
  const auto window = log_file_since_boot(k_two_boots);
  CHECK(window.how == "since the last boot");
  CHECK(window.text.find("Dec  1 02:00:00") == 0);
  CHECK(window.text.find("fallen off the bus") == std::string::npos);  // the previous boot's Xid 79 is gone
  CHECK(window.text.find("Graphics Exception") != std::string::npos);

  const auto none = log_file_since_boot("Dec  1 02:00:05 node kernel: [5.0] NVRM: x\n");
  CHECK(none.how == "whole file: it has no boot line");
  CHECK(none.text == "Dec  1 02:00:05 node kernel: [5.0] NVRM: x\n");
}

TEST_CASE("log_file_since and dmesg_since: by timestamp, unstamped lines following the line before", "[probe]") {
  const auto last_hour = log_file_since(k_two_boots, k_now - 3600, k_now);
  CHECK(last_hour.how == "since 2026-12-01T04:00:00Z");
  CHECK(last_hour.text ==
        "Dec  1 04:30:00 node kernel: [ 9000.000000] NVRM: Xid (PCI:0000:17:00): 13, pid=2, Graphics Exception\n");
  const auto four_hours = log_file_since(k_two_boots, k_now - 4 * 3600, k_now);
  CHECK(four_hours.text.find("  a continuation line") != std::string::npos);
  CHECK(four_hours.text.find("fallen off the bus") == std::string::npos);
  // A BSD stamp later than now belongs to last year: Dec 31 read on Jan 1 is yesterday, not next December.
  const std::int64_t new_year = 1798761600;  // 2027-01-01T00:00:00Z
  CHECK(log_file_since("Dec 31 23:30:00 node kernel: x\n", new_year - 3600, new_year).text ==
        "Dec 31 23:30:00 node kernel: x\n");

  const std::string dmesg = "[    5.0] a\n[  100.0] b\ncontinued\n[  200.5] c\n";
  CHECK(gpuenv::probe::dmesg_since(dmesg, 100.0) == "[  100.0] b\ncontinued\n[  200.5] c\n");
  CHECK(gpuenv::probe::dmesg_since(dmesg, 0) == dmesg);
}

TEST_CASE("collect_host_facts: --since narrows the kernel log doctor judges, and says how", "[probe]") {
  gpuenv::testing::FakeSystem system;
  system.files["/var/log/kern.log"] = k_two_boots;
  gpuenv::probe::CollectOptions options;
  options.live = false;
  options.now_unix = k_now;
  auto facts = gpuenv::probe::collect_host_facts(system, options);
  CHECK(facts.kernel_log_source ==
        "/var/log/kern.log (since the last boot; kernel-tagged lines, which a local user can forge)");
  REQUIRE(facts.kernel_events.size() == 1);  // Xid 13 only: Xid 79 was in the boot before
  CHECK(facts.kernel_events[0].xid == 13);

  options.kernel_log_since = std::chrono::hours(1);
  facts = gpuenv::probe::collect_host_facts(system, options);
  CHECK(facts.kernel_log_source ==
        "/var/log/kern.log (since 2026-12-01T04:00:00Z; kernel-tagged lines, which a local user can forge)");
  CHECK(facts.kernel_events.size() == 1);
  options.kernel_log_since = std::chrono::minutes(10);
  facts = gpuenv::probe::collect_host_facts(system, options);
  CHECK(facts.kernel_events.empty());

  // Live: dmesg is since boot already; a duration cuts it by /proc/uptime.
  gpuenv::testing::FakeSystem live;
  live.commands["dmesg"] = {0, false, false,
                            "[  600.1] NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n"
                            "[ 9000.0] NVRM: Xid (PCI:0000:17:00): 13, pid=2, Graphics Exception\n",
                            ""};
  live.files["/proc/uptime"] = "9100.00 12345.00\n";
  options.live = true;
  options.kernel_log_since = std::chrono::minutes(10);
  facts = gpuenv::probe::collect_host_facts(live, options);
  CHECK(facts.kernel_log_source == "dmesg (last 600 s; text, not the kernel's records: /dev/kmsg unreadable)");
  REQUIRE(facts.kernel_events.size() == 1);
  CHECK(facts.kernel_events[0].xid == 13);
  options.kernel_log_since.reset();
  facts = gpuenv::probe::collect_host_facts(live, options);
  CHECK(facts.kernel_log_source == "dmesg (text, not the kernel's records: /dev/kmsg unreadable)");
  CHECK(facts.kernel_events.size() == 2);

  // /dev/kmsg first: the kernel's records, cut by their microseconds since boot.
  live.files["/dev/kmsg"] =
      "4,900,600100000,c;NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n"
      "4,901,9000000000,c;NVRM: Xid (PCI:0000:17:00): 13, pid=2, Graphics Exception\n";
  facts = gpuenv::probe::collect_host_facts(live, options);
  CHECK(facts.kernel_log_source == "/dev/kmsg");
  CHECK(facts.kernel_events.size() == 2);
  options.kernel_log_since = std::chrono::minutes(10);
  facts = gpuenv::probe::collect_host_facts(live, options);
  CHECK(facts.kernel_log_source == "/dev/kmsg (last 600 s)");
  REQUIRE(facts.kernel_events.size() == 1);
  CHECK(facts.kernel_events[0].xid == 13);
  CHECK(facts.kernel_events[0].timestamp == "9000.000000");
}

TEST_CASE("log_file_since_boot: only the kernel's own banner starts a boot, not a user's line that contains it",
          "[probe][security]") {
  // Issue 30 item 2: a user line after a real Xid that contains "] Linux version " made --since boot forget the Xid.
  const std::string forged = k_two_boots +
                             "Dec  1 04:40:00 node mallory: ] Linux version 9.9.9\n"
                             "Dec  1 04:41:00 node kernel: [ 9100.000000] audit: x ] Linux version 9.9.9\n"
                             "  [    0.000000] Linux version 9.9.9 (an indented continuation line)\n";
  const auto window = log_file_since_boot(forged);
  CHECK(window.how == "since the last boot");
  CHECK(window.text.find("Dec  1 02:00:00") == 0);  // still the real banner of this boot
  CHECK(window.text.find("Graphics Exception") != std::string::npos);
  // The kernel's banner in the other shapes still counts (init/version.c linux_banner: "Linux version %s ...").
  CHECK(log_file_since_boot("a\nDec  1 02:00:00 node kernel: Linux version 6.1.0\nb\n").text.find("Dec  1") == 0);
  CHECK(log_file_since_boot("a\n2026-12-01T02:00:00.000000+00:00 node kernel: Linux version 6.1.0\nb\n")
            .text.find("2026") == 0);
}
