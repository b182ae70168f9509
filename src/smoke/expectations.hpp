#pragma once
// What a healthy GPU should measure (data/smoke/expectations.toml, compiled in) and the pass/warn/fail rule.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/finding.hpp"
#include "util/embedded_file.hpp"
#include "util/expected.hpp"

namespace gpuenv::smoke {

/// One GPU model's datasheet numbers (GB/s, TFLOP/s) and anchor minimum.
struct GpuExpectation {
  std::string model;
  std::vector<std::string> match;  ///< case-insensitive substrings of the device name
  std::optional<double> memory_bandwidth;
  std::optional<double> memory_bandwidth_minimum;
  std::optional<double> fp32_tflops;
  std::optional<double> tensor_tflops;
  std::string tensor_precision = "bf16";  ///< "bf16" or "fp16"
  std::string status;
  std::string source;
};

struct PcieLane {
  int generation = 0;
  double per_lane_gbs = 0;
  std::string status;
};

struct PcieMinimum {
  int generation = 0;
  int width = 0;
  double h2d_gbs = 0;
  std::string status;
  std::string source;
};

/// Fractions of the datasheet peak that gpuenv's own measurements reach on a healthy GPU.
struct Efficiency {
  double d2d_copy = 0.8;
  double pcie = 0.8;
  double sgemm = 0.3;
  double tensor = 0.15;
  std::string status;
  std::string source;
};

struct Expectations {
  Efficiency efficiency;
  std::vector<PcieLane> pcie;
  std::vector<PcieMinimum> pcie_minimum;
  std::vector<GpuExpectation> gpus;
};

/// Parses an expectations file strictly (unknown keys and wrong types are errors naming `origin`).
util::Expected<Expectations> parse_expectations(std::string_view text, const std::string& origin);
/// The compiled-in data/smoke/expectations.toml.
util::Expected<Expectations> shipped_expectations();

/// The first row whose `match` is a case-insensitive substring of `device_name`; nullptr when none.
const GpuExpectation* find_gpu(const Expectations& expectations, std::string_view device_name);

/// Expected pinned host<->device GB/s on a PCIe link: theoretical × efficiency, plus the anchor minimum for that link.
struct PcieExpectation {
  double theoretical_gbs = 0;
  double expected_gbs = 0;
  std::optional<double> minimum_gbs;
  std::string source;
};
std::optional<PcieExpectation> pcie_expectation(const Expectations& expectations, int generation, int width);

/// Ratios applied to an expected value (flags --min-ratio and --fail-ratio).
struct Thresholds {
  double min_ratio = 0.75;  ///< below min_ratio × expected: warn (DCGM's 0.75 × measured convention)
  double fail_ratio = 0.5;  ///< below fail_ratio × expected (when no anchor minimum): fail
};

/// The verdict on one measured number.
struct Judgement {
  report::Status status = report::Status::skip;
  double warn_below = 0;  ///< 0 when no expectation
  double fail_below = 0;
  /// "expected >= 2010 (0.75 x 2680), fail below 1905 (minimum)", or "no expectation for this GPU".
  std::string explanation;
};

/// observed < fail floor (the anchor minimum, else fail_ratio × expected) -> fail; observed < min_ratio × expected
/// -> warn; otherwise pass. No expected value -> skip (numbers only).
Judgement judge(double observed, std::optional<double> expected, std::optional<double> minimum,
                const Thresholds& thresholds, const std::string& unit);

}  // namespace gpuenv::smoke
