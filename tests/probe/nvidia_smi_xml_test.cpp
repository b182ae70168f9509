#include "probe/nvidia_smi_xml.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/fake_system.hpp"

using gpuenv::probe::EccSchema;
using gpuenv::probe::NvidiaSmiGpu;
using gpuenv::probe::NvidiaSmiReport;
using gpuenv::probe::parse_nvidia_smi_xml;
using gpuenv::testing::read_fixture;

namespace {

NvidiaSmiReport parse_fixture(const std::string& name) {
  const std::string text = read_fixture("probe/nvidia-smi-xml/" + name);
  auto report = parse_nvidia_smi_xml(text);
  INFO(name << ": " << (report ? std::string() : report.error().message));
  REQUIRE(report.has_value());
  return std::move(report).value();
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("nvidia-smi XML: every captured report parses, with its header and first GPU", "[probe][nvidia-smi-xml]") {
  struct Row {
    const char* file;
    std::optional<std::string> driver;
    std::optional<std::string> cuda;
    std::optional<int> attached;
    std::size_t gpus;
    const char* name;
    const char* uuid;
    const char* bus;
    std::optional<long long> memory_total_mib;
  };
  const Row rows[] = {
      {"a100-sxm4-40gb_driver-510.47.03_cuda-11.6_mig-enabled.xml", "510.47.03", "11.6", 1, 1, "NVIDIA A100-SXM4-40GB",
       "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a", "00000000:00:04.0", 40960},
      {"a100-sxm4-80gb_driver-535.54.03_cuda-12.2_mig-enabled.xml", "535.54.03", "12.2", 4, 1, "NVIDIA A100-SXM4-80GB",
       "GPU-513536b6-7d19-9063-b049-1e69664bb298", "00000000:01:00.0", 81920},
      {"a10g_driver-515.105.01_cuda-11.7.xml", "515.105.01", "11.7", 1, 1, "NVIDIA A10G",
       "GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94", "00000000:00:1E.0", 23028},
      {"geforce-gtx-1050_driver-515.65.01_cuda-11.7.xml", "515.65.01", "11.7", 1, 1, "NVIDIA GeForce GTX 1050",
       "GPU-06e04616-0ed5-4069-5ebc-345349a0d4f3", "00000000:01:00.0", 4096},
      {"geforce-gtx-1070-ti_dtd-v10_reduced.xml", std::nullopt, std::nullopt, std::nullopt, 1, "GeForce GTX 1070 Ti",
       "GPU-f9ba66fc-a7f5-94c5-da19-019ef2f9c665", "00000000:01:00.0", 4096},
      {"geforce-rtx-2080_driver-516.59_cuda-11.7_windows-wddm.xml", "516.59", "11.7", 1, 1, "NVIDIA GeForce RTX 2080",
       "GPU-fbd55ed4-1eec-4423-0a47-ad594b4333e3", "00000000:0A:00.0", 8192},
      {"geforce-rtx-3060-laptop_driver-515.65.01_cuda-11.7.xml", "515.65.01", "11.7", 1, 1,
       "NVIDIA GeForce RTX 3060 Laptop GPU", "GPU-473d8d0f-d462-185c-6b36-6fc23e23e571", "00000000:01:00.0", 6144},
      {"geforce-rtx-3060_driver-570.124.04_cuda-12.8.xml", "570.124.04", "12.8", 1, 1, "NVIDIA GeForce RTX 3060",
       "GPU-d6889ff6-2523-9142-ca3c-1ca3f396a625", "00000000:2D:00.0", 12288},
      {"geforce-rtx-3080_driver-536.40_cuda-12.2.xml", "536.40", "12.2", 1, 1, "NVIDIA GeForce RTX 3080",
       "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4", "00000000:04:00.0", 10240},
      {"geforce-rtx-3080_driver-595.58.03_cuda-13.2.xml", "595.58.03", "13.2", 1, 1, "NVIDIA GeForce RTX 3080",
       "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4", "00000000:0C:00.0", 10240},
      {"geforce-rtx-3090_driver-525.147.05_cuda-12.0.xml", "525.147.05", "12.0", 1, 1, "NVIDIA GeForce RTX 3090",
       "GPU-12345678-aaaa-bbbb-cccc-0123456789ab", "00000000:00:10.0", 24576},
      {"geforce-rtx-4090_driver-535.86.05_cuda-12.2.xml", "535.86.05", "12.2", 1, 1, "NVIDIA GeForce RTX 4090",
       "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437", "00000000:84:00.0", 24564},
      {"gtx-1660-ti-graphics-device_driver-418.43_cuda-10.1.xml", "418.43", "10.1", 1, 1, "Graphics Device",
       "GPU-304a277d-3545-63b8-3a36-dfde3c992989", "00000000:43:00.0", 5912},
      {"quadro-p2000_driver-525.125.06_cuda-12.0.xml", "525.125.06", "12.0", 1, 1, "Quadro P2000",
       "GPU-396caaed-39ca-3199-2e68-717cdb786ec6", "00000000:17:00.0", 5120},
      {"quadro-p400_driver-418.43_cuda-10.1.xml", "418.43", "10.1", 1, 1, "Quadro P400",
       "GPU-8f750be4-dfbc-23b9-b33f-da729a536494", "00000000:43:00.0", 1998},
      {"rtx-4000-sff-ada_driver-595.84_cuda-13.2.xml", "595.84", "13.2", 1, 1, "NVIDIA RTX 4000 SFF Ada Generation",
       "GPU-37037c3f-65c8-ec4d-24a9-420204ad8026", "00000000:06:00.0", 20475},
      {"rtx-pro-6000-blackwell_driver-580_reduced.xml", std::nullopt, std::nullopt, std::nullopt, 1,
       "NVIDIA RTX PRO 6000 Blackwell", "GPU-11111111-2222-3333-4444-555555555555", "00000000:01:00.0", std::nullopt},
      {"tesla-p100-pcie-16gb_driver-510.47.03_cuda-11.6.xml", "510.47.03", "11.6", 1, 1, "Tesla P100-PCIE-16GB",
       "GPU-d3da8716-eaab-75db-efc1-60e88e1cd55e", "00000000:00:04.0", 16384},
      {"tesla-t4_driver-515.105.01_cuda-11.7.xml", "515.105.01", "11.7", 1, 1, "Tesla T4",
       "GPU-d37e67a5-91dd-3774-a5cb-99096249601a", "00000000:00:1E.0", 15360},
      {"tesla-v100-pcie-32gb_driver-460.39_cuda-11.2.xml", "460.39", "11.2", 1, 1, "Tesla V100-PCIE-32GB",
       "GPU-e77ce5d8-8b63-c936-3c1b-839d45bcd0f2", "00000000:21:01.0", 32510},
      {"tesla-v100s-pcie-32gb-x8_driver-460.73.01_cuda-11.2_multi-gpu.xml", "460.73.01", "11.2", 8, 8,
       "Tesla V100S-PCIE-32GB", "GPU-76098dc1-d3bc-9a1b-7ea6-f7b48837829e", "00000000:00:0D.0", 32510},
  };
  CHECK(std::size(rows) == 21);
  for (const Row& row : rows) {
    INFO(row.file);
    const NvidiaSmiReport report = parse_fixture(row.file);
    CHECK(report.driver_version == row.driver);
    CHECK(report.cuda_version == row.cuda);
    CHECK(report.attached_gpus == row.attached);
    REQUIRE(report.gpus.size() == row.gpus);
    const NvidiaSmiGpu& gpu = report.gpus.front();
    CHECK(gpu.index == 0);
    CHECK(gpu.name == row.name);
    CHECK(gpu.uuid == row.uuid);
    CHECK(gpu.pci_bus_id == row.bus);
    CHECK(gpu.memory_total_mib == row.memory_total_mib);
    CHECK_FALSE(gpu.compute_capability.has_value());  // no captured report prints <compute_cap>
  }
}

TEST_CASE("nvidia-smi XML: attached_gpus=4 with one <gpu> element reports both numbers", "[probe][nvidia-smi-xml]") {
  const auto report = parse_fixture("a100-sxm4-80gb_driver-535.54.03_cuda-12.2_mig-enabled.xml");
  CHECK(report.attached_gpus == 4);
  CHECK(report.gpus.size() == 1);
  CHECK(report.gpu_count_mismatch());
  CHECK_FALSE(parse_fixture("tesla-v100s-pcie-32gb-x8_driver-460.73.01_cuda-11.2_multi-gpu.xml").gpu_count_mismatch());
  CHECK_FALSE(parse_fixture("geforce-gtx-1070-ti_dtd-v10_reduced.xml").gpu_count_mismatch());  // no header count
}

TEST_CASE("nvidia-smi XML: Tesla V100 (driver 460): legacy ECC, retired pages, thermals, power, link",
          "[probe][nvidia-smi-xml]") {
  const auto report = parse_fixture("tesla-v100-pcie-32gb_driver-460.39_cuda-11.2.xml");
  const NvidiaSmiGpu& gpu = report.gpus.at(0);
  CHECK(gpu.serial == "0324418086185");
  CHECK(gpu.memory_used_mib == 12311);
  CHECK(gpu.persistence_mode == false);
  CHECK_FALSE(gpu.mig_mode_current.has_value());  // "N/A"
  CHECK(gpu.mig_device_count == 0);
  CHECK(gpu.ecc_mode_current == true);
  CHECK(gpu.ecc_errors.schema == EccSchema::single_double_bit);
  CHECK(gpu.ecc_errors.volatile_counts.correctable == 0);
  CHECK(gpu.ecc_errors.volatile_counts.uncorrectable == 0);
  CHECK(gpu.ecc_errors.aggregate_counts.correctable == 0);
  CHECK(gpu.ecc_errors.aggregate_counts.uncorrectable == 0);
  CHECK_FALSE(gpu.ecc_errors.aggregate_counts.dram_correctable.has_value());
  CHECK(gpu.retired_pages.single_bit == 0);
  CHECK(gpu.retired_pages.double_bit == 0);
  CHECK(gpu.retired_pages.pending == false);
  CHECK_FALSE(gpu.remapped_rows.reported);  // <remapped_rows>N/A</remapped_rows>
  CHECK_FALSE(gpu.remapped_rows.pending.has_value());
  CHECK(gpu.temperature_c == 66);
  CHECK(gpu.temperature_slowdown_c == 87);
  CHECK(gpu.temperature_shutdown_c == 90);
  CHECK(gpu.power_draw_w.value_or(-1.0) == Approx(170.16));
  CHECK(gpu.power_limit_w.value_or(-1.0) == Approx(250.0));
  REQUIRE(gpu.clocks_event_reasons.has_value());
  CHECK(gpu.clocks_event_reasons->empty());
  CHECK(gpu.pcie.gen_current == 3);
  CHECK(gpu.pcie.gen_max == 3);
  CHECK(gpu.pcie.width_current == 16);
  CHECK(gpu.pcie.width_max == 16);
  CHECK(gpu.process_count == 4);
}

TEST_CASE("nvidia-smi XML: Tesla P100 (driver 510) has 3 aggregate single-bit ECC errors", "[probe][nvidia-smi-xml]") {
  const NvidiaSmiGpu gpu = parse_fixture("tesla-p100-pcie-16gb_driver-510.47.03_cuda-11.6.xml").gpus.at(0);
  CHECK(gpu.ecc_mode_current == true);
  CHECK(gpu.ecc_errors.schema == EccSchema::single_double_bit);
  CHECK(gpu.ecc_errors.volatile_counts.correctable == 0);
  CHECK(gpu.ecc_errors.volatile_counts.uncorrectable == 0);
  CHECK(gpu.ecc_errors.aggregate_counts.correctable == 3);
  CHECK(gpu.ecc_errors.aggregate_counts.uncorrectable == 0);
  CHECK(gpu.retired_pages.single_bit == 0);
  CHECK(gpu.retired_pages.double_bit == 0);
  CHECK(gpu.retired_pages.pending == false);
  CHECK(gpu.temperature_c == 38);
  CHECK(gpu.temperature_slowdown_c == 82);
  CHECK(gpu.temperature_shutdown_c == 85);
  CHECK(gpu.power_draw_w.value_or(-1.0) == Approx(26.16));
  CHECK(gpu.power_limit_w.value_or(-1.0) == Approx(250.0));
  CHECK(gpu.clocks_event_reasons == std::optional<Names>(Names{"gpu_idle"}));
}

TEST_CASE("nvidia-smi XML: A100-SXM4-80GB (driver 535): MIG, SRAM/DRAM ECC, gpu_power_readings",
          "[probe][nvidia-smi-xml]") {
  const NvidiaSmiGpu gpu = parse_fixture("a100-sxm4-80gb_driver-535.54.03_cuda-12.2_mig-enabled.xml").gpus.at(0);
  CHECK(gpu.serial == "1650522003820");
  CHECK(gpu.memory_used_mib == 50);
  CHECK(gpu.persistence_mode == false);
  CHECK(gpu.mig_mode_current == true);
  CHECK(gpu.mig_device_count == 4);
  CHECK(gpu.ecc_mode_current == true);
  CHECK(gpu.ecc_errors.schema == EccSchema::sram_dram);
  for (const auto* counts : {&gpu.ecc_errors.volatile_counts, &gpu.ecc_errors.aggregate_counts}) {
    CHECK(counts->sram_correctable == 0);
    CHECK(counts->sram_uncorrectable == 0);
    CHECK(counts->dram_correctable == 0);
    CHECK(counts->dram_uncorrectable == 0);
    CHECK(counts->correctable == 0);
    CHECK(counts->uncorrectable == 0);
  }
  CHECK_FALSE(gpu.retired_pages.single_bit.has_value());  // "N/A" on Ampere
  CHECK_FALSE(gpu.retired_pages.double_bit.has_value());
  CHECK_FALSE(gpu.retired_pages.pending.has_value());
  CHECK_FALSE(gpu.remapped_rows.reported);
  CHECK(gpu.temperature_c == 27);
  CHECK(gpu.temperature_slowdown_c == 89);
  CHECK(gpu.temperature_shutdown_c == 92);
  CHECK(gpu.power_draw_w.value_or(-1.0) == Approx(67.03));
  CHECK(gpu.power_limit_w.value_or(-1.0) == Approx(500.0));
  CHECK(gpu.clocks_event_reasons == std::optional<Names>(Names{}));
  CHECK(gpu.pcie.gen_current == 4);
  CHECK(gpu.pcie.width_current == 16);
  CHECK(gpu.process_count == 0);
}

TEST_CASE("nvidia-smi XML: A100-SXM4-40GB (driver 510): volatile ECC N/A, aggregate 0", "[probe][nvidia-smi-xml]") {
  const NvidiaSmiGpu gpu = parse_fixture("a100-sxm4-40gb_driver-510.47.03_cuda-11.6_mig-enabled.xml").gpus.at(0);
  CHECK(gpu.mig_mode_current == true);
  CHECK(gpu.mig_device_count == 2);
  CHECK_FALSE(gpu.ecc_errors.volatile_counts.correctable.has_value());
  CHECK_FALSE(gpu.ecc_errors.volatile_counts.uncorrectable.has_value());
  CHECK(gpu.ecc_errors.aggregate_counts.correctable == 0);
  CHECK(gpu.ecc_errors.aggregate_counts.uncorrectable == 0);
  CHECK(gpu.power_draw_w.value_or(-1.0) == Approx(66.92));
  CHECK(gpu.power_limit_w.value_or(-1.0) == Approx(400.0));
}

TEST_CASE("nvidia-smi XML: A10G (driver 515): remapped rows, idle throttle, x8 link", "[probe][nvidia-smi-xml]") {
  const NvidiaSmiGpu gpu = parse_fixture("a10g_driver-515.105.01_cuda-11.7.xml").gpus.at(0);
  CHECK(gpu.serial == "0000000000000");
  CHECK(gpu.remapped_rows.reported);
  CHECK(gpu.remapped_rows.correctable == 0);
  CHECK(gpu.remapped_rows.uncorrectable == 0);
  CHECK(gpu.remapped_rows.pending == false);
  CHECK(gpu.remapped_rows.failure == false);
  CHECK(gpu.ecc_errors.schema == EccSchema::sram_dram);
  CHECK(gpu.ecc_errors.aggregate_counts.uncorrectable == 0);
  CHECK(gpu.temperature_c == 17);
  CHECK(gpu.temperature_slowdown_c == 95);
  CHECK(gpu.temperature_shutdown_c == 98);
  CHECK(gpu.clocks_event_reasons == std::optional<Names>(Names{"gpu_idle"}));
  CHECK(gpu.pcie.gen_current == 1);
  CHECK(gpu.pcie.gen_max == 4);
  CHECK(gpu.pcie.width_current == 8);
  CHECK(gpu.pcie.width_max == 16);
  CHECK(gpu.process_count == 1);
}

TEST_CASE("nvidia-smi XML: RTX 4000 SFF Ada (driver 595, DTD v13): newest ECC schema and power tags",
          "[probe][nvidia-smi-xml]") {
  const NvidiaSmiGpu gpu = parse_fixture("rtx-4000-sff-ada_driver-595.84_cuda-13.2.xml").gpus.at(0);
  CHECK(gpu.serial == "REDACTED");
  CHECK(gpu.persistence_mode == true);
  CHECK(gpu.ecc_mode_current == false);
  CHECK(gpu.ecc_errors.schema == EccSchema::sram_dram);
  CHECK_FALSE(gpu.ecc_errors.aggregate_counts.sram_uncorrectable.has_value());  // parity and secded both N/A
  CHECK_FALSE(gpu.ecc_errors.aggregate_counts.uncorrectable.has_value());
  CHECK(gpu.remapped_rows.reported);
  CHECK(gpu.remapped_rows.correctable == 0);
  CHECK(gpu.remapped_rows.uncorrectable == 0);
  CHECK(gpu.remapped_rows.pending == false);
  CHECK(gpu.remapped_rows.failure == false);
  CHECK(gpu.temperature_c == 38);
  CHECK_FALSE(gpu.temperature_slowdown_c.has_value());  // only *_tlimit_threshold on this driver
  CHECK_FALSE(gpu.temperature_shutdown_c.has_value());
  CHECK(gpu.power_draw_w.value_or(-1.0) == Approx(8.44));   // instant_power_draw
  CHECK(gpu.power_limit_w.value_or(-1.0) == Approx(70.0));  // current_power_limit
  CHECK(gpu.clocks_event_reasons == std::optional<Names>(Names{"gpu_idle"}));
  CHECK(gpu.pcie.gen_current == 1);
  CHECK(gpu.pcie.gen_max == 4);
  CHECK(gpu.process_count == 4);
}

TEST_CASE("nvidia-smi XML: 8x V100S: every GPU, and sw_power_cap on two of them", "[probe][nvidia-smi-xml]") {
  const auto report = parse_fixture("tesla-v100s-pcie-32gb-x8_driver-460.73.01_cuda-11.2_multi-gpu.xml");
  struct Row {
    const char* bus;
    const char* serial;
    long long used_mib;
    int temperature;
    double power;
    bool power_capped;
  };
  const Row rows[] = {
      {"00000000:00:0D.0", "1562920006088", 31689, 66, 232.80, false},
      {"00000000:00:0E.0", "1562920005886", 29545, 58, 152.03, false},
      {"00000000:00:0F.0", "1563320001045", 29539, 57, 67.57, false},
      {"00000000:00:10.0", "1562920007325", 32099, 61, 198.41, true},
      {"00000000:00:11.0", "1562920005822", 29517, 59, 117.99, false},
      {"00000000:00:12.0", "1562920005539", 32141, 64, 85.80, false},
      {"00000000:00:13.0", "1562920007403", 32157, 61, 68.14, true},
      {"00000000:00:14.0", "1562920006372", 29501, 57, 61.47, false},
  };
  REQUIRE(report.gpus.size() == std::size(rows));
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    INFO("GPU " << i);
    const NvidiaSmiGpu& gpu = report.gpus[i];
    CHECK(gpu.index == static_cast<int>(i));
    CHECK(gpu.name == "Tesla V100S-PCIE-32GB");
    CHECK(gpu.pci_bus_id == rows[i].bus);
    CHECK(gpu.serial == rows[i].serial);
    CHECK(gpu.memory_used_mib == rows[i].used_mib);
    CHECK(gpu.temperature_c == rows[i].temperature);
    CHECK(gpu.power_draw_w.value_or(-1.0) == Approx(rows[i].power));
    CHECK(gpu.clocks_event_reasons == std::optional<Names>(rows[i].power_capped ? Names{"sw_power_cap"} : Names{}));
    CHECK(gpu.ecc_errors.aggregate_counts.correctable == 0);
    CHECK(gpu.retired_pages.pending == false);
    CHECK(gpu.process_count == 1);
  }
}

TEST_CASE("nvidia-smi XML: reduced reports give absent values, not errors", "[probe][nvidia-smi-xml]") {
  SECTION("RTX PRO 6000 Blackwell: padded values, N/A power_draw falls back to instant_power_draw") {
    const NvidiaSmiGpu gpu = parse_fixture("rtx-pro-6000-blackwell_driver-580_reduced.xml").gpus.at(0);
    CHECK(gpu.pci_bus_id == "00000000:01:00.0");              // from the id attribute: no <pci> element
    CHECK(gpu.temperature_c == 37);                           // " 37 C "
    CHECK(gpu.power_draw_w.value_or(-1.0) == Approx(66.84));  // " N/A " then " 66.84 W "
    CHECK_FALSE(gpu.power_limit_w.has_value());
    CHECK_FALSE(gpu.serial.has_value());
    CHECK_FALSE(gpu.clocks_event_reasons.has_value());
    CHECK_FALSE(gpu.process_count.has_value());
    CHECK(gpu.ecc_errors.schema == EccSchema::absent);
  }
  SECTION("GTX 1070 Ti (DTD v10): current link only, N/A power") {
    const NvidiaSmiGpu gpu = parse_fixture("geforce-gtx-1070-ti_dtd-v10_reduced.xml").gpus.at(0);
    CHECK(gpu.pcie.gen_current == 1);
    CHECK(gpu.pcie.width_current == 16);
    CHECK_FALSE(gpu.pcie.gen_max.has_value());
    CHECK_FALSE(gpu.pcie.width_max.has_value());
    CHECK(gpu.memory_used_mib == 42);
    CHECK(gpu.temperature_c == 39);
    CHECK_FALSE(gpu.power_draw_w.has_value());
    CHECK_FALSE(gpu.persistence_mode.has_value());
  }
  SECTION("GTX 1660 Ti on 418: no pending_blacklist element, pending_retirement N/A") {
    const NvidiaSmiGpu gpu = parse_fixture("gtx-1660-ti-graphics-device_driver-418.43_cuda-10.1.xml").gpus.at(0);
    CHECK(gpu.name == "Graphics Device");
    CHECK_FALSE(gpu.retired_pages.pending.has_value());
    CHECK_FALSE(gpu.ecc_mode_current.has_value());
    CHECK(gpu.power_draw_w.value_or(-1.0) == Approx(8.93));
    CHECK(gpu.power_limit_w.value_or(-1.0) == Approx(130.0));
  }
  SECTION("RTX 3060 on 570: instant_power_draw before average_power_draw") {
    const NvidiaSmiGpu gpu = parse_fixture("geforce-rtx-3060_driver-570.124.04_cuda-12.8.xml").gpus.at(0);
    CHECK(gpu.power_draw_w.value_or(-1.0) == Approx(11.63));
    CHECK(gpu.power_limit_w.value_or(-1.0) == Approx(170.0));
    CHECK(gpu.persistence_mode == true);
  }
}

TEST_CASE("nvidia-smi XML: compute_cap, Active throttle bits and bracketed N/A (inline sample)",
          "[probe][nvidia-smi-xml]") {
  // No captured report prints <compute_cap> or an active hw_slowdown; this sample is written for the test.
  const char* xml =
      "<nvidia_smi_log><driver_version>550.54.15</driver_version><attached_gpus>1</attached_gpus>\r\n"
      "<gpu id=\"00000000:3B:00.0\"><product_name>Test GPU</product_name><compute_cap>9.0</compute_cap>\r\n"
      "<serial>[N/A]</serial><persistence_mode>Enabled</persistence_mode>\r\n"
      "<retired_pages><pending_blacklist>No</pending_blacklist><pending_retirement>Yes</pending_retirement></"
      "retired_pages>\r\n"
      "<remapped_rows><remapped_row_corr>2</remapped_row_corr><remapped_row_unc>1</remapped_row_unc>"
      "<remapped_row_pending>Yes</remapped_row_pending><remapped_row_failure>No</remapped_row_failure></"
      "remapped_rows>\r\n"
      "<clocks_event_reasons><clocks_event_reason_hw_slowdown>Active</clocks_event_reason_hw_slowdown>"
      "<clocks_event_reason_hw_power_brake_slowdown>Active</clocks_event_reason_hw_power_brake_slowdown>"
      "<clocks_event_reason_sw_thermal_slowdown>Not Active</clocks_event_reason_sw_thermal_slowdown>"
      "</clocks_event_reasons>\r\n"
      "<ecc_errors><volatile><sram_correctable>5</sram_correctable><sram_uncorrectable_parity>1</"
      "sram_uncorrectable_parity>"
      "<sram_uncorrectable_secded>2</sram_uncorrectable_secded><dram_correctable>Not Supported</dram_correctable>"
      "<dram_uncorrectable>4</dram_uncorrectable></volatile></ecc_errors>\r\n"
      "</gpu></nvidia_smi_log>\r\n";
  const auto report = parse_nvidia_smi_xml(xml);
  REQUIRE(report.has_value());
  const NvidiaSmiGpu& gpu = report->gpus.at(0);
  CHECK(gpu.compute_capability == "9.0");
  CHECK(gpu.pci_bus_id == "00000000:3B:00.0");
  CHECK_FALSE(gpu.serial.has_value());
  CHECK(gpu.retired_pages.pending == true);
  CHECK(gpu.remapped_rows.correctable == 2);
  CHECK(gpu.remapped_rows.uncorrectable == 1);
  CHECK(gpu.remapped_rows.pending == true);
  CHECK(gpu.remapped_rows.failure == false);
  CHECK(gpu.clocks_event_reasons == std::optional<Names>(Names{"hw_slowdown", "hw_power_brake_slowdown"}));
  CHECK(gpu.ecc_errors.volatile_counts.sram_uncorrectable == 3);
  CHECK_FALSE(gpu.ecc_errors.volatile_counts.dram_correctable.has_value());
  CHECK(gpu.ecc_errors.volatile_counts.correctable == 5);
  CHECK(gpu.ecc_errors.volatile_counts.uncorrectable == 7);
  CHECK_FALSE(gpu.ecc_errors.aggregate_counts.correctable.has_value());
}

TEST_CASE("nvidia-smi XML: truncated, empty or foreign input is an Error, never a crash", "[probe][nvidia-smi-xml]") {
  const std::string whole = read_fixture("probe/nvidia-smi-xml/tesla-v100-pcie-32gb_driver-460.39_cuda-11.2.xml");
  // Every cut point in the first 4 KiB, then coarser steps: each must fail cleanly.
  for (std::size_t cut = 0; cut < whole.size() - 20; cut += (cut < 4096 ? 1 : 97)) {
    const auto report = parse_nvidia_smi_xml(std::string_view(whole).substr(0, cut));
    INFO("cut at byte " << cut);
    CHECK_FALSE(report.has_value());
  }
  const auto truncated = parse_nvidia_smi_xml(whole.substr(0, whole.size() / 2));
  REQUIRE_FALSE(truncated.has_value());
  CHECK_THAT(truncated.error().message, Catch::Contains("not well-formed XML"));
  CHECK_FALSE(parse_nvidia_smi_xml("").has_value());
  CHECK_FALSE(parse_nvidia_smi_xml("Failed to initialize NVML: Driver/library version mismatch\n").has_value());
  const auto foreign = parse_nvidia_smi_xml("<?xml version=\"1.0\"?><other/>");
  REQUIRE_FALSE(foreign.has_value());
  CHECK_THAT(foreign.error().message, Catch::Contains("<nvidia_smi_log>"));
  const auto no_gpus = parse_nvidia_smi_xml("<nvidia_smi_log><attached_gpus>2</attached_gpus></nvidia_smi_log>");
  REQUIRE(no_gpus.has_value());
  CHECK(no_gpus->gpus.empty());
  CHECK(no_gpus->gpu_count_mismatch());
}
