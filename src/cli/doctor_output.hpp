#pragma once
// The four renderings of a doctor report: text for people, JSON (docs/doctor-json.md), one line for
// node-problem-detector and Slurm drain reasons, and node_exporter textfile metrics.

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "doctor/doctor.hpp"
#include "report/render.hpp"

namespace gpuenv::cli {

std::string doctor_text(const doctor::DoctorReport& report, const report::TextStyle& style);
/// `time`: the run's Unix time, written as "time" (what `doctor --from-report --max-age` checks).
std::string doctor_json(const doctor::DoctorReport& report, const std::string& version,
                        std::optional<long long> time = std::nullopt);

/// A report read back from `doctor --json` text: enough of it for the one line and the exit code.
struct ReadReport {
  doctor::DoctorReport report;  ///< verdict, findings (id, status, message, action), GPU count, driver version
  long long time = 0;           ///< when it was written (Unix seconds)
};
/// Reads `doctor --json` text (schema 1 with "time"); an input Error saying what is missing.
util::Expected<ReadReport> read_doctor_json(std::string_view text);
/// At most 80 bytes: the verdict, the worst finding and the node's action; nothing a shell would expand or unquote
/// (util::shell_inert), since NHC passes it through `eval`.
std::string doctor_oneline(const doctor::DoctorReport& report);
struct PrometheusOptions {
  bool gpu_gauges = false;  ///< also GPU temperature and power, which DCGM-exporter exports already
  /// Families a current `gpuenv watch` textfile beside this one exports (families_left_to_watch): left out here, so
  /// node_exporter does not see the same series twice; `watch_textfile` names that file in a comment.
  std::set<std::string> left_to_watch = {};
  std::string watch_textfile = {};
};
/// node_exporter textfile metrics (Prometheus text format, doctor_prometheus.cpp); `timestamp` is the run's Unix time.
std::string doctor_prometheus(const doctor::DoctorReport& report, const std::string& version, long long timestamp,
                              const PrometheusOptions& options = {});

}  // namespace gpuenv::cli
