// doctor::evaluate on HostFacts built in C++: each rule family in both directions, table-driven. The base node is
// healthy (every check passes or skips); each row changes one thing and names the finding that must follow.

#include "doctor/rules.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compat/horizon.hpp"
#include "compat/knowledge_base.hpp"
#include "doctor/thresholds.hpp"
#include "probe/facts.hpp"
#include "profile/profile.hpp"
#include "report/finding.hpp"

namespace {

using gpuenv::doctor::Expectations;
using gpuenv::probe::GpuFacts;
using gpuenv::probe::HostFacts;
using gpuenv::report::Finding;
using gpuenv::report::Status;

constexpr std::uint64_t k_gib = 1024ull * 1024 * 1024;
constexpr std::uint64_t k_kib_per_gib = 1024ull * 1024;

const gpuenv::doctor::Thresholds& thresholds() {
  static const auto* loaded = [] {
    auto t = gpuenv::doctor::builtin_thresholds();
    REQUIRE(t);
    return *t;
  }();
  return *loaded;
}

const gpuenv::compat::KnowledgeBase& kb() {
  static const auto* loaded = [] {
    auto k = gpuenv::compat::builtin_knowledge_base();
    REQUIRE(k);
    return *k;
  }();
  return *loaded;
}

GpuFacts healthy_gpu(unsigned index) {
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
HostFacts healthy_node(unsigned gpus = 1) {
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

gpuenv::probe::CudaToolkit toolkit(const std::string& version, bool nvcc = true, bool on_path = false) {
  gpuenv::probe::CudaToolkit tk;
  tk.root = "/usr/local/cuda-" + version.substr(0, version.find('.', version.find('.') + 1));  // 12.4.1 -> cuda-12.4
  tk.version = version;
  tk.has_nvcc = nvcc;
  tk.on_path = on_path;
  return tk;
}

gpuenv::probe::KernelEvent xid_event(int code, const std::string& bus = "0000:3b:00") {
  gpuenv::probe::KernelEvent event;
  event.kind = gpuenv::probe::KernelEventKind::xid;
  event.xid = code;
  event.pci_bus_id = bus;
  event.message = "test message";
  return event;
}

/// The profile the conformance rows judge against: pytorch-2.4-cu124's fields.
gpuenv::profile::Profile test_profile() {
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
const gpuenv::profile::Profile& test_profile_ref() {
  static const gpuenv::profile::Profile profile = test_profile();
  return profile;
}

std::vector<Finding> judge(const HostFacts& facts, const Expectations& expectations = {}) {
  return gpuenv::doctor::evaluate(facts, thresholds(), kb(), expectations);
}

std::vector<const Finding*> with_id(const std::vector<Finding>& findings, const std::string& id) {
  std::vector<const Finding*> out;
  for (const Finding& f : findings) {
    if (f.id == id) out.push_back(&f);
  }
  return out;
}

std::string dump(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) {
    out += "  " + std::string(gpuenv::report::to_string(f.status)) + " " + f.id + ": " + f.message;
    if (!f.remedy.empty()) out += " [remedy: " + f.remedy + "]";
    out += "\n";
  }
  return out;
}

/// One change to the healthy node and the finding it must produce. `status` nullopt: no finding with that id.
struct Row {
  const char* what;
  std::function<void(HostFacts&, Expectations&)> change;
  const char* id;
  std::optional<Status> status;
  std::vector<const char*> excerpts = {};  ///< each must appear in the finding's message or remedy
};

void run_rows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    HostFacts facts = healthy_node();
    Expectations expectations;
    row.change(facts, expectations);
    const auto findings = judge(facts, expectations);
    INFO("row: " << row.what);
    INFO("findings:\n" << dump(findings));
    const auto matching = with_id(findings, row.id);
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

void set_gpus(HostFacts& f, unsigned count) {
  f.gpus.gpus.clear();
  for (unsigned i = 0; i < count; ++i) f.gpus.gpus.push_back(healthy_gpu(i));
  f.gpus.attached_gpus = count;
}

}  // namespace

TEST_CASE("rules: the healthy base node is READY", "[doctor][rules]") {
  for (unsigned gpus : {1u, 8u}) {
    const auto findings = judge(healthy_node(gpus));
    INFO(gpus << " GPUs:\n" << dump(findings));
    CHECK(gpuenv::report::verdict_of(findings) == gpuenv::report::Verdict::ok);
    for (const Finding& f : findings) CHECK((f.status == Status::pass || f.status == Status::skip));
  }
}

TEST_CASE("rules: host size (vCPUs per GPU, RAM vs GPU memory, free disk)", "[doctor][rules]") {
  run_rows({
      {"8 GPUs, 32 vCPUs: exactly 4 per GPU",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         f.host.cpu_count = 32;
         f.host.memory_total_kib = 2048 * k_kib_per_gib;
       },
       "host.vcpus_per_gpu",
       Status::pass,
       {"32 vCPUs for 8 GPUs (4 per GPU)"}},
      {"8 GPUs, 31 vCPUs",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         f.host.cpu_count = 31;
         f.host.memory_total_kib = 2048 * k_kib_per_gib;
       },
       "host.vcpus_per_gpu",
       Status::warn,
       {"3.9 per GPU", "below 4 per GPU", "more vCPUs"}},
      {"CPU count unknown",
       [](HostFacts& f, Expectations&) { f.host.cpu_count.reset(); },
       "host.vcpus_per_gpu",
       Status::skip,
       {"CPU count unknown"}},
      {"no GPUs to size against",
       [](HostFacts& f, Expectations&) {
         f.gpus.availability = {false, "NVML", "no"};
         f.gpus.gpus.clear();
       },
       "host.vcpus_per_gpu",
       Status::skip,
       {"no GPUs"}},
      {"RAM exactly 2x GPU memory",
       [](HostFacts& f, Expectations&) { f.host.memory_total_kib = 2ull * 81559 * 1024; },
       "host.memory",
       Status::pass,
       {"(2x)"}},
      {"RAM 128 GiB for 80 GiB of GPU memory",
       [](HostFacts& f, Expectations&) { f.host.memory_total_kib = 128 * k_kib_per_gib; },
       "host.memory",
       Status::warn,
       {"128 GiB RAM", "below 2x", "at least 159 GiB"}},
      {"8x80 GiB GPUs with 1 TiB RAM",
       [](HostFacts& f, Expectations&) {
         set_gpus(f, 8);
         f.host.cpu_count = 64;
         f.host.memory_total_kib = 1024 * k_kib_per_gib;
       },
       "host.memory",
       Status::warn,
       {"1024 GiB RAM for 637 GiB of GPU memory"}},
      {"host memory unknown",
       [](HostFacts& f, Expectations&) { f.host.memory_total_kib.reset(); },
       "host.memory",
       Status::skip,
       {"host memory unknown"}},
      {"20 GiB free",
       [](HostFacts& f, Expectations&) {
         f.host.free_bytes = {{"/", 20 * k_gib}};
       },
       "host.disk_free",
       Status::pass,
       {"/ 20 GiB free"}},
      {"19.5 GiB free on /",
       [](HostFacts& f, Expectations&) {
         f.host.free_bytes = {{"/", 39 * k_gib / 2}};
       },
       "host.disk_free",
       Status::warn,
       {"/ has 19.5 GiB free", "below 20 GiB"}},
      {"/ roomy, /var/lib/docker full",
       [](HostFacts& f, Expectations&) {
         f.host.free_bytes = {{"/", 100 * k_gib}, {"/var/lib/docker", 2 * k_gib}};
       },
       "host.disk_free",
       Status::warn,
       {"/var/lib/docker has 2 GiB free"}},
      {"free space unknown", [](HostFacts& f, Expectations&) { f.host.free_bytes.clear(); }, "host.disk_free",
       Status::skip},
  });
}

TEST_CASE("rules: kernel module, nouveau, Secure Boot, device nodes, probe errors", "[doctor][rules]") {
  const auto no_module = [](HostFacts& f) {
    f.kernel.module_loaded = false;
    f.kernel.module_version.clear();
    f.kernel.open_module.reset();
    f.gpus = {};
    f.gpus.availability.reason = "cannot load libnvidia-ml.so.1";
  };
  run_rows({
      {"module loaded",
       [](HostFacts&, Expectations&) {},
       "driver.kernel_module",
       Status::pass,
       {"550.127.05 loaded (proprietary kernel module)"}},
      {"open module loaded",
       [](HostFacts& f, Expectations&) { f.kernel.open_module = true; },
       "driver.kernel_module",
       Status::pass,
       {"(open kernel module)"}},
      {"no module",
       [&](HostFacts& f, Expectations&) { no_module(f); },
       "driver.kernel_module",
       Status::fail,
       {"no NVIDIA kernel module is loaded (/proc/modules)", "install the NVIDIA driver", "modprobe nvidia"}},
      {"no module, nouveau loaded",
       [&](HostFacts& f, Expectations&) {
         no_module(f);
         f.kernel.nouveau_loaded = true;
       },
       "driver.kernel_module",
       Status::fail,
       {"blacklist nouveau", "update-initramfs -u", "then install the NVIDIA driver"}},
      {"no module, nouveau loaded: nouveau finding",
       [&](HostFacts& f, Expectations&) {
         no_module(f);
         f.kernel.nouveau_loaded = true;
       },
       "driver.nouveau",
       Status::fail,
       {"owns the GPUs", "modeset=0"}},
      {"nvidia and nouveau both loaded",
       [](HostFacts& f, Expectations&) { f.kernel.nouveau_loaded = true; },
       "driver.nouveau",
       Status::warn,
       {"next to nvidia"}},
      {"nouveau not loaded", [](HostFacts&, Expectations&) {}, "driver.nouveau", Status::pass},
      {"no module, Secure Boot on",
       [&](HostFacts& f, Expectations&) {
         no_module(f);
         f.kernel.secure_boot = true;
       },
       "driver.kernel_module",
       Status::fail,
       {"Secure Boot is on", "mokutil --import"}},
      {"no module, Secure Boot on: its own finding",
       [&](HostFacts& f, Expectations&) {
         no_module(f);
         f.kernel.secure_boot = true;
       },
       "driver.secure_boot",
       Status::warn,
       {"refuses unsigned NVIDIA modules"}},
      {"no module, Secure Boot off",
       [&](HostFacts& f, Expectations&) {
         no_module(f);
         f.kernel.secure_boot = false;
       },
       "driver.secure_boot", Status::pass},
      {"module loaded, Secure Boot on: not a problem", [](HostFacts& f, Expectations&) { f.kernel.secure_boot = true; },
       "driver.secure_boot", std::nullopt},
      {"no module: GPUs are not queried",
       [&](HostFacts& f, Expectations&) { no_module(f); },
       "gpu.count",
       Status::skip,
       {"no NVIDIA driver"}},
      {"live, /dev/nvidiactl missing",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.kernel.device_nodes = {"nvidia0"};
       },
       "driver.device_nodes",
       Status::warn,
       {"/dev/nvidiactl is missing", "nvidia-modprobe"}},
      {"live, /dev/nvidiactl present",
       [](HostFacts& f, Expectations&) { f.live = true; },
       "driver.device_nodes",
       Status::pass,
       {"nvidiactl"}},
      {"--root: device nodes are not judged", [](HostFacts& f, Expectations&) { f.kernel.device_nodes.clear(); },
       "driver.device_nodes", std::nullopt},
      {"probe routine not called (nouveau conflict)",
       [&](HostFacts& f, Expectations&) {
         no_module(f);
         gpuenv::probe::KernelEvent e;
         e.kind = gpuenv::probe::KernelEventKind::probe_not_called;
         e.message = "The NVIDIA probe routine was not called for 3 device(s).";
         e.device_count = 3;  // as parse_xid_events reads it: the finding says it, never the log's text
         f.kernel_events.push_back(e);
       },
       "driver.probe",
       Status::fail,
       {"probe routine was not called", "blacklist nouveau"}},
      {"probe failed",
       [](HostFacts& f, Expectations&) {
         gpuenv::probe::KernelEvent e;
         e.kind = gpuenv::probe::KernelEventKind::probe_failed;
         e.message = "The NVIDIA probe routine failed for 1 device(s).";
         e.device_count = 1;
         f.kernel_events.push_back(e);
       },
       "driver.probe",
       Status::fail,
       {"failed for 1 device", "supported by this driver branch"}},
      {"driver loaded event alone",
       [](HostFacts& f, Expectations&) {
         gpuenv::probe::KernelEvent e;
         e.kind = gpuenv::probe::KernelEventKind::driver_loaded;
         e.driver_version = "550.127.05";
         f.kernel_events.push_back(e);
       },
       "driver.probe", std::nullopt},
  });
}

TEST_CASE("rules: driver/library version mismatch", "[doctor][rules]") {
  run_rows({
      {"libraries match the module",
       [](HostFacts&, Expectations&) {},
       "driver.library_mismatch",
       Status::pass,
       {"match the kernel module 550.127.05"}},
      {"libraries upgraded under the loaded module",
       [](HostFacts& f, Expectations&) {
         for (auto& lib : f.driver_libraries) {
           lib.version = "550.144.03";
           lib.path = "/usr/lib/x86_64-linux-gnu/" + lib.name + ".so.550.144.03";
         }
       },
       "driver.library_mismatch",
       Status::fail,
       {"the loaded kernel module is 550.127.05", "libnvidia-ml 550.144.03", "libcuda 550.144.03", "reboot",
        "unattended upgrades"}},
      {"one stale copy among matching ones",
       [](HostFacts& f, Expectations&) {
         f.driver_libraries.push_back(
             {"libnvidia-ml", "/usr/local/nvidia/lib64/libnvidia-ml.so.535.183.01", "535.183.01"});
       },
       "driver.library_mismatch",
       Status::fail,
       {"550.127.05", "libnvidia-ml 535.183.01 (/usr/local/nvidia/lib64/"}},
      {"NVML says version mismatch",
       [](HostFacts& f, Expectations&) {
         f.gpus = {};
         f.gpus.availability.reason = "nvmlInit failed: RM has detected an NVML/RM version mismatch. (NVML error 18)";
       },
       "driver.library_mismatch",
       Status::fail,
       {"550.127.05", "NVML reports a driver/library version mismatch"}},
      {"no libraries on disk",
       [](HostFacts& f, Expectations&) { f.driver_libraries.clear(); },
       "driver.library_mismatch",
       Status::skip,
       {"no libnvidia-ml or libcuda"}},
      {"libraries but no module",
       [](HostFacts& f, Expectations&) {
         f.kernel.module_loaded = false;
         f.kernel.module_version.clear();
       },
       "driver.library_mismatch",
       Status::skip,
       {"550.127.05 found, but no loaded module"}},
  });
}

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

TEST_CASE("rules: Xid events in the kernel log", "[doctor][rules]") {
  run_rows({
      {"no events",
       [](HostFacts&, Expectations&) {},
       "xid.events",
       Status::pass,
       {"no Xid events in /var/log/kern.log"}},
      {"Xid 79",
       [](HostFacts& f, Expectations&) { f.kernel_events.push_back(xid_event(79)); },
       "xid.events",
       Status::fail,
       {"Xid 79 on 0000:3b:00", "fallen off the bus", "Xid 79:"}},
      {"Xid 79 twice on one bus",
       [](HostFacts& f, Expectations&) {
         f.kernel_events.push_back(xid_event(79));
         f.kernel_events.push_back(xid_event(79));
       },
       "xid.events",
       Status::fail,
       {"Xid 79 on 0000:3b:00 x2"}},
      {"Xid 48 (double-bit ECC)", [](HostFacts& f, Expectations&) { f.kernel_events.push_back(xid_event(48)); },
       "xid.events", Status::fail},
      {"Xid 13 alone is a warning",
       [](HostFacts& f, Expectations&) { f.kernel_events.push_back(xid_event(13)); },
       "xid.events",
       Status::warn,
       {"Xid 13"}},
      {"Xid 13 and 79: the worst wins",
       [](HostFacts& f, Expectations&) {
         f.kernel_events.push_back(xid_event(13));
         f.kernel_events.push_back(xid_event(79, "0000:9b:00"));
       },
       "xid.events",
       Status::fail,
       {"Xid 13 on 0000:3b:00", "Xid 79 on 0000:9b:00"}},
      {"an Xid not in the table",
       [](HostFacts& f, Expectations&) { f.kernel_events.push_back(xid_event(9999)); },
       "xid.events",
       Status::warn,
       {"not in gpuenv's Xid table", "look up Xid 9999"}},
      {"fallen off the bus without an Xid line",
       [](HostFacts& f, Expectations&) {
         gpuenv::probe::KernelEvent e;
         e.kind = gpuenv::probe::KernelEventKind::fallen_off_bus;
         e.pci_bus_id = "0000:b3:00.0";
         f.kernel_events.push_back(e);
       },
       "xid.events",
       Status::fail,
       {"fallen off the bus on 0000:b3:00.0"}},
      {"no log readable",
       [](HostFacts& f, Expectations&) {
         f.kernel_log_source = "unreadable: /var/log/kern.log (needs root or the adm group)";
       },
       "xid.events",
       Status::skip,
       {"no kernel log could be read", "run doctor as root"}},
      {"no log source at all", [](HostFacts& f, Expectations&) { f.kernel_log_source.clear(); }, "xid.events",
       Status::skip},
  });
}

TEST_CASE("rules: CUDA toolkit on PATH and against the driver", "[doctor][rules]") {
  run_rows({
      {"no toolkit", [](HostFacts&, Expectations&) {}, "toolkit.installed", Status::skip},
      {"no toolkit: nothing to judge on PATH", [](HostFacts& f, Expectations&) { f.live = true; }, "toolkit.path",
       std::nullopt},
      {"live, nvcc not on PATH",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.toolkits = {toolkit("12.4.1")};
       },
       "toolkit.path",
       Status::warn,
       {"CUDA 12.4.1 is installed but its nvcc is not on PATH", "export PATH=/usr/local/cuda-12.4/bin:$PATH"}},
      {"live, nvcc on PATH",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.toolkits = {toolkit("12.4.1", true, true)};
       },
       "toolkit.path",
       Status::pass,
       {"nvcc of CUDA 12.4.1 is on PATH"}},
      {"live, the older of two toolkits on PATH",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.toolkits = {toolkit("11.8.0", true, true), toolkit("12.4.1")};
       },
       "toolkit.path",
       Status::pass,
       {"CUDA 11.8.0"}},
      {"live, toolkit without nvcc (runtime only)",
       [](HostFacts& f, Expectations&) {
         f.live = true;
         f.toolkits = {toolkit("12.4.1", false)};
       },
       "toolkit.path", std::nullopt},
      {"--root: PATH is not judged", [](HostFacts& f, Expectations&) { f.toolkits = {toolkit("12.4.1")}; },
       "toolkit.path", Status::skip},
      {"toolkit 12.4.1 on driver 550.127.05",
       [](HostFacts& f, Expectations&) { f.toolkits = {toolkit("12.4.1")}; },
       "toolkit.driver_support",
       Status::pass,
       {"meets CUDA 12.4.1's minimum driver 550.54.15"}},
      {"toolkit 12.8 on driver 535 (minor-version compatibility)",
       [](HostFacts& f, Expectations&) {
         f.kernel.module_version = "535.86.05";
         for (auto& lib : f.driver_libraries) lib.version = "535.86.05";
         f.gpus.cuda_driver_version = "12.2";
         f.toolkits = {toolkit("12.8.1")};
       },
       "toolkit.driver_support",
       Status::warn,
       {"driver 535.86.05 is below CUDA 12.8.1's minimum", "minor-version-compatibility", "570"}},
      {"toolkit 12.4 on driver 470 (below the CUDA 12 floor)",
       [](HostFacts& f, Expectations&) {
         f.kernel.module_version = "470.256.02";
         for (auto& lib : f.driver_libraries) lib.version = "470.256.02";
         f.gpus.cuda_driver_version = "11.4";
         f.toolkits = {toolkit("12.4.1")};
       },
       "toolkit.driver_support",
       Status::fail,
       {"below the CUDA 12.x floor", "cuda-compat-12-4"}},
      {"a toolkit of a CUDA major newer than gpuenv's data: a warning naming the horizon, not a failure",
       [](HostFacts& f, Expectations&) {
         const auto newest = *gpuenv::compat::cuda_horizon(kb()).newest;
         f.toolkits = {toolkit(std::to_string(newest.major() + 1) + ".0.1")};
       },
       "toolkit.driver_support",
       Status::warn,
       {"gpuenv's data ends at CUDA", "update gpuenv, or add the row to a data overlay"}},
      {"driver meets the minimum but reports an older CUDA",
       [](HostFacts& f, Expectations&) {
         f.gpus.cuda_driver_version = "12.2";
         f.toolkits = {toolkit("12.4.1")};
       },
       "toolkit.driver_support",
       Status::warn,
       {"newer than the CUDA 12.2 the driver reports"}},
      {"no driver to judge against",
       [](HostFacts& f, Expectations&) {
         f.kernel.module_loaded = false;
         f.kernel.module_version.clear();
         f.gpus = {};
         f.toolkits = {toolkit("12.4.1")};
       },
       "toolkit.driver_support",
       Status::skip,
       {"no driver to judge it against"}},
  });
}

TEST_CASE("rules: a node and profile newer than gpuenv's data warn, never fail", "[doctor][rules][horizon]") {
  // CUDA one patch past the newest known release: the profile wants it and the node has it.
  static const gpuenv::profile::Profile newer_cuda = [] {
    auto p = test_profile();
    const auto newest = *gpuenv::compat::cuda_horizon(kb()).newest;
    p.cuda_version = gpuenv::util::Version({newest.major(), newest.minor(), newest.component(2) + 1}).str();
    p.cudnn_version.clear();
    p.driver_min.clear();
    return p;
  }();
  // A GPU whose compute capability is newer than every architecture in the data.
  static const std::string newer_cc =
      std::to_string(gpuenv::compat::compute_capability_horizon(kb()).newest->major() + 1) + ".0";
  run_rows({
      {"the profile's CUDA is newer than the data",
       [](HostFacts& f, Expectations& e) {
         e.profile = &newer_cuda;
         f.kernel.module_version = "999.10.1";
         f.gpus.driver_version = "999.10.1";
         f.gpus.cuda_driver_version = "99.0";
         for (auto& lib : f.driver_libraries) lib.version = "999.10.1";
         f.toolkits = {toolkit(newer_cuda.cuda_version)};
       },
       "profile.cuda.release",
       Status::warn,
       {"gpuenv's data ends at CUDA", "update gpuenv"}},
      {"the node's toolkit of that CUDA is judged by the driver its minor needs, not failed",
       [](HostFacts& f, Expectations&) {
         f.kernel.module_version = "999.10.1";
         f.gpus.driver_version = "999.10.1";
         f.gpus.cuda_driver_version = "99.0";
         for (auto& lib : f.driver_libraries) lib.version = "999.10.1";
         f.toolkits = {toolkit(newer_cuda.cuda_version)};
       },
       "toolkit.driver_support",
       Status::pass,
       {"driver 999.10.1 meets"}},
      {"the node's GPU has a compute capability newer than the data",
       [](HostFacts& f, Expectations& e) {
         e.profile = &test_profile_ref();
         f.gpus.gpus[0].compute_capability = newer_cc;
       },
       "profile.node_cuda_support",
       Status::warn,
       {"gpuenv's data ends at compute capability"}},
  });
}

TEST_CASE("rules: cuDNN built for another CUDA major", "[doctor][rules]") {
  const auto cudnn = [](const std::string& version, const std::string& built_for) {
    gpuenv::probe::Library lib;
    lib.version = version;
    lib.header = "/usr/include/cudnn_version.h";
    lib.built_for_cuda = built_for;
    return lib;
  };
  run_rows({
      {"no cuDNN", [](HostFacts&, Expectations&) {}, "cudnn.installed", Status::skip},
      {"cuDNN 9 for CUDA 11 with toolkit 12.4",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("12.4.1")};
         f.cudnn = cudnn("9.6.0", "11");
       },
       "cudnn.cuda_major",
       Status::fail,
       {"cuDNN 9.6.0 was built for CUDA 11 but the toolkit is CUDA 12.4.1", "libcudnn9-cuda-12"}},
      {"cuDNN 9 for CUDA 12 with toolkit 12.4",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("12.4.1")};
         f.cudnn = cudnn("9.6.0", "12");
       },
       "cudnn.cuda_major",
       Status::pass,
       {"built for CUDA 12, matching the toolkit"}},
      {"cuDNN 8 package for CUDA 12.2 with toolkit 12.4",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("12.4.1")};
         f.cudnn = cudnn("8.9.7", "12.2");
       },
       "cudnn.cuda_major", Status::pass},
      {"cuDNN 8 for CUDA 11.8 with toolkits 11.8 and 12.4: the newest counts",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("11.8.0"), toolkit("12.4.1")};
         f.cudnn = cudnn("8.9.7", "11.8");
       },
       "cudnn.cuda_major", Status::fail},
      {"built-for unknown",
       [&](HostFacts& f, Expectations&) {
         f.toolkits = {toolkit("12.4.1")};
         f.cudnn = cudnn("9.6.0", "");
       },
       "cudnn.cuda_major", std::nullopt},
      {"no toolkit to compare with", [&](HostFacts& f, Expectations&) { f.cudnn = cudnn("9.6.0", "11"); },
       "cudnn.cuda_major", std::nullopt},
      {"header and library disagree",
       [&](HostFacts& f, Expectations&) {
         f.cudnn = cudnn("9.6.0", "12");
         f.cudnn->runtime_version = "8.9.7";
       },
       "cudnn.installed",
       Status::warn,
       {"header says 9.6.0 but the library reports 8.9.7"}},
  });
}

TEST_CASE("rules: NVIDIA Container Toolkit and engine runtimes", "[doctor][rules]") {
  run_rows({
      {"no engine, no toolkit", [](HostFacts&, Expectations&) {}, "container.toolkit", Status::skip},
      {"Docker without the toolkit",
       [](HostFacts& f, Expectations&) { f.containers.docker_installed = true; },
       "container.toolkit",
       Status::warn,
       {"containers cannot see the GPUs", "nvidia-ctk runtime configure"}},
      {"containerd without the toolkit", [](HostFacts& f, Expectations&) { f.containers.containerd_installed = true; },
       "container.toolkit", Status::warn},
      {"toolkit present",
       [](HostFacts& f, Expectations&) { f.containers.nvidia_ctk = "/usr/bin/nvidia-ctk"; },
       "container.toolkit",
       Status::pass,
       {"(/usr/bin/nvidia-ctk)"}},
      {"toolkit and Docker configured",
       [](HostFacts& f, Expectations&) {
         f.containers.nvidia_ctk = "/usr/bin/nvidia-ctk";
         f.containers.docker_installed = true;
         f.containers.docker_nvidia_runtime = true;
       },
       "container.docker_runtime", Status::pass},
      {"toolkit, Docker not configured",
       [](HostFacts& f, Expectations&) {
         f.containers.nvidia_ctk = "/usr/bin/nvidia-ctk";
         f.containers.docker_installed = true;
       },
       "container.docker_runtime",
       Status::warn,
       {"no nvidia runtime", "--runtime=docker"}},
      {"toolkit, containerd not configured",
       [](HostFacts& f, Expectations&) {
         f.containers.nvidia_container_runtime = true;
         f.containers.containerd_installed = true;
       },
       "container.containerd_runtime",
       Status::warn,
       {"--runtime=containerd"}},
  });
}

TEST_CASE("rules: conformance to a profile", "[doctor][rules]") {
  static const gpuenv::profile::Profile profile = test_profile();
  static const gpuenv::profile::Profile cc80 = [] {
    auto p = test_profile();
    p.gpu_compute_capabilities = {"8.0"};
    return p;
  }();
  static const gpuenv::profile::Profile cc90 = [] {
    auto p = test_profile();
    p.gpu_compute_capabilities = {"8.0", "9.0"};
    return p;
  }();
  static const gpuenv::profile::Profile open_modules = [] {
    auto p = test_profile();
    p.driver_modules = "open";
    return p;
  }();
  const auto with_models = [](std::vector<std::string> models, std::vector<std::string> ccs = {}) {
    auto p = test_profile();
    p.gpu_models = std::move(models);
    p.gpu_compute_capabilities = std::move(ccs);
    return p;
  };
  static const gpuenv::profile::Profile t4 = with_models({"T4"});
  static const gpuenv::profile::Profile h100 = with_models({"H100"});
  static const gpuenv::profile::Profile h200 = with_models({"H200"});
  static const gpuenv::profile::Profile b200 = with_models({"B200"});
  static const gpuenv::profile::Profile t4_or_cc90 = with_models({"T4"}, {"9.0"});
  const auto renamed = [](const char* name) {
    return [name](HostFacts& f) {
      for (GpuFacts& gpu : f.gpus.gpus) {
        gpu.name = name;
        gpu.compute_capability.clear();
      }
    };
  };
  static const gpuenv::profile::Profile rocky = [] {
    auto p = test_profile();
    p.os_distro = "rockylinux";
    p.os_version = "9";
    return p;
  }();
  run_rows({
      {"no profile: no profile findings", [](HostFacts& f, Expectations&) { f.toolkits = {toolkit("12.4.1")}; },
       "profile.cuda_toolkit", std::nullopt},
      {"the node runs the profile's OS",
       [](HostFacts&, Expectations& e) { e.profile = &profile; },
       "profile.os",
       Status::pass,
       {"the node runs ubuntu 22.04, as profile node-test targets"}},
      {"another Ubuntu release",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.host.os_version_id = "24.04";
       },
       "profile.os",
       Status::warn,
       {"profile node-test targets ubuntu 22.04; this node runs ubuntu 24.04", "container image"}},
      {"rockylinux 9 is os-release rocky 9.4",
       [](HostFacts& f, Expectations& e) {
         e.profile = &rocky;
         f.host.os_id = "rocky";
         f.host.os_version_id = "9.4";
       },
       "profile.os", Status::pass},
      {"OS unknown on the node: no finding",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.host.os_id.clear();
       },
       "profile.os", std::nullopt},
      {"the profile's toolkit is installed",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.4.1")};
       },
       "profile.cuda_toolkit",
       Status::pass,
       {"CUDA 12.4.1 is installed at /usr/local/cuda-12.4"}},
      // nvcc --version names the release at X.Y ("release 12.4"): that is the profile's 12.4.1 at the precision
      // written (issue 25, rule 2); another minor, or another full version, is not.
      {"a toolkit known only as 12.4 (nvcc) is the profile's 12.4.1",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.4")};
       },
       "profile.cuda_toolkit", Status::pass},
      {"a toolkit known only as 12.5 is not 12.4.1",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.5")};
       },
       "profile.cuda_toolkit", Status::fail},
      {"a full 12.4.0 is not 12.4.1",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.4.0")};
       },
       "profile.cuda_toolkit", Status::fail},
      {"another toolkit is installed",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.toolkits = {toolkit("12.6.3")};
       },
       "profile.cuda_toolkit",
       Status::fail,
       {"wants CUDA 12.4.1; the node has 12.6.3", "install CUDA 12.4.1"}},
      {"no toolkit",
       [](HostFacts&, Expectations& e) { e.profile = &profile; },
       "profile.cuda_toolkit",
       Status::fail,
       {"the node has no toolkit"}},
      {"driver 550.127.05 meets the profile's floor",
       [](HostFacts&, Expectations& e) { e.profile = &profile; },
       "profile.driver",
       Status::pass,
       {"profile node-test", "550.127.05"}},
      {"driver 470 below the CUDA 12 floor",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.kernel.module_version = "470.256.02";
       },
       "profile.driver", Status::fail},
      {"no driver loaded",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.kernel.module_loaded = false;
         f.kernel.module_version.clear();
         f.gpus = {};
       },
       "profile.driver",
       Status::fail,
       {"needs driver >= 550.54.15; no driver is loaded", "branch 550"}},
      {"cuDNN 9.6.0 satisfies 9",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.cudnn = gpuenv::probe::Library{"9.6.0", "/usr/include/cudnn_version.h", "", "", "12"};
       },
       "profile.cudnn",
       Status::pass,
       {"cuDNN 9.6.0 satisfies the profile's 9"}},
      {"cuDNN 8 does not satisfy 9",
       [](HostFacts& f, Expectations& e) {
         e.profile = &profile;
         f.cudnn = gpuenv::probe::Library{"8.9.7", "/usr/include/cudnn_version.h", "", "", "12.2"};
       },
       "profile.cudnn",
       Status::fail,
       {"wants cuDNN 9; the node has cuDNN 8.9.7"}},
      {"GPU compute capability not targeted",
       [](HostFacts&, Expectations& e) { e.profile = &cc80; },
       "profile.gpu_targets",
       Status::fail,
       {"compute capability 9.0", "does not target (8.0)", "add \"9.0\""}},
      {"no CC reported (an nvidia-smi report): the product name gives it",
       [](HostFacts& f, Expectations& e) {
         e.profile = &cc80;
         for (GpuFacts& gpu : f.gpus.gpus) gpu.compute_capability.clear();
       },
       "profile.gpu_targets",
       Status::fail,
       {"compute capability 9.0", "does not target (8.0)"}},
      {"no CC and an unknown product: nothing to judge",
       [](HostFacts& f, Expectations& e) {
         e.profile = &cc80;
         for (GpuFacts& gpu : f.gpus.gpus) {
           gpu.compute_capability.clear();
           gpu.name = "NVIDIA Future GPU";
         }
       },
       "profile.gpu_targets", std::nullopt},
      {"GPU compute capability targeted", [](HostFacts&, Expectations& e) { e.profile = &cc90; }, "profile.gpu_targets",
       std::nullopt},
      {"no targets in the profile", [](HostFacts&, Expectations& e) { e.profile = &profile; }, "profile.gpu_targets",
       std::nullopt},
      {"profile names T4, the node has H100s: profile.gpu names both",
       [](HostFacts&, Expectations& e) { e.profile = &t4; },
       "profile.gpu",
       Status::fail,
       {"GPU 0 is NVIDIA H100 80GB HBM3 (H100, compute capability 9.0)", "profile node-test targets T4"}},
      {"profile names H100, the node has H100s",
       [](HostFacts&, Expectations& e) { e.profile = &h100; },
       "profile.gpu",
       Status::pass,
       {"NVIDIA H100 80GB HBM3", "targets (H100)"}},
      {"a model listed alongside the node's compute capability: the CC covers it",
       [](HostFacts&, Expectations& e) { e.profile = &t4_or_cc90; }, "profile.gpu", Status::pass},
      {"NVIDIA T400 is not a T4",
       [renamed](HostFacts& f, Expectations& e) {
         renamed("NVIDIA T400")(f);
         e.profile = &t4;
       },
       "profile.gpu",
       Status::fail,
       {"GPU 0 is NVIDIA T400 (not in gpuenv's GPU table)", "targets T4"}},
      {"GH200 is not an H200",
       [renamed](HostFacts& f, Expectations& e) {
         renamed("NVIDIA GH200 480GB")(f);
         e.profile = &h200;
       },
       "profile.gpu",
       Status::fail,
       {"(GH200, compute capability 9.0)", "targets H200"}},
      {"GB200 is not a B200",
       [renamed](HostFacts& f, Expectations& e) {
         renamed("NVIDIA GB200")(f);
         e.profile = &b200;
       },
       "profile.gpu",
       Status::fail,
       {"(GB200, compute capability 10.0)", "targets B200"}},
      {"an H200 is an H200",
       [renamed](HostFacts& f, Expectations& e) {
         renamed("NVIDIA H200")(f);
         e.profile = &h200;
       },
       "profile.gpu", Status::pass},
      {"no models in the profile: not judged", [](HostFacts&, Expectations& e) { e.profile = &cc90; }, "profile.gpu",
       std::nullopt},
      {"profile wants open modules, the node runs proprietary",
       [](HostFacts&, Expectations& e) { e.profile = &open_modules; },
       "profile.driver_modules",
       Status::warn,
       {"wants open kernel modules; the loaded module is proprietary"}},
      {"profile wants open modules and gets them",
       [](HostFacts& f, Expectations& e) {
         e.profile = &open_modules;
         f.kernel.open_module = true;
       },
       "profile.driver_modules", std::nullopt},
  });
}

TEST_CASE("rules: a conforming node under a profile is READY", "[doctor][rules]") {
  const gpuenv::profile::Profile profile = test_profile();
  HostFacts facts = healthy_node(8);
  facts.toolkits = {toolkit("12.4.1")};
  facts.cudnn = gpuenv::probe::Library{"9.6.0", "/usr/include/cudnn_version.h", "", "", "12"};
  Expectations expectations;
  expectations.gpu_count = 8;
  expectations.profile = &profile;
  const auto findings = judge(facts, expectations);
  INFO(dump(findings));
  CHECK(gpuenv::report::verdict_of(findings) == gpuenv::report::Verdict::ok);
  for (const char* id : {"profile.driver", "profile.cuda_toolkit", "profile.cudnn", "gpu.count"}) {
    INFO(id);
    const auto matching = with_id(findings, id);
    REQUIRE(matching.size() == 1);
    CHECK(matching.front()->status == Status::pass);
  }
}
