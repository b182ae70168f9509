// doctor's GPU rules (src/doctor/gpu_rules.cpp) on the healthy node of rule_rows.hpp, table-driven in both
// directions: the GPU count, ECC, retired pages and row remapping, temperature and throttle reasons, the PCIe link,
// NVLinks, persistence mode, MIG and running processes. Each row changes one thing and names the finding that must
// follow.

#include <catch2/catch.hpp>
#include <optional>

#include "doctor/rule_rows.hpp"
#include "doctor/rules.hpp"

using namespace gpuenv::testing::doctor_rules;  // NOLINT: the tables below are written in its vocabulary

TEST_CASE("rules: GPU count against --expect-gpus", "[doctor][rules]") {
  run_rows({
      {"8 GPUs, 8 expected",
       [](HostFacts& f, Expectations& e) {
         set_gpus(f, 8);
         f.host.cpu_count = 64;
         f.host.memory_total_kib = 2048 * k_kib_per_gib;
         e.gpu_count = 8;
       },
       "gpu.count",
       Status::pass,
       {"8 GPUs: 8x NVIDIA H100 80GB HBM3 (test)"}},
      {"7 GPUs, 8 expected",
       [](HostFacts& f, Expectations& e) {
         set_gpus(f, 7);
         f.host.cpu_count = 64;
         f.host.memory_total_kib = 2048 * k_kib_per_gib;
         e.gpu_count = 8;
       },
       "gpu.count",
       Status::fail,
       {"7 GPUs", "expected 8", "fallen off the bus"}},
      {"1 GPU, 0 expected",
       [](HostFacts&, Expectations& e) { e.gpu_count = 0; },
       "gpu.count",
       Status::fail,
       {"expected 0"}},
      {"8 listed, one lost, 8 expected",
       [](HostFacts& f, Expectations& e) {
         set_gpus(f, 8);
         f.gpus.gpus[3].access_error = "GPU is lost";
         e.gpu_count = 8;
       },
       "gpu.count",
       Status::fail,
       {"inaccessible: GPU 3", "GPU is lost"}},
      {"--root without a report: GPUs are not queried",
       [](HostFacts& f, Expectations&) {
         f.live = false;
         f.gpus = {};
         f.gpus.availability.reason = "GPUs are not queried under --root";
       },
       "gpu.count",
       Status::skip,
       {"not queried under --root"}},
      {"no expectation, header says more than listed",
       [](HostFacts& f, Expectations&) { f.gpus.attached_gpus = 2; },
       "gpu.count",
       Status::warn,
       {"the report header says 2 attached"}},
      {"the driver answers but sees no GPU",
       [](HostFacts& f, Expectations&) { set_gpus(f, 0); },
       "gpu.count",
       Status::fail,
       {"sees no GPUs", "lspci"}},
      {"NVML fails with the module loaded",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.gpus = {};
         f.gpus.availability.reason = "nvmlInit failed: Unknown Error (NVML error 999)";
       },
       "gpu.count",
       Status::fail,
       {"GPUs cannot be queried: nvmlInit failed"}},
      {"mixed models are listed by name",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 2);
         f.gpus.gpus[1].name = "NVIDIA A100-SXM4-80GB";
       },
       "gpu.count",
       Status::pass,
       {"2 GPUs: 1x NVIDIA A100-SXM4-80GB, 1x NVIDIA H100 80GB HBM3"}},
  });
}

TEST_CASE("rules: ECC, retired pages and row remapping", "[doctor][rules]") {
  run_rows({
      {"ECC on, no errors",
       [](HostFacts&, Expectations&) {},
       "gpu.ecc",
       Status::pass,
       {"ECC on, no uncorrectable errors"}},
      {"1 volatile uncorrectable error",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].ecc_uncorrected_volatile = 1; },
       "gpu.ecc",
       Status::fail,
       {"1 uncorrectable ECC errors since the last driver load", "nvidia-smi -r"}},
      {"aggregate errors only (an earlier tenant's, already handled)",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].ecc_uncorrected_aggregate = 12; }, "gpu.ecc", Status::pass},
      {"ECC disabled",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].ecc_enabled = false; },
       "gpu.ecc",
       Status::warn,
       {"ECC is disabled", "nvidia-smi -e 1"}},
      {"ECC not reported (consumer GPU)",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].ecc_enabled.reset();
         f.gpus.gpus[0].ecc_uncorrected_volatile.reset();
       },
       "gpu.ecc", Status::skip},
      {"retired pages: 62",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].retired_pages_single_bit = 60;
         f.gpus.gpus[0].retired_pages_double_bit = 2;
         f.gpus.gpus[0].retired_pages_pending = false;
       },
       "gpu.retired_pages",
       Status::pass,
       {"62 retired pages"}},
      {"retired pages: 63",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].retired_pages_single_bit = 60;
         f.gpus.gpus[0].retired_pages_double_bit = 3;
         f.gpus.gpus[0].retired_pages_pending = false;
       },
       "gpu.retired_pages",
       Status::fail,
       {"63 retired pages", "hardware ticket"}},
      {"retirement pending",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].retired_pages_double_bit = 1;
         f.gpus.gpus[0].retired_pages_pending = true;
       },
       "gpu.retired_pages",
       Status::fail,
       {"page retirement is pending", "reset the GPU"}},
      {"no page retirement reported (Ampere and later)", [](HostFacts&, Expectations&) {}, "gpu.retired_pages",
       Status::skip},
      {"row remap: none",
       [](HostFacts&, Expectations&) {},
       "gpu.row_remap",
       Status::pass,
       {"no pending or failed row remap"}},
      {"row remap pending",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].remapped_rows_pending = true; },
       "gpu.row_remap",
       Status::fail,
       {"a row remap is pending", "reset the GPU"}},
      {"row remap failure",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].remapped_rows_failure = true; },
       "gpu.row_remap",
       Status::fail,
       {"a row remap failed", "RMA"}},
      {"511 rows remapped for uncorrectable errors",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].remapped_rows_uncorrectable = 511; },
       "gpu.row_remap",
       Status::pass,
       {"511 rows remapped"}},
      {"512 rows remapped for uncorrectable errors",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].remapped_rows_uncorrectable = 512; },
       "gpu.row_remap",
       Status::fail,
       {"512 rows remapped for uncorrectable errors", "replace the GPU"}},
      {"no row remapping reported (before Ampere)",
       [](HostFacts& f, Expectations&) {
         auto& g = f.gpus.gpus[0];
         g.remapped_rows_correctable.reset();
         g.remapped_rows_uncorrectable.reset();
         g.remapped_rows_pending.reset();
         g.remapped_rows_failure.reset();
       },
       "gpu.row_remap", Status::skip},
  });
}

TEST_CASE("rules: temperature and clock-event (throttle) reasons", "[doctor][rules]") {
  run_rows({
      {"84 C",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].temperature_c = 84; },
       "gpu.temperature",
       Status::pass,
       {"below 85 C"}},
      {"85 C",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].temperature_c = 85; },
       "gpu.temperature",
       Status::warn,
       {"85 C (warning at 85 C)", "airflow"}},
      {"86 C, no slowdown threshold reported",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].temperature_c = 86;
         f.gpus.gpus[0].temperature_slowdown_c.reset();
       },
       "gpu.temperature", Status::warn},
      {"at the slowdown threshold",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].temperature_c = 87; },
       "gpu.temperature",
       Status::fail,
       {"87 C, at or above its slowdown threshold 87 C"}},
      {"slowdown threshold below the warning level",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].temperature_slowdown_c = 80;
         f.gpus.gpus[0].temperature_c = 82;
       },
       "gpu.temperature",
       Status::fail,
       {"slowdown threshold 80 C"}},
      {"no temperature", [](HostFacts& f, Expectations&) { f.gpus.gpus[0].temperature_c.reset(); }, "gpu.temperature",
       Status::skip},
      {"hw_slowdown",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].throttle_reasons = {"hw_slowdown"}; },
       "gpu.throttle",
       Status::fail,
       {"hw_slowdown active", "power brake"}},
      {"hw_thermal_slowdown",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].throttle_reasons = {"hw_thermal_slowdown"}; }, "gpu.throttle",
       Status::fail},
      {"hw_power_brake_slowdown",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].throttle_reasons = {"hw_power_brake_slowdown"}; },
       "gpu.throttle", Status::fail},
      {"sw_thermal_slowdown",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].throttle_reasons = {"sw_thermal_slowdown"}; },
       "gpu.throttle",
       Status::warn,
       {"sw_thermal_slowdown active"}},
      {"sw_power_cap is normal under load",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].throttle_reasons = {"sw_power_cap"}; },
       "gpu.throttle",
       Status::pass,
       {"no hardware or thermal slowdown active"}},
      {"gpu_idle and sync_boost are ignored",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].throttle_reasons = {"gpu_idle", "sync_boost"};
       },
       "gpu.throttle", Status::pass},
      {"sw_power_cap with sw_thermal_slowdown",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].throttle_reasons = {"sw_power_cap", "sw_thermal_slowdown"};
       },
       "gpu.throttle", Status::warn},
      {"neither temperature nor reasons", [](HostFacts& f, Expectations&) { f.gpus.gpus[0].temperature_c.reset(); },
       "gpu.throttle", Status::skip},
  });
}

TEST_CASE("rules: PCIe link generation and width", "[doctor][rules]") {
  run_rows({
      {"Gen5 x16 of Gen5 x16",
       [](HostFacts&, Expectations&) {},
       "gpu.pcie_link",
       Status::pass,
       {"at their maximum generation and width"}},
      {"Gen1 while idle: a note, not a problem",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].pcie_gen_current = 1; },
       "gpu.pcie_link",
       Status::pass,
       {"Gen1 x16 of Gen5 x16 while idle"}},
      {"x8 while idle: a note",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].pcie_width_current = 8; },
       "gpu.pcie_link",
       Status::pass,
       {"Gen5 x8 of Gen5 x16 while idle"}},
      {"9 % utilization still counts as idle",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].pcie_width_current = 8;
         f.gpus.gpus[0].utilization_percent = 9;
       },
       "gpu.pcie_link",
       Status::pass,
       {"while idle"}},
      {"x8 under load (10 % utilization)",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].pcie_width_current = 8;
         f.gpus.gpus[0].utilization_percent = 10;
       },
       "gpu.pcie_link",
       Status::fail,
       {"Gen5 x8 of Gen5 x16 under load", "reseat the GPU"}},
      {"x8 under load (97 % utilization)",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].pcie_width_current = 8;
         f.gpus.gpus[0].utilization_percent = 97;
       },
       "gpu.pcie_link",
       Status::fail,
       {"fewer lanes"}},
      {"Gen3 under load, full width",
       [](HostFacts& f, Expectations&) {
         f.gpus.gpus[0].pcie_gen_current = 3;
         f.gpus.gpus[0].utilization_percent = 80;
       },
       "gpu.pcie_link",
       Status::warn,
       {"Gen3 x16 of Gen5 x16 under load", "BIOS PCIe speed"}},
      {"link not reported", [](HostFacts& f, Expectations&) { f.gpus.gpus[0].pcie_width_max.reset(); }, "gpu.pcie_link",
       Status::skip},
  });
}

/// Gives every GPU `active` of 18 NVLinks (the rest down).
void set_nvlinks(HostFacts& f, unsigned active) {
  for (GpuFacts& gpu : f.gpus.gpus) {
    gpu.nvlink = gpuenv::probe::NvLinkFacts{};
    for (unsigned link = 0; link < 18; ++link)
      (link < active ? gpu.nvlink->active : gpu.nvlink->inactive).push_back(link);
  }
}

TEST_CASE("rules: NVLinks compared with the node's other GPUs of the model", "[doctor][rules]") {
  run_rows({
      {"no NVLink reported", [](HostFacts&, Expectations&) {}, "gpu.nvlink", Status::skip, {"no GPU reports NVLink"}},
      {"8 GPUs with 18 of 18",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         set_nvlinks(f, 18);
       },
       "gpu.nvlink",
       Status::pass,
       {"8 GPUs: every NVLink of its model up"}},
      {"12 of 18 on every GPU (NVL shape): by design, not a failure",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 2);
         set_nvlinks(f, 12);
       },
       "gpu.nvlink", Status::pass},
      {"one GPU with two links down",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         set_nvlinks(f, 18);
         auto& links = *f.gpus.gpus[5].nvlink;
         links.active.resize(16);
         links.inactive = {16, 17};
       },
       "gpu.nvlink",
       Status::fail,
       {"GPU 5", "16 of 18 NVLinks active (down: link 16, 17) while another", "has 18", "nvidia-smi nvlink --status"}},
      // A dead NVSwitch takes the same links from every GPU: the siblings agree, the board does not (every NVLink of an
      // HGX board goes to a switch; Azure's check_nvlink_status fails any inactive link on those ND shapes).
      {"an NVSwitch board whose GPUs all lost links 14-17",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         set_nvlinks(f, 14);
         f.fabric.nvswitches = {"0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"};
       },
       "gpu.nvlink",
       Status::fail,
       {"14 of 18 NVLinks active (down: link 14, 15, 16, 17) on an NVSwitch board", "point at an NVSwitch"}},
      {"an NVLink5 board (switch-management bridges) whose GPUs all lost a link",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         set_nvlinks(f, 17);
         f.fabric.nvlink5_bridges = {"0000:1a:00.0"};
       },
       "gpu.nvlink",
       Status::fail,
       {"on an NVSwitch board"}},
      {"an NVSwitch board in MIG mode: not judged by link state",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         set_nvlinks(f, 14);
         for (GpuFacts& gpu : f.gpus.gpus) gpu.mig_enabled = true;
         f.fabric.nvswitches = {"0000:05:00.0"};
       },
       "gpu.nvlink", Status::skip},
      // A GPU in MIG mode reports its links down: not compared with its siblings either (DCGM DcgmTopology.cpp).
      {"one GPU of eight in MIG mode with its links down",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         set_nvlinks(f, 18);
         f.gpus.gpus[3].mig_enabled = true;
         f.gpus.gpus[3].nvlink->active.clear();
         for (unsigned link = 0; link < 18; ++link) f.gpus.gpus[3].nvlink->inactive.push_back(link);
       },
       "gpu.nvlink", Status::pass},
      // Links a GPU has not trained because the fabric manager has not registered it: fabric.state says so.
      {"an NVSwitch board before the fabric manager registered the GPUs",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         set_nvlinks(f, 0);
         f.fabric.nvswitches = {"0000:05:00.0"};
         for (GpuFacts& gpu : f.gpus.gpus) {
           gpuenv::probe::GpuFabricInfo fabric;
           fabric.state = gpuenv::probe::GpuFabricInfo::State::in_progress;
           gpu.fabric = fabric;
         }
       },
       "gpu.nvlink",
       Status::pass,
       {"no NVLink active"}},
      {"no link up anywhere: a note",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 2);
         set_nvlinks(f, 0);
       },
       "gpu.nvlink",
       Status::pass,
       {"no NVLink active"}},
      {"error counters are shown, not judged",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 2);
         set_nvlinks(f, 18);
         f.gpus.gpus[1].nvlink->recovery_errors = 3;
       },
       "gpu.nvlink",
       Status::pass,
       {"0 replay, 3 recovery, 0 CRC errors"}},
  });
}

TEST_CASE("rules: persistence mode, MIG and running processes", "[doctor][rules]") {
  run_rows({
      {"persistence on", [](HostFacts&, Expectations&) {}, "gpu.persistence_mode", Status::pass},
      {"persistence off",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].persistence_mode = false; },
       "gpu.persistence_mode",
       Status::warn,
       {"persistence mode is off", "nvidia-persistenced"}},
      {"persistence not reported", [](HostFacts& f, Expectations&) { f.gpus.gpus[0].persistence_mode.reset(); },
       "gpu.persistence_mode", Status::skip},
      {"MIG off", [](HostFacts&, Expectations&) {}, "gpu.mig", std::nullopt},
      {"MIG on",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].mig_enabled = true; },
       "gpu.mig",
       Status::warn,
       {"MIG mode is enabled on GPU 0", "-mig 0"}},
      {"no processes", [](HostFacts&, Expectations&) {}, "gpu.processes", Status::pass},
      {"two compute processes",
       [](HostFacts& f, Expectations&) { f.gpus.gpus[0].process_count = 2; },
       "gpu.processes",
       Status::warn,
       {"2 compute process(es) already running"}},
      {"processes not reported", [](HostFacts& f, Expectations&) { f.gpus.gpus[0].process_count.reset(); },
       "gpu.processes", Status::skip},
      {"GPU checks need GPUs",
       [](HostFacts& f, Expectations&) {
         f.gpus = {};
         f.gpus.availability.reason = "x";
       },
       "gpu.persistence_mode", std::nullopt},
  });
}
