#pragma once
// Internal to smoke: what a healthy GPU should measure (data/smoke/expectations.toml, compiled in) and the
// pass/warn/fail rule.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/finding.hpp"
#include "smoke/smoke.hpp"
#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/expected.hpp"

namespace gpuenv::smoke {

/// One GPU model's datasheet numbers (GB/s, TFLOP/s) and anchor minimum.
struct GpuExpectation {
  std::string model;
  std::vector<std::string> match;  ///< product names, compared whole (util::gpu_name_matches)
  std::optional<double> memory_bandwidth;
  std::optional<double> memory_bandwidth_minimum;
  std::optional<double> fp32_tflops;
  std::optional<double> tensor_tflops;
  std::string tensor_precision = "bf16";  ///< "bf16" or "fp16"
  /// DCGM diag-skus `targeted_stress` target for this SKU where DCGM runs SGEMM (GFLOPS, 0.75 x DCGM's measurement).
  std::optional<double> dcgm_sgemm_target_gflops;
  /// Fail floor for a peer (NVLink) device-to-device read copy, GB/s (Azure aznhc check_gpu_bw).
  std::optional<double> p2p_read_minimum;
  /// The board size p2p_read_minimum was measured on (8: NVSwitch HGX); it applies only to nodes with that many GPUs.
  std::optional<int> p2p_board_gpus;
  std::string status;  ///< of the datasheet figures (memory_bandwidth, fp32_tflops, tensor_tflops)
  /// The anchor figures of this row read in a primary source for this very product (`verified = [...]`): only these
  /// may fail a GPU. An anchor figure left out (a DCGM SKU whose product name differs) is reported, not judged.
  std::vector<std::string> verified;
  std::string source;
  /// Whether figure `key` ("memory_bandwidth_minimum", "dcgm_sgemm_target_gflops", "p2p_read_minimum") is verified.
  bool is_verified(std::string_view key) const;
};

struct PcieLane {
  int generation = 0;
  double per_lane_gbs = 0;
  std::string status;
  std::string source;
};

struct PcieMinimum {
  int generation = 0;
  int width = 0;
  double h2d_gbs = 0;
  std::string status;
  std::string source;
};

/// Whether a data row's `status` lets its figure change a verdict: only "verified" (a primary source, or a value
/// calibrated on hardware and recorded with its validation run) does; "secondary" and "unverified" figures are
/// reported, never judged (docs/smoke.md "Judgements").
bool status_is_calibrated(std::string_view status);

/// Fractions of the theoretical bandwidth that copies reach on a healthy GPU (a rule of thumb with a source).
struct Efficiency {
  double d2d_copy = 0.8;  ///< the copy engine's D2D vs datasheet: shown beside the figure (copy engines saturate lower)
  double pcie = 0.8;
  std::string status;
  std::string source;
  bool calibrated() const { return status_is_calibrated(status); }
};

/// What fraction of the datasheet memory bandwidth gpuenv's SM stream kernel (smoke_stream_copy) reaches on a healthy
/// GPU: an estimate until scripts/gpu-check measures it, shown beside the figure, never judged while uncalibrated.
struct StreamEfficiency {
  double memory_bandwidth = 0.8;
  std::string status;
  std::string source;
  bool calibrated() const { return status_is_calibrated(status); }
};

/// Fractions of the datasheet peak that matmuls reach on a healthy GPU. Estimates until calibrated on hardware:
/// while `status` is not "verified" the figures are reported, never judged.
struct KernelEfficiency {
  double sgemm = 0.3;             ///< smoke_sgemm vs FP32 peak
  double tensor = 0.15;           ///< smoke_*gemm_wmma vs dense tensor peak
  double cublas_tensor = 0.5;     ///< cuBLAS BF16/FP16 GEMM vs dense tensor peak
  double sgemm_vs_cublas = 0.35;  ///< smoke_sgemm vs the node's cuBLAS SGEMM on the same operands
  std::string status;
  std::string source;
  bool calibrated() const { return status_is_calibrated(status); }
};

/// The lowest TFLOP/s ratio of our tensor kernel (smoke_*gemm_wmma) to the node's cuBLAS GemmEx on the same operands,
/// for one compute capability: the ratio depends on what cuBLAS uses there (mma.sync on sm_80/86/89, wgmma on sm_90,
/// tcgen05 on sm_100) that our WMMA kernel does not. Goals until calibrated: while `status` is not "verified" the ratio
/// is reported, not judged.
struct TensorRatioFloor {
  int cc_major = 0;
  int cc_minor = 0;
  double ratio = 0;
  std::string status;
  std::string source;
  bool calibrated() const { return status_is_calibrated(status); }
};

struct Expectations {
  Efficiency efficiency;
  StreamEfficiency stream_efficiency;
  KernelEfficiency kernel_efficiency;
  std::vector<TensorRatioFloor> tensor_vs_cublas;  ///< [[tensor_vs_cublas]], one row per compute capability
  double dcgm_target_perf_min_ratio = 0.95;        ///< DCGM fails targeted_stress below this x target
  std::string dcgm_status;                         ///< of [dcgm]
  std::vector<PcieLane> pcie;
  std::vector<PcieMinimum> pcie_minimum;
  std::vector<GpuExpectation> gpus;
};

/// Parses an expectations file strictly (unknown keys and wrong types are errors naming `origin`).
util::Expected<Expectations> parse_expectations(std::string_view text, const std::string& origin,
                                                const util::Overlay& overlay = {});

/// The compiled-in expectations with `overlay` merged (for `gpuenv data check`).
util::Expected<Expectations> load_expectations(const util::Overlay& overlay);
/// The compiled-in data/smoke/expectations.toml.
util::Expected<Expectations> shipped_expectations();

/// The row one of whose `match` names is `device_name` (util::gpu_name_matches: normalized, a MIG instance's name
/// without its " MIG <profile>" part); nullptr when none. Whole names only: "NVIDIA T400" does not match "T4".
const GpuExpectation* find_gpu(const Expectations& expectations, std::string_view device_name);

/// The [[tensor_vs_cublas]] row of compute capability `cc_major`.`cc_minor`; nullptr when the table has none.
const TensorRatioFloor* find_tensor_ratio_floor(const Expectations& expectations, int cc_major, int cc_minor);

/// Expected pinned host<->device GB/s on a PCIe link: theoretical × efficiency, plus the anchor minimum for that link.
struct PcieExpectation {
  double theoretical_gbs = 0;
  double expected_gbs = 0;
  bool expected_calibrated = false;   ///< the lane table and the efficiency are both verified
  std::optional<double> minimum_gbs;  ///< a verified [[pcie_minimum]] row only
  std::string source;
};
std::optional<PcieExpectation> pcie_expectation(const Expectations& expectations, int generation, int width);

/// What one measured number is judged against.
struct Expectation {
  std::optional<double> expected;  ///< what a healthy GPU measures
  /// A fail floor from a verified anchor tool (DCGM, Azure aznhc) or the operator; below it fails. Only verified
  /// figures are ever put here: an unverified floor belongs in `expected` with `calibrated` false.
  std::optional<double> minimum;
  bool calibrated = true;   ///< false: `expected` is an uncalibrated estimate: reported beside the figure, never judged
  std::string source = {};  ///< where the numbers come from, for the finding
};

/// The verdict on one measured number.
struct Judgement {
  report::Status status = report::Status::skip;
  double warn_below = 0;  ///< 0 when no expectation
  double fail_below = 0;
  /// "expected >= 2010 (0.75 x 2680), fail below 1905 (minimum)", or "no expectation for this GPU".
  std::string explanation;
};

/// observed < fail floor (the anchor minimum, else fail_ratio × expected when calibrated) -> fail; observed <
/// min_ratio × a calibrated expected value -> warn; otherwise pass. An uncalibrated expected value never warns or
/// fails: the figure passes with "not judged (uncalibrated)" and its ratio to the estimate (an anchor minimum beside it
/// still fails). Neither an expected value nor a minimum -> skip (numbers only).
Judgement judge(double observed, const Expectation& expectation, const Thresholds& thresholds, const std::string& unit);

/// Our tensor kernel's `observed` TFLOP/s against the node's cuBLAS `cublas` TFLOP/s (> 0) on the same operands and the
/// floor of the GPU's compute capability: below floor x cuBLAS fails when the floor is calibrated; an uncalibrated
/// floor, or none (nullptr: a CC without a row), passes with the ratio reported and a note that nothing judged it.
Judgement judge_tensor_ratio(double observed, double cublas, const TensorRatioFloor* floor, int cc_major, int cc_minor);

}  // namespace gpuenv::smoke
