// doctor's host rules (src/doctor/host_rules.cpp) on the healthy node of rule_rows.hpp, table-driven in both
// directions: host size, the kernel module, nouveau, Secure Boot, device nodes, probe errors, a driver/library version
// mismatch and Xid events in the kernel log. Each row changes one thing and names the finding that must follow.

#include <catch2/catch.hpp>
#include <optional>

#include "doctor/rule_rows.hpp"
#include "doctor/rules.hpp"

using namespace gpuenv::testing::doctor_rules;  // NOLINT: the tables below are written in its vocabulary

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
