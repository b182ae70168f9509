#include "smoke/internal/expectations.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "util/gpu_name.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::smoke {

std::span<const util::EmbeddedFile> embedded_smoke_data();  // generated from data/smoke/*.toml

namespace {

/// The number at `key`, which must be there.
double required_number(util::TomlRow& row, std::string_view key) {
  const std::optional<double> value = row.optional_number(key);
  if (!value) row.fail("missing `" + std::string(key) + "`");
  return value.value_or(0);
}

/// A row's `status`, one of the knowledge base's (docs/knowledge-base.md).
std::string read_status(util::TomlRow& row) { return row.one_of("status", {"verified", "secondary", "unverified"}); }

std::string format_number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, value >= 100 ? "%.0f" : "%.3g", value);
  return buffer;
}

}  // namespace

namespace {

const std::vector<util::RowKey> k_expectation_keys = {
    {"pcie", {"generation"}}, {"gpu", {"model"}}, {"tensor_vs_cublas", {"cc_major", "cc_minor"}}};

}  // namespace

std::vector<util::DataTable> data_tables() {
  std::vector<util::DataTable> tables;
  for (const util::EmbeddedFile& file : embedded_smoke_data())
    tables.push_back({"expectations.toml", file, k_expectation_keys});
  return tables;
}

util::Expected<Expectations> load_expectations(const util::Overlay& overlay) {
  for (const util::EmbeddedFile& file : embedded_smoke_data()) {
    if (file.name == "expectations.toml")
      return parse_expectations(file.contents, "data/smoke/expectations.toml", overlay);
  }
  return util::Error::internal("data/smoke/expectations.toml is not compiled in");
}

util::Expected<util::Ok> check_data(const util::Overlay& overlay) {
  GPUENV_TRY(load_expectations(overlay));
  return util::Ok{};
}

util::Expected<Expectations> parse_expectations(std::string_view text, const std::string& origin,
                                                const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(auto parsed,
                    util::read_data_table({"expectations.toml", {origin, text}, k_expectation_keys}, overlay));
  const util::TomlFile& file = parsed;
  if (auto unknown = file.unexpected_key({"efficiency", "stream_efficiency", "kernel_efficiency", "tensor_vs_cublas",
                                          "dcgm", "pcie", "pcie_minimum", "gpu"})) {
    return util::Error::internal(origin + ": unknown table `" + *unknown + "`");
  }
  for (const char* required : {"efficiency", "kernel_efficiency"}) {
    if (!file.contains(required)) return util::Error::internal(origin + ": missing [" + required + "]");
  }
  Expectations out;
  GPUENV_TRY(file.read_table("efficiency", [&out](util::TomlRow& row) {
    out.efficiency.d2d_copy = required_number(row, "d2d_copy");
    out.efficiency.pcie = required_number(row, "pcie");
    out.efficiency.status = read_status(row);
    out.efficiency.source = row.text("source");
  }));
  GPUENV_TRY(file.read_table("stream_efficiency", [&out](util::TomlRow& row) {
    out.stream_efficiency.memory_bandwidth = required_number(row, "memory_bandwidth");
    out.stream_efficiency.status = read_status(row);
    out.stream_efficiency.source = row.text("source");
  }));
  GPUENV_TRY(file.read_table("kernel_efficiency", [&out](util::TomlRow& row) {
    out.kernel_efficiency.sgemm = required_number(row, "sgemm");
    out.kernel_efficiency.tensor = required_number(row, "tensor");
    out.kernel_efficiency.cublas_tensor = required_number(row, "cublas_tensor");
    out.kernel_efficiency.sgemm_vs_cublas =
        row.optional_number("sgemm_vs_cublas").value_or(out.kernel_efficiency.sgemm_vs_cublas);
    out.kernel_efficiency.status = read_status(row);
    out.kernel_efficiency.source = row.text("source");
  }));
  GPUENV_TRY(file.append_rows("tensor_vs_cublas", out.tensor_vs_cublas, [](util::TomlRow& row) {
    TensorRatioFloor floor;
    floor.cc_major = static_cast<int>(row.integer_in("cc_major", 1, 99, "a compute capability major"));
    floor.cc_minor = static_cast<int>(row.integer_in("cc_minor", 0, 9, "a compute capability minor"));
    floor.ratio = required_number(row, "ratio");
    if (floor.ratio <= 0 || floor.ratio > 1) row.fail("`ratio` must be above 0 and at most 1");
    floor.status = read_status(row);
    floor.source = row.text("source");
    return floor;
  }));
  GPUENV_TRY(file.read_table("dcgm", [&out](util::TomlRow& row) {
    out.dcgm_target_perf_min_ratio = required_number(row, "target_perf_min_ratio");
    out.dcgm_status = read_status(row);
    row.text("source");
  }));
  GPUENV_TRY(file.append_rows("pcie", out.pcie, [](util::TomlRow& row) {
    PcieLane lane;
    lane.generation = static_cast<int>(row.integer("generation"));
    lane.per_lane_gbs = required_number(row, "per_lane_gbs");
    lane.status = read_status(row);
    lane.source = row.text("source");
    return lane;
  }));
  GPUENV_TRY(file.append_rows("pcie_minimum", out.pcie_minimum, [](util::TomlRow& row) {
    PcieMinimum minimum;
    minimum.generation = static_cast<int>(row.integer("generation"));
    minimum.width = static_cast<int>(row.integer("width"));
    minimum.h2d_gbs = required_number(row, "h2d_gbs");
    minimum.status = read_status(row);
    minimum.source = row.text("source");
    return minimum;
  }));
  GPUENV_TRY(file.append_rows("gpu", out.gpus, [](util::TomlRow& row) {
    GpuExpectation gpu;
    gpu.model = row.text("model");
    gpu.match = row.texts("match");
    gpu.memory_bandwidth = row.optional_number("memory_bandwidth");
    gpu.memory_bandwidth_minimum = row.optional_number("memory_bandwidth_minimum");
    gpu.fp32_tflops = row.optional_number("fp32_tflops");
    gpu.tensor_tflops = row.optional_number("tensor_tflops");
    gpu.tensor_precision = row.one_of("tensor_precision", {"bf16", "fp16"});
    gpu.dcgm_sgemm_target_gflops = row.optional_number("dcgm_sgemm_target_gflops");
    gpu.p2p_read_minimum = row.optional_number("p2p_read_minimum");
    if (const auto board = row.optional_number("p2p_board_gpus")) gpu.p2p_board_gpus = static_cast<int>(*board);
    gpu.status = read_status(row);
    gpu.verified = row.optional_texts("verified");
    for (const std::string& key : gpu.verified) {
      const bool present = key == "memory_bandwidth_minimum"   ? gpu.memory_bandwidth_minimum.has_value()
                           : key == "dcgm_sgemm_target_gflops" ? gpu.dcgm_sgemm_target_gflops.has_value()
                           : key == "p2p_read_minimum"         ? gpu.p2p_read_minimum.has_value()
                                                               : false;
      if (key != "memory_bandwidth_minimum" && key != "dcgm_sgemm_target_gflops" && key != "p2p_read_minimum") {
        row.fail("`verified` names `" + key +
                 "`: only memory_bandwidth_minimum, dcgm_sgemm_target_gflops and p2p_read_minimum can be listed");
      } else if (!present) {
        row.fail("`verified` names `" + key + "`, which the row does not give");
      }
    }
    gpu.source = row.text("source");
    return gpu;
  }));
  return out;
}

util::Expected<Expectations> shipped_expectations() { return load_expectations(util::installed_overlay()); }

bool status_is_calibrated(std::string_view status) { return status == "verified"; }

bool GpuExpectation::is_verified(std::string_view key) const {
  return std::find(verified.begin(), verified.end(), key) != verified.end();
}

const GpuExpectation* find_gpu(const Expectations& expectations, std::string_view device_name) {
  for (const GpuExpectation& gpu : expectations.gpus) {
    if (util::gpu_name_matches(device_name, gpu.match)) return &gpu;
  }
  return nullptr;
}

const TensorRatioFloor* find_tensor_ratio_floor(const Expectations& expectations, int cc_major, int cc_minor) {
  for (const TensorRatioFloor& floor : expectations.tensor_vs_cublas) {
    if (floor.cc_major == cc_major && floor.cc_minor == cc_minor) return &floor;
  }
  return nullptr;
}

std::optional<PcieExpectation> pcie_expectation(const Expectations& expectations, int generation, int width) {
  if (width <= 0) return std::nullopt;
  for (const PcieLane& lane : expectations.pcie) {
    if (lane.generation != generation) continue;
    PcieExpectation out;
    out.theoretical_gbs = lane.per_lane_gbs * width;
    out.expected_gbs = out.theoretical_gbs * expectations.efficiency.pcie;
    out.expected_calibrated = status_is_calibrated(lane.status) && expectations.efficiency.calibrated();
    out.source = "PCIe Gen" + std::to_string(generation) + " x" + std::to_string(width) + " theoretical " +
                 format_number(out.theoretical_gbs) + " GB/s x " + format_number(expectations.efficiency.pcie);
    for (const PcieMinimum& minimum : expectations.pcie_minimum) {
      if (minimum.generation == generation && minimum.width == width && status_is_calibrated(minimum.status)) {
        out.minimum_gbs = minimum.h2d_gbs;
        out.source += "; minimum " + format_number(minimum.h2d_gbs) + " GB/s from " + minimum.source;
      }
    }
    return out;
  }
  return std::nullopt;
}

namespace {

/// Fail below the judgement's fail line, warn below its warn line, else pass.
report::Status status_against(double observed, const Judgement& judgement) {
  if (observed < judgement.fail_below) return report::Status::fail;
  if (observed < judgement.warn_below) return report::Status::warn;
  return report::Status::pass;
}

}  // namespace

Judgement judge(double observed, const Expectation& expectation, const Thresholds& thresholds,
                const std::string& unit) {
  Judgement out;
  const bool has_expected = expectation.expected && *expectation.expected > 0;
  if (!has_expected && !expectation.minimum) {
    out.explanation = "no expectation for this GPU";
    return out;
  }
  const bool judged_expected = has_expected && expectation.calibrated;
  if (expectation.minimum) {
    out.fail_below = *expectation.minimum;
  } else if (judged_expected) {
    out.fail_below = thresholds.fail_ratio * *expectation.expected;
  }
  // An anchor minimum above the warn line still fails; an uncalibrated estimate draws no warn line at all.
  out.warn_below =
      judged_expected ? std::max(thresholds.min_ratio * *expectation.expected, out.fail_below) : out.fail_below;
  std::string fail_text = "fail below " + format_number(out.fail_below) + " " + unit;
  if (expectation.minimum) {
    fail_text += " (anchor minimum)";
  } else if (judged_expected) {
    fail_text += " (" + format_number(thresholds.fail_ratio) + " x expected)";
  }
  if (judged_expected) {
    out.explanation = "expected >= " + format_number(out.warn_below) + " " + unit + " (" +
                      format_number(thresholds.min_ratio) + " x " + format_number(*expectation.expected) +
                      " or the minimum), " + fail_text;
  } else if (has_expected) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2f", observed / *expectation.expected);
    out.explanation = (expectation.minimum ? fail_text + "; " : std::string()) + ratio + " x the estimate " +
                      format_number(*expectation.expected) + " " + unit + ", not judged (uncalibrated)";
  } else {
    out.explanation = fail_text;
  }
  out.status = status_against(observed, out);
  return out;
}

Judgement judge_tensor_ratio(double observed, double cublas, const TensorRatioFloor* floor, int cc_major,
                             int cc_minor) {
  Judgement out;
  const std::string cc = std::to_string(cc_major) + "." + std::to_string(cc_minor);
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", cublas > 0 ? observed / cublas : 0.0);
  if (floor == nullptr) {
    out.status = report::Status::pass;
    out.explanation = std::string(ratio) + " x cuBLAS, not judged: no floor for compute capability " + cc +
                      " in [[tensor_vs_cublas]] (the ratio is reported for calibration)";
    return out;
  }
  char floor_text[32];
  std::snprintf(floor_text, sizeof floor_text, "%.2f", floor->ratio);
  const double below = floor->ratio * cublas;
  if (!floor->calibrated()) {
    out.status = report::Status::pass;
    out.explanation = std::string(ratio) + " x cuBLAS, not judged (uncalibrated): the floor " + floor_text +
                      " x cuBLAS (" + format_number(below) + " TFLOP/s) for compute capability " + cc + " is a goal (" +
                      floor->status + "), not yet measured on a GPU";
    return out;
  }
  out.warn_below = out.fail_below = below;
  out.explanation = std::string(ratio) + " x cuBLAS, floor " + floor_text + " x cuBLAS (" + format_number(below) +
                    " TFLOP/s) for compute capability " + cc + ": below it fails";
  out.status = status_against(observed, out);
  return out;
}

}  // namespace gpuenv::smoke
