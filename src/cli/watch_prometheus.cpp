// `gpuenv watch --prometheus FILE | --listen ADDRESS`: each interval as Prometheus text. Per-GPU series carry `gpu`
// (NVML's index) and `UUID` spelled as DCGM-exporter spells it, so a query can join gpuenv's series with DCGM's; the
// names doctor's exposition also has (gpuenv_gpus_visible, gpuenv_gpu_info, gpuenv_gpu_temperature_celsius, ...)
// mean the same here. Every family is declared even without samples, so dashboards see a stable schema; the set is
// checked with the real `promtool check metrics` (tests/cli/watch_prometheus_test.cpp).

#include <functional>

#include "cli/prometheus.hpp"
#include "cli/watch_output.hpp"

namespace gpuenv::cli {
namespace {

using watch::GpuSample;

Labels gpu_labels(const GpuSample& gpu) { return {{"gpu", std::to_string(gpu.index)}, {"UUID", gpu.uuid}}; }

template <typename T>
std::optional<double> as_double(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

void add_watch(Exposition& e, const watch::Snapshot& s, const std::string& version) {
  e.family("gpuenv_watch_info", "gpuenv watch is running; its version is a label and the value is always 1.");
  e.sample("gpuenv_watch_info", {{"gpuenv_version", version}}, 1);
  e.family("gpuenv_watch_last_sample_timestamp_seconds", "Unix time of the interval these values were read at.");
  e.sample("gpuenv_watch_last_sample_timestamp_seconds", {}, static_cast<double>(s.sample.time_ms) / 1000);
  e.family("gpuenv_watch_interval_seconds", "The sampling interval.");
  e.sample("gpuenv_watch_interval_seconds", {}, static_cast<double>(s.interval_ms) / 1000);
  e.family("gpuenv_watch_sample_duration_seconds", "How long the interval's work (read, derive, store) took.");
  e.sample("gpuenv_watch_sample_duration_seconds", {}, s.work_seconds);
  e.family("gpuenv_watch_nvml_up", "1 when NVML answered this interval, 0 when it failed or did not answer in time.");
  e.sample("gpuenv_watch_nvml_up", {}, s.sample.nvml ? 1 : 0);
  e.family("gpuenv_watch_history_up", "1 when the interval was written to the history database.");
  e.sample("gpuenv_watch_history_up", {}, s.history ? 1 : 0);
  e.family("gpuenv_watch_kernel_log_readable", "1 when the kernel log could be read for Xid events.");
  e.sample("gpuenv_watch_kernel_log_readable", {}, s.kernel_log_readable ? 1 : 0);
  e.family("gpuenv_watch_events_total", "Events raised since this watch process started, by rule id and status.");
  for (const auto& [key, count] : s.events_total)
    e.sample("gpuenv_watch_events_total", {{"id", key.first}, {"status", key.second}}, static_cast<double>(count));
  e.family("gpuenv_watch_condition",
           "Conditions open now (a hot or idle GPU, a rising counter): 1 per rule id and GPU, status as a label.");
  for (const auto& [key, condition] : s.open) {
    const std::string rule = key.substr(0, key.find('|'));
    const std::string uuid = key.substr(key.find('|') + 1);
    e.sample("gpuenv_watch_condition",
             {{"id", rule}, {"UUID", uuid}, {"status", std::string(report::to_string(condition.status))}}, 1);
  }
  e.family("gpuenv_watch_interruption_deadline_timestamp_seconds",
           "An interruption the cloud announced: Unix time it may begin (0 when not said), by cloud, kind and id.");
  for (const watch::Notice& notice : s.notices) {
    e.sample("gpuenv_watch_interruption_deadline_timestamp_seconds",
             {{"cloud", notice.cloud}, {"kind", notice.kind}, {"id", notice.id}},
             notice.deadline_ms ? static_cast<double>(*notice.deadline_ms) / 1000 : 0);
  }
}

void add_gpus(Exposition& e, const watch::Snapshot& s) {
  const watch::NodeSample& sample = s.sample;
  e.family("gpuenv_gpus_visible", "GPUs visible to the driver.");
  if (sample.nvml) e.sample("gpuenv_gpus_visible", {}, static_cast<double>(sample.gpus.size()));
  e.family("gpuenv_gpu_info", "One series per GPU; model and PCI bus id are labels and the value is 1.");
  for (const GpuSample& gpu : sample.gpus) {
    Labels labels = gpu_labels(gpu);
    labels.insert(labels.end(), {{"model", gpu.name}, {"pci_bus_id", gpu.pci_bus_id}});
    e.sample("gpuenv_gpu_info", labels, 1);
  }
  // Cumulative counts (ECC errors, PCIe replays, NVLink errors, remapped rows) are counters named *_total (Exposition::
  // family gives them TYPE counter); the rest are gauges.
  const auto per_gpu = [&](const std::string& name, const std::string& help,
                           const std::function<std::optional<double>(const GpuSample&)>& value_of) {
    e.family(name, help);
    for (const GpuSample& gpu : sample.gpus)
      if (const std::optional<double> value = value_of(gpu)) e.sample(name, gpu_labels(gpu), *value);
  };
  per_gpu("gpuenv_gpu_lost", "1 when the driver lists the GPU but NVML cannot read it (GPU is lost).",
          [](const GpuSample& g) { return std::optional<double>(g.lost() ? 1 : 0); });
  per_gpu("gpuenv_gpu_utilization_ratio", "GPU utilisation (0-1) over NVML's last sample period.",
          [](const GpuSample& g) -> std::optional<double> {
            if (!g.utilization_percent) return std::nullopt;
            return *g.utilization_percent / 100;
          });
  per_gpu("gpuenv_gpu_memory_used_bytes", "GPU memory in use.", [](const GpuSample& g) -> std::optional<double> {
    if (!g.memory_used_mib) return std::nullopt;
    return *g.memory_used_mib * 1024 * 1024;
  });
  per_gpu("gpuenv_gpu_temperature_celsius", "GPU core temperature.",
          [](const GpuSample& g) { return g.temperature_c; });
  per_gpu("gpuenv_gpu_power_draw_watts", "GPU power draw.", [](const GpuSample& g) { return g.power_w; });
  per_gpu("gpuenv_gpu_sm_clock_hertz", "The SM clock.", [](const GpuSample& g) -> std::optional<double> {
    if (!g.sm_clock_mhz) return std::nullopt;
    return *g.sm_clock_mhz * 1e6;
  });
  per_gpu("gpuenv_gpu_processes", "Compute processes on the GPU.",
          [](const GpuSample& g) { return as_double(g.processes); });
  per_gpu("gpuenv_gpu_ecc_corrected_volatile_errors_total", "Corrected ECC errors since the driver loaded.",
          [](const GpuSample& g) { return as_double(g.ecc_corrected); });
  per_gpu("gpuenv_gpu_ecc_uncorrected_volatile_errors_total", "Uncorrected ECC errors since the driver loaded.",
          [](const GpuSample& g) { return as_double(g.ecc_uncorrected); });
  per_gpu("gpuenv_gpu_remap_pending", "1 when a row remap waits for the next GPU reset.",
          [](const GpuSample& g) -> std::optional<double> {
            return g.lost() ? std::nullopt : std::optional<double>(g.remap_pending ? 1 : 0);
          });
  per_gpu("gpuenv_gpu_remap_failure", "1 when a row remap failed (the GPU should be replaced).",
          [](const GpuSample& g) -> std::optional<double> {
            return g.lost() ? std::nullopt : std::optional<double>(g.remap_failure ? 1 : 0);
          });
  per_gpu("gpuenv_gpu_nvlinks_inactive", "NVLinks that exist but are down.",
          [](const GpuSample& g) { return as_double(g.nvlink_inactive); });
  per_gpu("gpuenv_gpu_pcie_replays_total", "PCIe replays since the driver loaded.",
          [](const GpuSample& g) { return as_double(g.pcie_replays); });

  // Families with one more label: each family's samples follow its declaration as one group (text format 0.0.4).
  const auto per_gpu_by = [&](const std::string& name, const std::string& help, const char* label,
                              const std::function<std::vector<std::pair<std::string, double>>(const GpuSample&)>& of) {
    e.family(name, help);
    for (const GpuSample& gpu : sample.gpus) {
      for (const auto& [value_label, value] : of(gpu)) {
        Labels labels = gpu_labels(gpu);
        labels.emplace_back(label, value_label);
        e.sample(name, labels, value);
      }
    }
  };
  per_gpu_by("gpuenv_gpu_remapped_rows_total", "Rows remapped over the GPU's life, by cause.", "cause",
             [](const GpuSample& g) {
               std::vector<std::pair<std::string, double>> out;
               if (g.remapped_correctable)
                 out.emplace_back("correctable", static_cast<double>(*g.remapped_correctable));
               if (g.remapped_uncorrectable)
                 out.emplace_back("uncorrectable", static_cast<double>(*g.remapped_uncorrectable));
               return out;
             });
  per_gpu_by("gpuenv_gpu_nvlink_errors_total",
             "NVLink errors by type, counted on the links read at both ends of each interval (docs/watch.md).", "type",
             [](const GpuSample& g) {
               std::vector<std::pair<std::string, double>> out;
               for (const auto& [type, value] :
                    {std::pair<const char*, std::optional<std::uint64_t>>{"replay", g.nvlink_replay},
                     {"recovery", g.nvlink_recovery},
                     {"crc", g.nvlink_crc}}) {
                 if (value) out.emplace_back(type, static_cast<double>(*value));
               }
               return out;
             });
  per_gpu_by("gpuenv_gpu_throttle", "1 per clocks-event (throttle) reason active now, by reason.", "reason",
             [](const GpuSample& g) {
               std::vector<std::pair<std::string, double>> out;
               for (const std::string& reason : watch::throttle_names(g.throttle)) out.emplace_back(reason, 1);
               return out;
             });
  e.family("gpuenv_gpu_idle_seconds",
           "Time the GPU's utilisation has stayed below the idle line (60 % unless configured); 0 when busy.");
  for (std::size_t i = 0; i < sample.gpus.size() && i < s.idle_ms.size(); ++i) {
    const GpuSample& gpu = sample.gpus[i];
    if (!gpu.lost() && gpu.utilization_percent)
      e.sample("gpuenv_gpu_idle_seconds", gpu_labels(gpu), static_cast<double>(s.idle_ms[i]) / 1000);
  }
}

}  // namespace

std::string watch_prometheus(const watch::Snapshot& snapshot, const std::string& version) {
  Exposition e;
  add_watch(e, snapshot, version);
  add_gpus(e, snapshot);
  return e.text();
}

}  // namespace gpuenv::cli
