#pragma once
// The healthy node doctor's rule tests start from, and the table rows that change one thing in it and name the finding
// that must follow. Shared by the tests of each rule section (tests/doctor/*_rules_test.cpp, rules_test.cpp).

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "doctor/rules.hpp"
#include "doctor/thresholds.hpp"
#include "probe/facts.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"
#include "support/findings.hpp"

namespace gpuenv::testing::doctor_rules {

using gpuenv::doctor::Expectations;
using gpuenv::probe::GpuFacts;
using gpuenv::probe::HostFacts;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::testing::dump_findings;
using gpuenv::testing::findings_with_id;

inline constexpr std::uint64_t k_gib = 1024ull * 1024 * 1024;
inline constexpr std::uint64_t k_kib_per_gib = 1024ull * 1024;

/// data/doctor/thresholds.toml, read once.
inline const gpuenv::doctor::Thresholds& thresholds() {
  static const auto* loaded = [] {
    auto t = gpuenv::doctor::builtin_thresholds();
    REQUIRE(t);
    return *t;
  }();
  return *loaded;
}

/// The builtin knowledge base, read once.
inline const gpuenv::compat::KnowledgeBase& kb() {
  static const auto* loaded = [] {
    auto k = gpuenv::compat::builtin_knowledge_base();
    REQUIRE(k);
    return *k;
  }();
  return *loaded;
}

/// A healthy H100 80GB at `index`: ECC on and clean, cool, full PCIe link, persistence mode, no processes.
inline GpuFacts healthy_gpu(unsigned index) {
  GpuFacts gpu;
  gpu.index = index;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(index);
  gpu.pci_bus_id = "00000000:" + std::to_string(10 + index) + ":00.0";
  gpu.memory_total_mib = 81559;
  gpu.memory_used_mib = 1;
  gpu.compute_capability = "9.0";
  gpu.persistence_mode = true;
  gpu.mig_enabled = false;
  gpu.ecc_enabled = true;
  gpu.ecc_uncorrected_volatile = 0;
  gpu.ecc_uncorrected_aggregate = 0;
  gpu.ecc_corrected_volatile = 0;
  gpu.remapped_rows_correctable = 0;
  gpu.remapped_rows_uncorrectable = 0;
  gpu.remapped_rows_pending = false;
  gpu.remapped_rows_failure = false;
  gpu.temperature_c = 30;
  gpu.temperature_slowdown_c = 87;
  gpu.power_draw_w = 100;
  gpu.power_limit_w = 700;
  gpu.utilization_percent = 0;
  gpu.pcie_gen_current = 5;
  gpu.pcie_gen_max = 5;
  gpu.pcie_width_current = 16;
  gpu.pcie_width_max = 16;
  gpu.process_count = 0;
  return gpu;
}

/// A healthy node with `gpus` H100s, driver 550.127.05, facts as read under --root (live = false).
inline HostFacts healthy_node(unsigned gpus = 1) {
  HostFacts f;
  f.live = false;
  f.host.os_id = "ubuntu";
  f.host.os_version_id = "22.04";
  f.host.os_pretty_name = "Ubuntu 22.04.4 LTS";
  f.host.kernel_release = "5.15.0-119-generic";
  f.host.architecture = "x86_64";
  f.host.cpu_count = 16 * std::max(gpus, 1u);
  f.host.memory_total_kib = 256 * k_kib_per_gib * std::max(gpus, 1u);
  f.host.free_bytes = {{"/", 200 * k_gib}};
  f.kernel.module_loaded = true;
  f.kernel.module_version = "550.127.05";
  f.kernel.open_module = false;
  f.kernel.modules_source = "/proc/modules";
  f.kernel.device_nodes = {"nvidia0", "nvidiactl"};
  f.driver_libraries = {{"libnvidia-ml", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.127.05", "550.127.05"},
                        {"libcuda", "/usr/lib/x86_64-linux-gnu/libcuda.so.550.127.05", "550.127.05"}};
  f.gpus.availability = {true, "test", ""};
  f.gpus.driver_version = "550.127.05";
  f.gpus.cuda_driver_version = "12.4";
  f.gpus.attached_gpus = gpus;
  for (unsigned i = 0; i < gpus; ++i) f.gpus.gpus.push_back(healthy_gpu(i));
  f.kernel_log_source = "/var/log/kern.log";
  return f;
}

/// A CUDA toolkit `version` under /usr/local/cuda-X.Y.
inline gpuenv::probe::CudaToolkit toolkit(const std::string& version, bool nvcc = true, bool on_path = false) {
  gpuenv::probe::CudaToolkit tk;
  tk.root = "/usr/local/cuda-" + version.substr(0, version.find('.', version.find('.') + 1));  // 12.4.1 -> cuda-12.4
  tk.version = version;
  tk.has_nvcc = nvcc;
  tk.on_path = on_path;
  return tk;
}

/// An Xid `code` kernel-log event on the GPU at `bus`.
inline gpuenv::probe::KernelEvent xid_event(int code, const std::string& bus = "0000:3b:00") {
  gpuenv::probe::KernelEvent event;
  event.kind = gpuenv::probe::KernelEventKind::xid;
  event.xid = code;
  event.pci_bus_id = bus;
  event.message = "test message";
  return event;
}

/// The profile the conformance rows judge against: pytorch-2.4-cu124's fields.
inline gpuenv::profile::Profile test_profile() {
  gpuenv::profile::Profile p;
  p.name = "node-test";
  p.os_distro = "ubuntu";
  p.os_version = "22.04";
  p.cuda_version = "12.4.1";
  p.cudnn_version = "9";
  p.driver_min = "550.54.15";
  return p;
}

/// test_profile() with a stable address, for rows that point Expectations at it.
inline const gpuenv::profile::Profile& test_profile_ref() {
  static const gpuenv::profile::Profile profile = test_profile();
  return profile;
}

/// doctor::evaluate with the builtin thresholds and knowledge base.
inline std::vector<Finding> judge(const HostFacts& facts, const Expectations& expectations = {}) {
  return gpuenv::doctor::evaluate(facts, thresholds(), kb(), expectations);
}

/// One change to the healthy node and the finding it must produce. `status` nullopt: no finding with that id.
struct Row {
  const char* what;
  std::function<void(HostFacts&, Expectations&)> change;
  const char* id;
  std::optional<Status> status;
  std::vector<const char*> excerpts = {};  ///< each must appear in the finding's message or remedy
};

/// Judges each row's change to healthy_node() and checks the finding it names (status, excerpts, a remedy for
/// warn and fail).
inline void run_rows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    HostFacts facts = healthy_node();
    Expectations expectations;
    row.change(facts, expectations);
    const auto findings = judge(facts, expectations);
    INFO("row: " << row.what);
    INFO("findings:\n" << dump_findings(findings));
    const auto matching = findings_with_id(findings, row.id);
    if (!row.status) {
      CHECK(matching.empty());
      continue;
    }
    REQUIRE(matching.size() >= 1);
    const Finding& f = *matching.front();
    CHECK(f.status == *row.status);
    for (const char* excerpt : row.excerpts) {
      INFO("excerpt: " << excerpt);
      CHECK((f.message + " | " + f.remedy).find(excerpt) != std::string::npos);
    }
    if (f.status == Status::warn || f.status == Status::fail) CHECK_FALSE(f.remedy.empty());
  }
}

/// Replaces the node's GPUs with `count` healthy ones.
inline void set_gpus(HostFacts& f, unsigned count) {
  f.gpus.gpus.clear();
  for (unsigned i = 0; i < count; ++i) f.gpus.gpus.push_back(healthy_gpu(i));
  f.gpus.attached_gpus = count;
}

}  // namespace gpuenv::testing::doctor_rules
