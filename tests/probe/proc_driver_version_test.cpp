#include "probe/proc_driver_version.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "support/fake_system.hpp"

using gpuenv::probe::parse_kernel_module_banner;
using gpuenv::probe::parse_proc_driver_version;
using gpuenv::testing::read_fixture;

TEST_CASE("/proc/driver/nvidia/version: proprietary and open kernel module banners", "[probe][proc-version]") {
  struct Row {
    const char* file;
    const char* version;
    bool open_module;
    const char* architecture;
    const char* build_info;
    std::optional<std::string> gcc_version;
  };
  const Row rows[] = {
      {"driver-460.39_ubuntu-18.04_gcc-7.5.0.txt", "460.39", false, "x86_64", "Thu Jan 21 21:54:06 UTC 2021", "7.5.0"},
      {"open-kernel-module_525.60.11_x86_64_archlinux-dkms_gcc-12.2.0.txt", "525.60.11", true, "x86_64",
       "Release Build  (archlinux-builder@localhost)", "12.2.0"},
      // Only the NVRM line was captured, and its build date is in Russian (UTF-8 bytes kept as they are).
      {"open-kernel-module_555.58_x86_64_gentoo_localized-date_first-line-only.txt", "555.58", true, "x86_64",
       "Release Build  (portage@localhost)  \xd0\xa1\xd0\xb1 29 \xd0\xb8\xd1\x8e\xd0\xbd 2024 14:36:22 MSK",
       std::nullopt},
      {"open-kernel-module_565.57.01_x86_64_ubuntu-24.04_gcc-13.3.0.txt", "565.57.01", true, "x86_64",
       "Release Build  (dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024", "13.3.0"},
  };
  for (const Row& row : rows) {
    INFO(row.file);
    const auto parsed = parse_proc_driver_version(read_fixture(std::string("probe/proc-version/") + row.file));
    REQUIRE(parsed.has_value());
    CHECK(parsed->module.version == row.version);
    CHECK(parsed->module.open_module == row.open_module);
    CHECK(parsed->module.architecture == row.architecture);
    CHECK(parsed->module.build_info == row.build_info);
    CHECK(parsed->gcc_version == row.gcc_version);
  }
  const auto gcc =
      parse_proc_driver_version(read_fixture("probe/proc-version/driver-460.39_ubuntu-18.04_gcc-7.5.0.txt"));
  REQUIRE(gcc.has_value());
  CHECK(gcc->gcc_line == "gcc version 7.5.0 (Ubuntu 7.5.0-3ubuntu1~18.04)");
}

TEST_CASE("/proc/driver/nvidia/version: CRLF, aarch64 and the dmesg loading banner", "[probe][proc-version]") {
  // Written for the test from the fixture's shape: CRLF endings and an aarch64 proprietary module.
  const auto crlf = parse_proc_driver_version(
      "NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.127.05  Tue Oct  8 03:21:37 UTC 2024\r\n"
      "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\r\n");
  REQUIRE(crlf.has_value());
  CHECK(crlf->module.version == "550.127.05");
  CHECK(crlf->module.architecture == "aarch64");
  CHECK_FALSE(crlf->module.open_module);
  CHECK(crlf->gcc_version == "11.4.0");
  // The same banner after "NVRM: loading " in the kernel log (fixture dmesg-kmsg_nvrm-driver-load-unload).
  const auto banner =
      parse_kernel_module_banner("NVIDIA UNIX x86_64 Kernel Module  550.144.03  Mon Dec 30 17:44:08 UTC 2024");
  REQUIRE(banner.has_value());
  CHECK(banner->version == "550.144.03");
  CHECK(banner->build_info == "Mon Dec 30 17:44:08 UTC 2024");
}

TEST_CASE("/proc/driver/nvidia/version: malformed text is an Error", "[probe][proc-version]") {
  const char* bad[] = {
      "",
      "GCC version:  gcc version 7.5.0\n",
      "NVRM version:\n",
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module\n",
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  Thu Jan 21 21:54:06 UTC 2021\n",
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64\n",
      "NVRM version: nouveau\n",
      "\x01\x02\xff garbage \n\n\r\n",
  };
  for (const char* text : bad) {
    INFO(text);
    CHECK_FALSE(parse_proc_driver_version(text).has_value());
  }
  // Every truncation of a real file either fails or yields the version printed so far, never a crash.
  const std::string whole =
      read_fixture("probe/proc-version/open-kernel-module_565.57.01_x86_64_ubuntu-24.04_gcc-13.3.0.txt");
  for (std::size_t cut = 0; cut <= whole.size(); ++cut) {
    const auto parsed = parse_proc_driver_version(whole.substr(0, cut));
    if (parsed) CHECK_THAT(std::string("565.57.01"), Catch::StartsWith(parsed->module.version));
  }
}
