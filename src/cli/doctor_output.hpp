#pragma once
// The four renderings of a doctor report: text for people, JSON (docs/doctor-json.md), one line for
// node-problem-detector and Slurm drain reasons, and node_exporter textfile metrics.

#include <string>

#include "doctor/doctor.hpp"
#include "report/render.hpp"

namespace gpuenv::cli {

std::string doctor_text(const doctor::DoctorReport& report, const report::TextStyle& style);
std::string doctor_json(const doctor::DoctorReport& report, const std::string& version);
/// At most 80 characters: the verdict and the worst finding.
std::string doctor_oneline(const doctor::DoctorReport& report);
/// node_exporter textfile metrics (Prometheus text format, doctor_prometheus.cpp); `timestamp` is the run's Unix time.
std::string doctor_prometheus(const doctor::DoctorReport& report, const std::string& version, long long timestamp);

}  // namespace gpuenv::cli
