#include "probe/host_info.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

using namespace gpuenv::probe;

// No host fixtures exist among the shared captures; every sample below is written for the test in the
// documented format of the file (os-release(5), proc(5), the UEFI SecureBoot variable).

TEST_CASE("os-release: quoted and unquoted values", "[probe][host]") {
  struct Row {
    const char* text;
    const char* id;
    const char* version_id;
    const char* pretty_name;
  };
  const Row rows[] = {
      {"PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nID=ubuntu\nID_LIKE=debian\n",
       "ubuntu", "22.04", "Ubuntu 22.04.4 LTS"},
      {"PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\r\nVERSION_ID=\"12\"\r\nID=debian\r\n", "debian", "12",
       "Debian GNU/Linux 12 (bookworm)"},
      {"NAME='Rocky Linux'\nID='rocky'\nVERSION_ID='9.3'\nPRETTY_NAME='Rocky Linux 9.3 (Blue Onyx)'\n", "rocky", "9.3",
       "Rocky Linux 9.3 (Blue Onyx)"},
      {"# comment\n\nID=arch\nPRETTY_NAME=\"Arch \\\"rolling\\\" Linux\"\nBUILD_ID=rolling\n", "arch", "",
       "Arch \"rolling\" Linux"},
      {"", "", "", ""},
      {"garbage line\n=novalue\nlower=case\nID\n\x01\xff=\x02\n", "", "", ""},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    const OsRelease release = parse_os_release(row.text);
    CHECK(release.id == row.id);
    CHECK(release.version_id == row.version_id);
    CHECK(release.pretty_name == row.pretty_name);
  }
  CHECK(parse_os_release(rows[0].text).fields.at("ID_LIKE") == "debian");
  CHECK(parse_os_release(rows[5].text).fields.empty());
}

TEST_CASE("/proc/meminfo MemTotal and /proc/cpuinfo processors", "[probe][host]") {
  CHECK(parse_meminfo_total_kib("MemTotal:       24683656 kB\nMemFree:        22050840 kB\n") == 24683656);
  CHECK(parse_meminfo_total_kib("MemFree:  1 kB\r\nMemTotal:  2097152 kB\r\n") == 2097152);
  CHECK_FALSE(parse_meminfo_total_kib("").has_value());
  CHECK_FALSE(parse_meminfo_total_kib("MemTotal: lots kB\n").has_value());
  CHECK_FALSE(parse_meminfo_total_kib("MemTotal:\n").has_value());

  const char* x86 =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)\n\n"
      "processor\t: 1\nvendor_id\t: GenuineIntel\n\nprocessor\t: 2\n\nprocessor\t: 3\n";
  CHECK(count_cpuinfo_processors(x86) == 4);
  CHECK(count_cpuinfo_processors("processor : 0\r\nBogoMIPS : 50.00\r\nprocessor : 1\r\n") == 2);
  CHECK(count_cpuinfo_processors("") == 0);
  CHECK(count_cpuinfo_processors("processors_online: 8\nmodel name: x\n") == 0);
}

TEST_CASE("/proc/modules: nvidia and nouveau", "[probe][host]") {
  const LoadedModules with_nvidia = parse_proc_modules(
      "nvidia_uvm 1761280 0 - Live 0x0000000000000000 (POE)\n"
      "nvidia_drm 77824 0 - Live 0x0000000000000000 (POE)\n"
      "nvidia_modeset 1302528 1 nvidia_drm, Live 0x0000000000000000 (POE)\n"
      "nvidia 56627200 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
      "drm_kms_helper 311296 1 nvidia_drm, Live 0x0000000000000000\n");
  CHECK(with_nvidia.names.size() == 5);
  CHECK(with_nvidia.nvidia());
  CHECK_FALSE(with_nvidia.nouveau());
  CHECK(with_nvidia.contains("nvidia_uvm"));
  CHECK_FALSE(with_nvidia.contains("nvidia_peermem"));

  const LoadedModules with_nouveau = parse_proc_modules(
      "nouveau 2433024 0 - Live 0x0000000000000000\r\nmxm_wmi 16384 1 nouveau, Live 0x0000000000000000\r\n");
  CHECK(with_nouveau.nouveau());
  CHECK_FALSE(with_nouveau.nvidia());  // "nvidia" is a whole name, not a prefix of nvidia_drm
  CHECK(parse_proc_modules("").names.empty());
  CHECK_FALSE(parse_proc_modules("nvidia_drm 1 0 - Live 0x0\n").nvidia());
}

TEST_CASE("Secure Boot efivar bytes", "[probe][host]") {
  using namespace std::string_literals;
  // Attributes 0x06 0x00 0x00 0x00 (boot-service and runtime access), then the value byte.
  struct Row {
    std::string bytes;
    bool enabled;
  };
  const Row rows[] = {
      {"\x06\x00\x00\x00\x01"s, true}, {"\x06\x00\x00\x00\x00"s, false}, {"\x16\x00\x00\x00\x01"s, true}};
  for (const Row& row : rows) {
    const auto state = parse_secure_boot_efivar(row.bytes);
    REQUIRE(state.has_value());
    CHECK(*state == row.enabled);
  }
  for (const std::string& bad : {""s, "\x06\x00\x00\x00"s, "\x06\x00\x00\x00\x02"s, "\x06\x00\x00\x00\x01\x00"s}) {
    INFO(bad.size());
    CHECK_FALSE(parse_secure_boot_efivar(bad).has_value());
  }
}
