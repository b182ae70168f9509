#pragma once
// `gpuenv smoke`: on-device tests through the CUDA driver API (libcuda dlopen'ed through System, kernels from the
// embedded fatbin). Each GPU: device query, host<->device and device<->device copies, FP32 and tensor-core matmuls
// (our kernels and the node's cuBLAS), an optional memory test; then peer copies between every pair of GPUs. Each
// step has a deadline, each result is verified and judged against data/smoke/expectations.toml.
//
// smoke's public face: what doctor, cli and nccl use (the run's options and results, its entry point, the kernel
// images the binary carries, the data table and its overlay check). How the steps work lives in smoke/internal/.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/finding.hpp"
#include "system/system.hpp"
#include "util/data_table.hpp"
#include "util/expected.hpp"

namespace gpuenv::smoke {

/// The median, minimum and maximum of a set of samples (all zero for none).
struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
  std::size_t count = 0;
  /// Copy timing: samples left out because the spin kernel timed out before the host released it (the copies then
  /// started while the host was still queueing them, so launch gaps were timed too).
  std::size_t discarded = 0;
  /// Every sample timed out: the statistics are of those samples, a lower bound only, and are not judged.
  bool invalid = false;
};

/// Ratios applied to an expected value (flags --min-ratio and --fail-ratio).
struct Thresholds {
  double min_ratio = 0.75;  ///< below min_ratio × expected: warn (DCGM's 0.75 × measured convention)
  double fail_ratio = 0.5;  ///< below fail_ratio × expected (when no anchor minimum): fail
};

/// An operator's own numbers for one metric (`--expect ID=V`, `--minimum ID=V`), e.g. for a cloud shape with fewer
/// PCIe lanes or NVLinks than the datasheet: they replace the data's expected value and fail floor.
struct MetricOverride {
  std::optional<double> expected;
  std::optional<double> minimum;
};

/// The metric ids that are judged and so can be overridden ("p2p" stands for every pair).
const std::vector<std::string>& judged_metric_ids();

struct SmokeOptions {
  std::string library = "libcuda.so.1";  ///< soname or path (GPUENV_CUDA_LIBRARY in the CLI)
  /// NVML, for the SM clock during the matmuls and ECC/row-remap counters around the memory test (GPUENV_NVML_LIBRARY
  /// in the CLI); "" leaves NVML out (those readings are then unknown).
  std::string nvml_library = "libnvidia-ml.so.1";
  bool quick = false;         ///< small sizes and fewer repetitions
  std::optional<int> device;  ///< only this CUDA device ordinal
  Thresholds thresholds;
  std::size_t copy_bytes = 0;  ///< 0: 256 MiB (quick: 32 MiB), at least twice the GPU's L2 cache
  int sgemm_size = 0;          ///< M = N = K; 0: 4096 (quick: 1024); rounded up to a multiple of 128
  int tensor_size = 0;         ///< 0: 8192 (quick: 2048)
  /// The smallest matmuls the data's floors and estimates hold for (the default full sizes: DCGM's SGEMM target is a
  /// large-problem number that a 1024^3 launch cannot reach); smaller ones are verified and reported, not judged.
  int sgemm_floor_size = 4096;
  int tensor_floor_size = 8192;
  int repetitions = 0;  ///< timed copy samples after one warm-up; 0: 10 (quick: 3)
  /// Each matmul is timed over sustained windows of back-to-back launches about this long (negative: 200 ms, --quick
  /// 50 ms; 0: one launch a window), so the clocks have ramped up as under DCGM's sustained load and the SM clock is
  /// sampled under load; the reported rate is the median window.
  std::chrono::milliseconds gemm_window{-1};
  int gemm_windows = 0;  ///< windows per matmul; 0: 5 (quick: 3)
  std::size_t gemm_samples = 256;
  bool cublas = true;          ///< also run cuBLAS GEMMs when the node has cuBLAS
  std::string cublas_library;  ///< "" searches (cublas_candidates); else only this soname or path
  /// The memory test's share of free GPU memory: negative (the default) a sub-second test, 5% of it but at least 8 x
  /// the L2 cache (so it is read back from DRAM); > 0 this fraction (--memtest F, for deeper runs); 0 none
  /// (--no-memtest).
  double memtest_fraction = -1;
  std::size_t memtest_chunk_bytes = std::size_t{1} << 30;  ///< largest allocation of the memory test (1 GiB)
  bool peer = true;                 ///< copies between every pair of GPUs (when more than one is tested)
  bool watch_kernel_log = true;     ///< report Xid events that appear in the kernel log during the run
  std::string sysfs_root = "/sys";  ///< where the PCIe link files are read (tests point it at a fixture tree)
  std::map<std::string, MetricOverride> overrides;  ///< by judged_metric_ids()
  /// cuInit / device count (--init-timeout): without persistence mode, 8 Hopper GPUs can take well over 15 s.
  std::chrono::milliseconds init_timeout{90000};
  std::chrono::milliseconds step_timeout{120000};  ///< each step on one GPU
  /// Once a step has hung, every other step gets at most this much more (the hung thread often holds the driver lock:
  /// each later call would wait its full step_timeout); one that misses it is "not tested: driver blocked by GPU N".
  std::chrono::milliseconds blocked_timeout{10000};
  /// The whole run after cuInit (--budget): no step starts after it and none runs past it; 0: no limit.
  std::chrono::milliseconds run_timeout{600000};
  /// The GPUs the node should have (--expect-gpus; doctor: its --expect-gpus or the instance type's count): fewer
  /// fail smoke.gpu_count, and the peer floors of a board of that size still apply.
  std::optional<int> expect_gpus;
};

/// One measured number with its repetitions summarised.
struct Metric {
  std::string id;                  ///< "h2d_pinned", "d2d", "sgemm_fp32", "gemm_bf16", ...
  std::string unit;                ///< "GB/s" or "TFLOP/s"
  Summary summary;                 ///< of the per-repetition rates (median is the reported value)
  std::optional<double> expected;  ///< the expected value the verdict used, if any
  double work = 0;                 ///< bytes (copies, counted as moved) or M (matmul M = N = K)
  bool verified = true;            ///< false when the result was wrong (then no other number is judged against it)
};

struct DeviceInfo {
  std::string name;
  std::string pci_bus_id;  ///< as the driver reports it
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::uint64_t memory_bytes = 0;
  int clock_mhz = 0;  ///< the maximum (boost) SM clock, CU_DEVICE_ATTRIBUTE_CLOCK_RATE: not the current one
  std::optional<int> matmul_clock_mhz;  ///< the SM clock sampled (NVML) during the matmuls: median
  int memory_clock_mhz = 0;             ///< the maximum memory clock
  int memory_bus_width = 0;
  std::uint64_t l2_bytes = 0;          ///< CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: copies are sized to leave it (0: unknown)
  std::optional<int> pcie_generation;  ///< current link, read from sysfs right after the pinned H2D copy
  std::optional<int> pcie_width;
  std::optional<int> pcie_max_generation;  ///< what the GPU supports (its max_link_*)
  std::optional<int> pcie_max_width;
  std::optional<int> pcie_upstream_max_generation;  ///< what the port above it supports (the parent's max_link_*)
  std::optional<int> pcie_upstream_max_width;
  std::string expectation_model;  ///< the expectations row used ("" when none matched)
  std::string mig_profile;        ///< "1g.10gb" for a MIG instance (whole-GPU floors are not applied), else ""
  unsigned mig_instances = 0;     ///< for a MIG instance: how many its GPU has (NVML), 0 when unknown
  std::string kernel_image;       ///< the image loaded ("" when none)
  std::string local_cpulist;      ///< the CPUs of the GPU's NUMA node (sysfs local_cpulist); step threads run there
  std::string step_cpulist;       ///< where a step thread may really run (pthread_getaffinity_np after placing it)
};

struct DeviceResult {
  int index = 0;
  DeviceInfo info;
  std::vector<Metric> metrics;
  std::vector<report::Finding> findings;
  bool hung = false;  ///< a step missed its deadline; the GPU was abandoned
};

/// A copy from one GPU to another, timed on the destination's stream (a "read" copy, as nvbandwidth's
/// device_to_device_memcpy_read_ce).
struct PeerResult {
  int source = 0;
  int destination = 0;
  bool peer_access = false;  ///< cuDeviceCanAccessPeer: direct (NVLink or PCIe P2P), else staged through the host
  Metric metric;             ///< id "p2p_<source>_<destination>", GB/s
};

/// One embedded kernel image (a fatbin) and the toolkit that built it.
struct KernelImage {
  std::string file;                     ///< "smoke_kernels.fatbin"
  std::string cuda_version;             ///< the nvcc release, "13.0"
  int min_driver = 0;                   ///< lowest cuDriverGetVersion that loads its SASS (13000: any CUDA 13 driver)
  std::string ptx_arch;                 ///< "compute_120": JIT for newer GPUs on drivers >= cuda_version
  std::vector<std::string> sass_archs;  ///< "sm_75", ...
  std::size_t bytes = 0;
  std::string_view contents;  ///< the fatbin (empty from parse_kernel_manifest)
};

/// "drivers supporting CUDA 12.0 or newer, below CUDA 13.0": the drivers that get images[index] first.
std::string kernel_image_driver_range(const std::vector<KernelImage>& images, std::size_t index);

/// What the binary carries: its kernel images, and the newest one's toolkit.
struct KernelsInfo {
  bool embedded = false;
  std::string cuda_version;  ///< the newest image's nvcc release, e.g. "13.0"
  std::string archs;         ///< its "sm_75 sm_80 ... compute_120"
  std::size_t bytes = 0;     ///< all images
  std::vector<KernelImage> images;
};
KernelsInfo embedded_kernels_info();

struct SmokeReport {
  std::string library;
  bool driver_loaded = false;
  std::string driver_cuda_version;  ///< cuDriverGetVersion, "12.8"
  int device_count = 0;
  KernelsInfo kernels;
  std::vector<report::Finding> findings;  ///< not tied to one GPU (driver, device selection)
  std::vector<DeviceResult> devices;
  std::vector<PeerResult> peers;               ///< every ordered pair, when more than one GPU was tested
  std::vector<report::Finding> peer_findings;  ///< smoke.p2p findings
  /// Pairs with peer access, both directions at once: two results per pair, each direction measured while the other
  /// ran (metric ids "p2p_bidir_<source>_<destination>").
  std::vector<PeerResult> bidirectional;
  std::vector<report::Finding> bidirectional_findings;  ///< smoke.p2p_bidirectional findings, one per pair
  /// A step or cuInit missed its deadline and its thread still runs inside the driver: the process must leave with
  /// _Exit (no static destructors, no libcuda teardown racing that thread).
  bool abandoned_work = false;
  report::Verdict verdict = report::Verdict::not_ok;
};

/// Runs the smoke tests. Machine failures (no driver, no GPU, OOM, faults, hangs) are failing findings in the report;
/// the Error is only for internal problems (bad compiled-in data).
util::Expected<SmokeReport> run_smoke(system::System& system, const SmokeOptions& options);

/// Smoke's table (expectations.toml, compiled in) and how overlay rows replace its rows.
std::vector<util::DataTable> data_tables();
/// Whether the compiled-in expectations with `overlay` merged parse (`gpuenv data check`, the overlay's load): the
/// Error names the overlay file and line.
util::Expected<util::Ok> check_data(const util::Overlay& overlay);

}  // namespace gpuenv::smoke
