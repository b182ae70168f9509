#pragma once
// The nodes doctor's fabric rule tests start from (tests/doctor/fabric_*_test.cpp): a healthy HGX H100 and an HGX
// B200 as HostFacts built in C++, and doctor's evaluation of them with the built-in data.

#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "doctor/instances.hpp"
#include "doctor/rule_rows.hpp"
#include "doctor/rules.hpp"
#include "doctor/thresholds.hpp"
#include "probe/collect.hpp"
#include "probe/fabric.hpp"
#include "probe/facts.hpp"
#include "probe/link_counters.hpp"
#include "probe/nvlink5.hpp"
#include "probe/pci_devices.hpp"
#include "probe/rdma.hpp"
#include "support/fake_nvml_library.hpp"
#include "support/fake_system.hpp"
#include "support/findings.hpp"

namespace gpuenv::testing::fabric_rules {

using gpuenv::probe::GpuFabricInfo;
using gpuenv::probe::HostFacts;
using gpuenv::report::Finding;
using gpuenv::testing::doctor_rules::kb;
using gpuenv::testing::doctor_rules::thresholds;

inline const gpuenv::doctor::InstanceExpectation* instance(const std::string& type) {
  auto table = gpuenv::doctor::builtin_instances();
  REQUIRE(table);
  return gpuenv::doctor::find_instance(**table, type);
}

/// An 8x H100 HGX node as it should be: registered with the fabric, four NVSwitches, fabric manager at the driver's
/// version and running, the kernel log readable and quiet.
inline HostFacts hgx() {
  HostFacts facts;
  facts.kernel.module_loaded = true;
  facts.kernel.module_version = "550.54.15";
  facts.kernel_log_source = "dmesg";
  facts.host.kernel_release = "5.15.0-119-generic";
  facts.gpus.availability.available = true;
  facts.gpus.driver_version = "550.54.15";
  for (unsigned i = 0; i < 8; ++i) {
    gpuenv::probe::GpuFacts gpu;
    gpu.index = i;
    gpu.name = "NVIDIA H100 80GB HBM3";
    gpu.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    GpuFabricInfo fabric;
    fabric.state = GpuFabricInfo::State::completed;
    fabric.status = "Success";
    fabric.status_ok = true;
    fabric.source = "nvmlDeviceGetGpuFabricInfoV";
    gpu.fabric = fabric;
    facts.gpus.gpus.push_back(gpu);
  }
  facts.fabric.pci_scanned = true;
  facts.fabric.nvswitches = {"0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"};
  facts.fabric.manager.installed = true;
  facts.fabric.manager.package = "nvidia-fabricmanager-550";
  facts.fabric.manager.version = "550.54.15";
  facts.fabric.manager.running = true;
  facts.fabric.manager.service_state = "active";
  facts.rdma.availability.available = true;
  return facts;
}

/// An HGX B200 as the host sees it: no NVSwitch on PCI, two InfiniBand bridges whose VPD says SW_MNG, the fabric
/// manager installed and running, every GPU registered.
inline HostFacts hgx_b200() {
  HostFacts facts = hgx();
  for (auto& gpu : facts.gpus.gpus) gpu.name = "NVIDIA B200";
  facts.fabric.nvswitches.clear();
  facts.fabric.nvlink5_bridges = {"mlx5_10", "mlx5_11"};
  return facts;
}

/// The GPUs as a board whose fabric manager never ran leaves them: fabric state "Not Started".
inline void fabric_not_started(HostFacts& facts) {
  for (auto& gpu : facts.gpus.gpus) gpu.fabric->state = GpuFabricInfo::State::not_started;
}

inline std::vector<Finding> evaluate(const HostFacts& facts,
                                     const gpuenv::doctor::InstanceExpectation* type = nullptr) {
  gpuenv::doctor::Expectations expectations;
  expectations.instance = type;
  return gpuenv::doctor::evaluate(facts, thresholds(), kb(), expectations);
}

}  // namespace gpuenv::testing::fabric_rules

// The names each fabric rule test file uses unqualified (this header is included by those files only).
namespace {

using gpuenv::probe::GpuFabricInfo;
using gpuenv::probe::HostFacts;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::testing::has_finding;
using gpuenv::testing::require_finding;
using gpuenv::testing::doctor_rules::thresholds;
using gpuenv::testing::fabric_rules::evaluate;
using gpuenv::testing::fabric_rules::fabric_not_started;
using gpuenv::testing::fabric_rules::hgx;
using gpuenv::testing::fabric_rules::hgx_b200;
using gpuenv::testing::fabric_rules::instance;

}  // namespace
