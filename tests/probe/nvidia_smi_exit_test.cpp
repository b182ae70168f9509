#include "probe/nvidia_smi_exit.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "support/fake_system.hpp"

using gpuenv::probe::classify_nvidia_smi_error;
using gpuenv::probe::nvidia_smi_exit_code;
using gpuenv::probe::nvidia_smi_exit_codes;
using gpuenv::probe::NvidiaSmiFailure;
using gpuenv::testing::read_fixture;

TEST_CASE("nvidia-smi exit codes follow the man page's RETURN VALUE list", "[probe][nvidia-smi-exit]") {
  struct Row {
    int code;
    const char* meaning;
  };
  const Row rows[] = {
      {0, "Success"},
      {2, "A supplied argument or flag is invalid"},
      {3, "The requested operation is not available on target device"},
      {4, "The current user does not have permission to access this device or perform this operation"},
      {6, "A query to find an object was unsuccessful"},
      {8, "A device's external power cables are not properly attached"},
      {9, "NVIDIA driver is not loaded"},
      {10, "NVIDIA Kernel detected an interrupt issue with a GPU"},
      {12, "NVML Shared Library couldn't be found or loaded"},
      {13, "Local version of NVML doesn't implement this function"},
      {14, "infoROM is corrupted"},
      {15, "The GPU has fallen off the bus or has otherwise become inaccessible"},
      {255, "Other error or internal driver error occurred"},
  };
  REQUIRE(nvidia_smi_exit_codes().size() == std::size(rows));
  for (const Row& row : rows) {
    INFO(row.code);
    const auto entry = nvidia_smi_exit_code(row.code);
    REQUIRE(entry.has_value());
    CHECK(entry->meaning == row.meaning);
    CHECK(entry->remedy.empty() == (row.code == 0));
  }
  for (const int undocumented : {1, 5, 7, 11, 16, 127, 256, -1}) {
    INFO(undocumented);
    CHECK_FALSE(nvidia_smi_exit_code(undocumented).has_value());
  }
  CHECK_THAT(std::string(nvidia_smi_exit_code(9)->remedy), Catch::Contains("modprobe nvidia"));
}

TEST_CASE("nvidia-smi error text: captured driver failures", "[probe][nvidia-smi-exit]") {
  struct Row {
    const char* file;
    NvidiaSmiFailure kind;
    std::optional<std::string> nvml_version;
  };
  const Row rows[] = {
      {"nvidia-smi-couldnt-communicate-with-driver.txt", NvidiaSmiFailure::driver_not_communicating, std::nullopt},
      {"nvml-driver-library-mismatch_plain.txt", NvidiaSmiFailure::driver_library_mismatch, std::nullopt},
      {"nvml-driver-library-mismatch_with-nvml-version-550.144.txt", NvidiaSmiFailure::driver_library_mismatch,
       "550.144"},
      {"nvml-driver-library-mismatch_with-nvml-version-570.124.txt", NvidiaSmiFailure::driver_library_mismatch,
       "570.124"},
  };
  for (const Row& row : rows) {
    INFO(row.file);
    const auto error = classify_nvidia_smi_error(read_fixture(std::string("probe/errors/") + row.file));
    CHECK(error.kind == row.kind);
    CHECK(error.nvml_library_version == row.nvml_version);
    CHECK_FALSE(error.remedy.empty());
  }
  const auto mismatch = classify_nvidia_smi_error(read_fixture("probe/errors/nvml-driver-library-mismatch_plain.txt"));
  CHECK(mismatch.line == "Failed to initialize NVML: Driver/library version mismatch");
  CHECK(mismatch.detail == "Driver/library version mismatch");
}

TEST_CASE("nvidia-smi error text: other known messages (inline samples)", "[probe][nvidia-smi-exit]") {
  // No shared fixture holds these; each line is as printed in public bug reports (nvidia-smi versions vary).
  struct Row {
    const char* text;
    NvidiaSmiFailure kind;
    const char* detail;
  };
  const Row rows[] = {
      {"Failed to initialize NVML: Unknown Error\n", NvidiaSmiFailure::nvml_unknown_error, "Unknown Error"},
      {"Failed to initialize NVML: Insufficient Permissions\n", NvidiaSmiFailure::nvml_init_failed,
       "Insufficient Permissions"},
      {"NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display "
       "Driver is properly installed and present in your system.\nPlease also try adding directory that contains "
       "libnvidia-ml.so to your system PATH.\n",
       NvidiaSmiFailure::nvml_library_not_found, ""},
      {"No devices were found\n", NvidiaSmiFailure::no_devices_found, ""},
      {"Unable to determine the device handle for GPU0000:08:00.0: Unknown Error\n",
       NvidiaSmiFailure::device_handle_error, "Unknown Error"},
      {"Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error\r\nThu Aug 27 18:05:38 2026\r\n",
       NvidiaSmiFailure::device_handle_error, "Unknown Error"},
      {"", NvidiaSmiFailure::none, ""},
      {"\r\n \n", NvidiaSmiFailure::none, ""},
      {"Segmentation fault\n", NvidiaSmiFailure::unrecognized, ""},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    const auto error = classify_nvidia_smi_error(row.text);
    CHECK(error.kind == row.kind);
    CHECK(error.detail == row.detail);
  }
  CHECK(classify_nvidia_smi_error("Segmentation fault\n").line == "Segmentation fault");
}
