// `doctor --prometheus FILE`: the report as node_exporter textfile metrics (Prometheus text exposition format 0.0.4),
// named by the Prometheus conventions: `gpuenv_` prefix, base units in the name (bytes, seconds, celsius, watts),
// versions as labels of an `_info` gauge, one `gpuenv_finding_status{id=...}` series per finding. Every family is
// declared (HELP/TYPE) even when it has no sample on this node, so dashboards and alerts see a stable schema.
// The exact set of names is tested with the real `promtool check metrics` (tests/cli/doctor_prometheus_test.cpp).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "cli/doctor_output.hpp"
#include "cli/prometheus.hpp"
#include "probe/pci_bus_id.hpp"
#include "util/host_text.hpp"

namespace gpuenv::cli {
namespace {

using report::Status;

std::string driver_version(const probe::HostFacts& facts) {
  return facts.kernel.module_version.empty() ? facts.gpus.driver_version : facts.kernel.module_version;
}

std::string cuda_driver_version(const probe::HostFacts& facts) {
  return facts.cuda_driver.driver_cuda_version.empty() ? facts.gpus.cuda_driver_version
                                                       : facts.cuda_driver.driver_cuda_version;
}

void add_verdict(Exposition& e, const doctor::DoctorReport& r, const std::string& version) {
  const probe::HostFacts& facts = r.facts;
  e.family("gpuenv_node_info", "The node as gpuenv sees it; versions are labels and the value is always 1.");
  e.sample("gpuenv_node_info",
           {{"gpuenv_version", version},
            {"driver_version", driver_version(facts)},
            {"cuda_driver_version", cuda_driver_version(facts)},
            {"os", facts.host.os_id},
            {"os_version", facts.host.os_version_id},
            {"kernel", facts.host.kernel_release}},
           1);
  e.family("gpuenv_doctor_verdict", "The doctor verdict: 0 READY, 1 DEGRADED, 2 NOT READY.");
  e.sample("gpuenv_doctor_verdict", {}, verdict_number(r.verdict));
  e.family("gpuenv_doctor_ready", "1 when the node can take work (READY or DEGRADED), 0 when NOT READY.");
  e.sample("gpuenv_doctor_ready", {}, r.verdict == report::Verdict::not_ok ? 0 : 1);
}

/// A state set (one series per action, 1 for the node's): alerts and dashboards match on the label.
void add_action(Exposition& e, const std::vector<report::Finding>& findings) {
  e.family("gpuenv_node_action",
           "What the node needs (docs/doctor-json.md Actions): 1 for the most disruptive action of its findings.");
  const report::Action node = report::node_action(findings);
  for (report::Action action : report::k_actions)
    e.sample("gpuenv_node_action", {{"action", std::string(to_string(action))}}, action == node ? 1 : 0);
}

/// The labels of a per-GPU series: `gpu` (the NVML index) and `UUID` spelled as DCGM-exporter spells it
/// (NVIDIA/dcgm-exporter's default labels: gpu, UUID, pci_bus_id, device, modelName, Hostname), so a query can join
/// gpuenv's series with DCGM's on `UUID`.
Labels gpu_labels(const probe::GpuFacts& gpu) { return {{"gpu", std::to_string(gpu.index)}, {"UUID", gpu.uuid}}; }

void add_gpus(Exposition& e, const probe::HostFacts& facts, const PrometheusOptions& options) {
  e.family("gpuenv_gpus_visible", "GPUs visible to the driver.");
  e.sample("gpuenv_gpus_visible", {}, static_cast<double>(facts.gpus.gpus.size()));
  e.family("gpuenv_gpu_info", "One series per GPU; model and PCI bus id are labels and the value is 1.");
  for (const probe::GpuFacts& gpu : facts.gpus.gpus) {
    Labels labels = gpu_labels(gpu);
    labels.insert(labels.end(), {{"model", gpu.name}, {"pci_bus_id", gpu.pci_bus_id}});
    e.sample("gpuenv_gpu_info", labels, 1);
  }
  const auto per_gpu = [&e, &facts](const std::string& name, const std::string& help, bool samples, auto value_of) {
    e.family(name, help);
    if (!samples) return;
    for (const probe::GpuFacts& gpu : facts.gpus.gpus)
      if (const std::optional<double> value = value_of(gpu)) e.sample(name, gpu_labels(gpu), *value);
  };
  per_gpu("gpuenv_gpu_memory_total_bytes", "GPU memory size.", true,
          [](const probe::GpuFacts& g) -> std::optional<double> {
            if (!g.memory_total_mib) return std::nullopt;
            return static_cast<double>(*g.memory_total_mib) * 1024 * 1024;
          });
  // DCGM-exporter already exports these (DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_POWER_USAGE): samples only when asked.
  per_gpu("gpuenv_gpu_temperature_celsius",
          "GPU core temperature when doctor ran (with --prometheus-gpu-gauges; DCGM_FI_DEV_GPU_TEMP otherwise).",
          options.gpu_gauges, [](const probe::GpuFacts& g) { return g.temperature_c; });
  per_gpu("gpuenv_gpu_power_draw_watts",
          "GPU power draw when doctor ran (with --prometheus-gpu-gauges; DCGM_FI_DEV_POWER_USAGE otherwise).",
          options.gpu_gauges, [](const probe::GpuFacts& g) { return g.power_draw_w; });
  per_gpu("gpuenv_gpu_ecc_uncorrected_volatile_errors_total", "Uncorrected ECC errors since the driver loaded.", true,
          [](const probe::GpuFacts& g) -> std::optional<double> {
            if (!g.ecc_uncorrected_volatile) return std::nullopt;
            return static_cast<double>(*g.ecc_uncorrected_volatile);
          });
}

void add_xids(Exposition& e, const probe::HostFacts& facts) {
  e.family("gpuenv_xid_events", "NVIDIA Xid events in the kernel log doctor read, by Xid code.");
  std::map<int, int> counts;
  for (const probe::KernelEvent& event : facts.kernel_events)
    if (event.kind == probe::KernelEventKind::xid && event.xid) ++counts[*event.xid];
  for (const auto& [code, count] : counts) e.sample("gpuenv_xid_events", {{"xid", std::to_string(code)}}, count);
}

/// The smoke rate in base units: GB/s to bytes per second, TFLOP/s to FLOP per second.
std::optional<double> base_rate(const smoke::Metric& metric) {
  if (metric.unit == "GB/s") return metric.summary.median * 1e9;
  if (metric.unit == "TFLOP/s") return metric.summary.median * 1e12;
  return std::nullopt;
}

/// The UUID of the GPU at `pci_bus_id` (smoke numbers devices as CUDA does, which need not be NVML's order).
std::string uuid_at(const probe::HostFacts& facts, const std::string& pci_bus_id) {
  const auto wanted = probe::canonical_pci_bus_id(pci_bus_id);
  for (const probe::GpuFacts& gpu : facts.gpus.gpus)
    if (wanted && probe::canonical_pci_bus_id(gpu.pci_bus_id) == wanted) return gpu.uuid;
  return "";
}

void add_smoke(Exposition& e, const std::optional<smoke::SmokeReport>& smoke, const probe::HostFacts& facts) {
  const auto per_device = [&](const std::string& name, const std::string& unit, const std::string& help) {
    e.family(name, help);
    if (!smoke) return;
    for (const smoke::DeviceResult& device : smoke->devices)
      for (const smoke::Metric& metric : device.metrics)
        if (metric.unit == unit)
          if (auto rate = base_rate(metric)) {
            Labels labels{{"gpu", std::to_string(device.index)}};
            if (const std::string uuid = uuid_at(facts, device.info.pci_bus_id); !uuid.empty())
              labels.emplace_back("UUID", uuid);
            labels.emplace_back("test", metric.id);
            e.sample(name, labels, *rate);
          }
  };
  per_device("gpuenv_smoke_bandwidth_bytes_per_second", "GB/s", "Median copy bandwidth of the last smoke run.");
  per_device("gpuenv_smoke_matmul_flops_per_second", "TFLOP/s", "Median matrix-multiply rate of the last smoke run.");
  e.family("gpuenv_smoke_peer_bandwidth_bytes_per_second", "Median GPU-to-GPU copy bandwidth of the last smoke run.");
  if (!smoke) return;
  for (const smoke::PeerResult& peer : smoke->peers)
    if (auto rate = base_rate(peer.metric))
      e.sample("gpuenv_smoke_peer_bandwidth_bytes_per_second",
               {{"source", std::to_string(peer.source)}, {"destination", std::to_string(peer.destination)}}, *rate);
}

}  // namespace

std::string doctor_prometheus(const doctor::DoctorReport& r, const std::string& version, long long timestamp,
                              const PrometheusOptions& options) {
  Exposition e;
  e.leave_to(options.left_to_watch, options.watch_textfile);
  add_verdict(e, r, version);
  add_action(e, r.findings);
  add_findings(e, r.findings);
  add_gpus(e, r.facts, options);
  add_xids(e, r.facts);
  add_smoke(e, r.smoke, r.facts);
  e.family("gpuenv_doctor_last_run_timestamp_seconds", "Unix time at which doctor last ran.");
  e.sample("gpuenv_doctor_last_run_timestamp_seconds", {}, static_cast<double>(timestamp));
  return e.text();
}

}  // namespace gpuenv::cli
