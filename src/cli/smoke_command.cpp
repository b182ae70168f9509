// `gpuenv smoke`: on-device tests (copies, matmuls, memory test) per GPU and copies between GPUs; the exit code
// follows the verdict.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/nccl_output.hpp"
#include "cli/smoke_overrides.hpp"
#include "cli/trusted_paths.hpp"
#include "cli/version.hpp"
#include "doctor/actions.hpp"
#include "nccl/allreduce.hpp"
#include "probe/cloud.hpp"
#include "probe/collect.hpp"
#include "probe/cuda_api.hpp"
#include "smoke/smoke.hpp"
#include "system/abandon.hpp"
#include "util/strings.hpp"

namespace gpuenv::cli {
namespace {

struct SmokeCommandOptions {
  bool json = false;
  bool describe = false;
  bool quick = false;
  int device = -1;
  double min_ratio = 0.75;
  double fail_ratio = 0.5;
  int repetitions = 0;
  double timeout_s = 120;
  double init_timeout_s = 90;
  double budget_s = 600;
  int expect_gpus = -1;
  bool no_cublas = false;
  bool no_peer = false;
  double memtest = -1;  ///< not given: the default sub-second memory test
  bool no_memtest = false;
  std::vector<std::string> expect;   ///< ID=VALUE
  std::vector<std::string> minimum;  ///< ID=VALUE
  bool nccl = false;                 ///< also the NCCL all-reduce over every GPU (nccl/allreduce.hpp)
  std::string python;                ///< --python: use that environment's nvidia-nccl wheel
  std::string instance_type;         ///< --instance-type: names the all-reduce floor (default: from DMI)
};

nlohmann::json metric_json(const smoke::Metric& metric) {
  nlohmann::json out = {
      {"id", metric.id},           {"unit", metric.unit},       {"median", metric.summary.median},
      {"min", metric.summary.min}, {"max", metric.summary.max}, {"repetitions", metric.summary.count}};
  out["expected"] = metric.expected ? nlohmann::json(*metric.expected) : nlohmann::json();
  // Copy samples whose spin kernel timed out (launch gaps timed): left out, or all of them and not judged.
  if (metric.summary.discarded > 0) out["discarded"] = metric.summary.discarded;
  if (metric.summary.invalid) out["timing_invalid"] = true;
  if (metric.unit == "GB/s") {
    out["bytes"] = metric.work;
  } else {
    out["size"] = metric.work;
  }
  return out;
}

nlohmann::json optional_json(const std::optional<int>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

nlohmann::json peers_json(const smoke::SmokeReport& report) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const smoke::PeerResult& peer : report.peers) {
    pairs.push_back({{"source", peer.source},
                     {"destination", peer.destination},
                     {"peer_access", peer.peer_access},
                     {"metric", metric_json(peer.metric)}});
  }
  nlohmann::json bidirectional = nlohmann::json::array();
  for (const smoke::PeerResult& peer : report.bidirectional) {
    bidirectional.push_back(
        {{"source", peer.source}, {"destination", peer.destination}, {"metric", metric_json(peer.metric)}});
  }
  std::vector<report::Finding> findings = report.peer_findings;
  findings.insert(findings.end(), report.bidirectional_findings.begin(), report.bidirectional_findings.end());
  return {{"pairs", pairs}, {"bidirectional", bidirectional}, {"findings", report::to_json(findings)}};
}

std::string smoke_json(const smoke::SmokeReport& report, report::Verdict verdict, const nccl::SweepReport* sweep) {
  nlohmann::json devices = nlohmann::json::array();
  for (const smoke::DeviceResult& device : report.devices) {
    nlohmann::json metrics = nlohmann::json::array();
    for (const smoke::Metric& metric : device.metrics) metrics.push_back(metric_json(metric));
    const smoke::DeviceInfo& info = device.info;
    devices.push_back(
        {{"index", device.index},
         {"name", info.name},
         {"pci_bus_id", info.pci_bus_id},
         {"compute_capability", std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor)},
         {"sm_count", info.sm_count},
         {"memory_bytes", info.memory_bytes},
         {"clock_mhz", info.clock_mhz},
         {"matmul_clock_mhz", optional_json(info.matmul_clock_mhz)},
         {"memory_clock_mhz", info.memory_clock_mhz},
         {"memory_bus_width", info.memory_bus_width},
         {"pcie",
          {{"generation", optional_json(info.pcie_generation)},
           {"width", optional_json(info.pcie_width)},
           {"max_generation", optional_json(info.pcie_max_generation)},
           {"max_width", optional_json(info.pcie_max_width)}}},
         {"kernel_image", info.kernel_image.empty() ? nlohmann::json() : nlohmann::json(info.kernel_image)},
         {"local_cpulist", info.local_cpulist.empty() ? nlohmann::json() : nlohmann::json(info.local_cpulist)},
         {"step_cpulist", info.step_cpulist.empty() ? nlohmann::json() : nlohmann::json(info.step_cpulist)},
         {"pcie_upstream",
          {{"max_generation", optional_json(info.pcie_upstream_max_generation)},
           {"max_width", optional_json(info.pcie_upstream_max_width)}}},
         {"mig_profile", info.mig_profile.empty() ? nlohmann::json() : nlohmann::json(info.mig_profile)},
         {"expectation_model",
          info.expectation_model.empty() ? nlohmann::json() : nlohmann::json(info.expectation_model)},
         {"hung", device.hung},
         {"verdict", report::to_string(report::verdict_of(device.findings))},
         {"metrics", metrics},
         {"findings", report::to_json(device.findings)}});
  }
  nlohmann::json out = {
      {"gpuenv_version", gpuenv_version()},
      {"command", "smoke"},
      {"verdict", report::to_string(verdict)},
      {"driver",
       {{"library", report.library},
        {"loaded", report.driver_loaded},
        {"cuda_version",
         report.driver_cuda_version.empty() ? nlohmann::json() : nlohmann::json(report.driver_cuda_version)},
        {"device_count", report.device_count}}},
      {"kernels",
       {{"embedded", report.kernels.embedded},
        {"cuda_version", report.kernels.cuda_version},
        {"archs", report.kernels.archs},
        {"bytes", report.kernels.bytes},
        {"images",
         [&report] {
           nlohmann::json files = nlohmann::json::array();
           for (const smoke::KernelImage& image : report.kernels.images) files.push_back(image.file);
           return files;
         }()}}},
      {"findings", report::to_json(report.findings)},
      {"devices", devices},
      {"peers", peers_json(report)}};
  if (sweep != nullptr) out["nccl"] = nccl_sweep_json(*sweep);
  return report::dump_host_json(std::move(out));  // GPU names and driver messages are host text
}

/// "  metric  median  min  max  expected" rows, one per measurement, numbers right-aligned.
std::string metrics_table(const std::vector<smoke::Metric>& metrics) {
  if (metrics.empty()) return {};
  std::size_t width = 6;
  for (const smoke::Metric& metric : metrics) width = std::max(width, metric.id.size());
  auto number = [](double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%10.1f", value);
    return std::string(buffer);
  };
  std::ostringstream out;
  out << "  " << std::string("metric").append(width - 6, ' ') << "      median         min         max    expected\n";
  for (const smoke::Metric& metric : metrics) {
    out << "  " << metric.id << std::string(width - metric.id.size(), ' ') << "  " << number(metric.summary.median)
        << "  " << number(metric.summary.min) << "  " << number(metric.summary.max) << "  "
        << (metric.expected ? number(*metric.expected) : std::string(9, ' ') + "-") << "  " << metric.unit << "\n";
  }
  return out.str();
}

std::string smoke_text(const smoke::SmokeReport& report, report::Verdict verdict, const report::TextStyle& style) {
  std::ostringstream out;
  out << "gpuenv smoke: " << report::to_string(verdict) << "\n\n";
  if (!report.findings.empty()) out << report::render_findings(report.findings, style);
  for (const smoke::DeviceResult& device : report.devices) {
    out << "\nGPU " << device.index << ": " << (device.info.name.empty() ? "unknown" : device.info.name);
    if (!device.info.expectation_model.empty()) out << " (expectations: " << device.info.expectation_model << ")";
    if (device.info.pcie_generation && device.info.pcie_width) {
      out << ", PCIe Gen" << *device.info.pcie_generation << " x" << *device.info.pcie_width;
    }
    out << "\n" << metrics_table(device.metrics) << report::render_findings(device.findings, style);
  }
  if (!report.peer_findings.empty()) {
    std::vector<smoke::Metric> pairs;
    for (const smoke::PeerResult& peer : report.peers) pairs.push_back(peer.metric);
    out << "\nPeer copies (destination reads source):\n"
        << metrics_table(pairs) << report::render_findings(report.peer_findings, style);
  }
  if (!report.bidirectional_findings.empty()) {
    std::vector<smoke::Metric> directions;
    for (const smoke::PeerResult& peer : report.bidirectional) directions.push_back(peer.metric);
    out << "\nPeer copies both ways at once (each direction while the other runs):\n"
        << metrics_table(directions) << report::render_findings(report.bidirectional_findings, style);
  }
  return out.str();
}

/// `--describe`: the embedded kernel images and the drivers each is for; nothing touches a GPU.
std::string describe_kernels(bool json) {
  const smoke::KernelsInfo kernels = smoke::embedded_kernels_info();
  const std::string oldest =
      kernels.embedded ? probe::cuda::cuda_version_text(kernels.images.back().min_driver) : std::string();
  const std::string uncovered =
      kernels.embedded ? "drivers older than CUDA " + oldest +
                             " get no image: smoke skips its own matmuls and memory test there (copies and cuBLAS "
                             "still run)"
                       : "built without nvcc: no kernel image; smoke runs copies and cuBLAS only";
  if (json) {
    nlohmann::json images = nlohmann::json::array();
    for (std::size_t i = 0; i < kernels.images.size(); ++i) {
      const smoke::KernelImage& image = kernels.images[i];
      images.push_back({{"file", image.file},
                        {"toolkit", image.cuda_version},
                        {"sass", image.sass_archs},
                        {"ptx", image.ptx_arch},
                        {"min_driver_cuda", probe::cuda::cuda_version_text(image.min_driver)},
                        {"drivers", smoke::kernel_image_driver_range(kernels.images, i)},
                        {"bytes", image.bytes}});
    }
    const nlohmann::json described = {
        {"gpuenv_version", gpuenv_version()}, {"images", images}, {"not_covered", uncovered}};
    return described.dump(2) + "\n";
  }
  std::ostringstream out;
  out << "gpuenv smoke kernel images: " << kernels.images.size() << "\n";
  for (std::size_t i = 0; i < kernels.images.size(); ++i) {
    const smoke::KernelImage& image = kernels.images[i];
    out << "  " << image.file << ": CUDA " << image.cuda_version << " toolkit, SASS "
        << util::join(image.sass_archs, " ") << ", PTX " << image.ptx_arch << ", " << image.bytes << " bytes; for "
        << smoke::kernel_image_driver_range(kernels.images, i) << "\n";
  }
  out << "  " << uncovered << "\n";
  return out.str();
}

/// After a hang a step thread is still inside libcuda: exit() would run static destructors and the driver's own
/// teardown under it (a hang or a crash, turning exit code 1 into 124 or 139). Flush what was printed and leave
/// without them.
[[noreturn]] void leave_now(Context& context, ExitCode code) {
  context.out.flush();
  context.err.flush();
  std::fflush(nullptr);
  std::_Exit(static_cast<int>(code));
}

/// `--nccl`: the all-reduce over every GPU, after the per-GPU tests; the floor is named by --instance-type, else by
/// the instance type DMI carries.
util::Expected<nccl::SweepReport> run_nccl_sweep(Context& context, const SmokeCommandOptions& options,
                                                 const std::string& cuda_library, const std::string& nccl_library) {
  nccl::SweepOptions sweep;
  sweep.cuda_library = cuda_library;
  sweep.nccl.library = nccl_library;
  if (!options.python.empty()) sweep.nccl.python = options.python;
  sweep.instance_type = !options.instance_type.empty()
                            ? options.instance_type
                            : probe::classify_cloud(probe::read_dmi_strings(context.system)).instance_type;
  if (options.quick) sweep.sizes = {8ULL << 20, 64ULL << 20};
  return nccl::run_allreduce_sweep(context.system, sweep);
}

util::Expected<ExitCode> run_smoke_command(Context& context, const SmokeCommandOptions& options) {
  if (options.describe) {
    context.out << describe_kernels(options.json);
    return ExitCode::ok;
  }
  smoke::SmokeOptions request;
  for (auto [name, library] :
       {std::pair{"GPUENV_CUDA_LIBRARY", &request.library}, std::pair{"GPUENV_NVML_LIBRARY", &request.nvml_library}}) {
    GPUENV_TRY_ASSIGN(auto named, library_from_environment(context.system, name, *library));
    *library = named;
  }
  // GPUENV_NCCL_LIBRARY is checked before any GPU work, as the others are (docs/security.md, "Named files").
  std::string nccl_library;
  if (options.nccl) {
    GPUENV_TRY_ASSIGN(auto named, library_from_environment(context.system, "GPUENV_NCCL_LIBRARY", ""));
    nccl_library = named;
    // --python's interpreter runs as root to find the wheel: the same rule as doctor's --python.
    if (options.python.find('/') != std::string::npos) {
      GPUENV_TRY(require_trusted(context.system, options.python, "--python " + options.python));
    }
  }
  request.quick = options.quick;
  if (options.device >= 0) request.device = options.device;
  if (options.fail_ratio > options.min_ratio) {
    return util::Error::usage("--fail-ratio must not exceed --min-ratio");
  }
  request.thresholds.min_ratio = options.min_ratio;
  request.thresholds.fail_ratio = options.fail_ratio;
  request.repetitions = options.repetitions;
  request.step_timeout = std::chrono::milliseconds(static_cast<long long>(options.timeout_s * 1000));
  request.init_timeout = std::chrono::milliseconds(static_cast<long long>(options.init_timeout_s * 1000));
  request.run_timeout = std::chrono::milliseconds(static_cast<long long>(options.budget_s * 1000));
  if (options.expect_gpus >= 0) request.expect_gpus = options.expect_gpus;
  request.cublas = !options.no_cublas;
  GPUENV_TRY_ASSIGN(auto cublas, library_from_environment(context.system, "GPUENV_CUBLAS_LIBRARY", ""));
  request.cublas_library = cublas;
  request.peer = !options.no_peer;
  request.memtest_fraction = options.no_memtest ? 0 : options.memtest;
  GPUENV_TRY(read_smoke_overrides(options.expect, "--expect", false, request.overrides));
  GPUENV_TRY(read_smoke_overrides(options.minimum, "--minimum", true, request.overrides));
  GPUENV_TRY_ASSIGN(auto report, smoke::run_smoke(context.system, request));
  std::optional<nccl::SweepReport> sweep;
  // Not after a hang (smoke's, or any abandoned work): NCCL would wait behind the stuck thread, and unsetting
  // NCCL_COMM_ID would race its getenv (glibc before 2.40).
  if (options.nccl && !report.abandoned_work && !system::work_was_abandoned()) {
    GPUENV_TRY_ASSIGN(auto ran, run_nccl_sweep(context, options, request.library, nccl_library));
    sweep = std::move(ran);
  }
  // Each finding's action from data/doctor/actions.toml, as doctor gives them (docs/doctor-json.md "Actions").
  GPUENV_TRY_ASSIGN(auto actions, doctor::builtin_actions());
  doctor::assign_actions(report.findings, *actions);
  for (smoke::DeviceResult& device : report.devices) doctor::assign_actions(device.findings, *actions);
  doctor::assign_actions(report.peer_findings, *actions);
  doctor::assign_actions(report.bidirectional_findings, *actions);
  if (sweep) doctor::assign_actions(sweep->findings, *actions);
  const report::Verdict verdict = sweep ? std::max(report.verdict, sweep->verdict) : report.verdict;
  if (options.json) {
    context.out << smoke_json(report, verdict, sweep ? &*sweep : nullptr);
  } else {
    context.out << smoke_text(report, verdict, context.style);
    if (sweep) context.out << nccl_sweep_text(*sweep, context.style);
  }
  const ExitCode code = verdict == report::Verdict::not_ok ? ExitCode::not_ok : ExitCode::ok;
  if (report.abandoned_work || (sweep && sweep->abandoned_work)) leave_now(context, code);
  return code;
}

}  // namespace

void add_smoke_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<SmokeCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "smoke", "Run on-device tests per GPU: copies (PCIe, memory) and matmuls, verified and judged (docs/smoke.md)");
  command->add_flag("--json", options->json, "Print the report as JSON (docs/smoke.md)");
  command->add_flag("--quick", options->quick, "Small sizes and 3 repetitions (seconds per GPU)");
  command->add_flag("--describe", options->describe,
                    "List the embedded kernel images (toolkit, SASS and PTX architectures, drivers each is for) and "
                    "exit; touches no GPU");
  command->add_option("--device", options->device, "Only the GPU with this CUDA device ordinal")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--min-ratio", options->min_ratio, "Warn below this fraction of the expected value (default 0.75)")
      ->check(CLI::Range(0.0, 1.0));
  command
      ->add_option("--fail-ratio", options->fail_ratio,
                   "Fail below this fraction of the expected value when no anchor minimum is known (default 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("--repetitions", options->repetitions, "Timed repetitions per test (default 10, --quick 3)")
      ->check(CLI::Range(1, 1000));
  command
      ->add_option("--timeout", options->timeout_s,
                   "Seconds each step may take before the GPU is reported hung (default 120)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--budget", options->budget_s,
                   "Seconds the whole run may take after cuInit: no step starts later (default 600); after a hang "
                   "every other step gets at most 10 s more")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--expect-gpus", options->expect_gpus,
                   "Fail unless at least N GPUs are visible; the peer floors of an N-GPU board then apply")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--init-timeout", options->init_timeout_s,
                   "Seconds cuInit may take before the driver is reported hung (default 90; without persistence mode "
                   "many GPUs take long)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--memtest", options->memtest,
                   "Write and verify patterns over this fraction of each GPU's free memory (e.g. 0.9; default: a "
                   "sub-second test over 5% of it, at least 8 x the L2 cache)")
      ->check(CLI::Range(0.01, 0.95));
  command->add_flag("--no-memtest", options->no_memtest, "Skip the memory test");
  command->add_flag("--no-cublas", options->no_cublas,
                    "Skip the cuBLAS GEMMs (by default the node's libcublas is found and used; GPUENV_CUBLAS_LIBRARY "
                    "names one)");
  command->add_flag("--no-peer", options->no_peer, "Skip the copies between pairs of GPUs");
  command->add_option("--expect", options->expect,
                      "ID=VALUE: what metric ID should reach here, replacing the data's expectation (repeatable; "
                      "ids in docs/smoke.md, p2p for every pair)");
  command->add_option("--minimum", options->minimum, "ID=VALUE: fail metric ID below VALUE (repeatable)");
  command->add_flag("--nccl", options->nccl,
                    "Also all-reduce over every GPU through NCCL (the node's libnccl.so.2; GPUENV_NCCL_LIBRARY names "
                    "one): sums verified, bus bandwidth against the instance type's floor (docs/fabric.md)");
  command->add_option("--python", options->python,
                      "With --nccl: use the NCCL of this interpreter's environment (its nvidia-nccl wheel)");
  command->add_option("--instance-type", options->instance_type,
                      "With --nccl: the instance type whose all-reduce floor applies (default: from DMI)");
  command->callback([&action, options] { action = [options](Context& c) { return run_smoke_command(c, *options); }; });
}

}  // namespace gpuenv::cli
