#pragma once
// Renderings of the NCCL results: `nccl judge` (text, JSON, node_exporter metrics) and the all-reduce sweep that
// `smoke --nccl` adds to the smoke report (a text section and a JSON member).

#include <nlohmann/json.hpp>
#include <string>

#include "nccl/allreduce.hpp"
#include "nccl/judge.hpp"
#include "nccl/tests_output.hpp"
#include "report/render.hpp"

namespace gpuenv::cli {

std::string nccl_judge_text(const nccl::NcclTestsOutput& output, const nccl::JudgeReport& judged,
                            const report::TextStyle& style);
std::string nccl_judge_json(const nccl::NcclTestsOutput& output, const nccl::JudgeReport& judged,
                            const std::string& version);
/// gpuenv_nccl_bus_bandwidth_bytes_per_second, gpuenv_nccl_floor_bytes_per_second, gpuenv_nccl_verdict and the
/// finding families.
std::string nccl_judge_prometheus(const nccl::JudgeReport& judged, const std::string& version);

/// The sweep as a section of the smoke text report.
std::string nccl_sweep_text(const nccl::SweepReport& sweep, const report::TextStyle& style);
/// The sweep as the smoke JSON's "nccl" member.
nlohmann::json nccl_sweep_json(const nccl::SweepReport& sweep);

}  // namespace gpuenv::cli
