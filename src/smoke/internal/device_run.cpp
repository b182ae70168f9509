#include "smoke/internal/device_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <tuple>

#include "smoke/cuda_api.hpp"
#include "smoke/internal/device_steps.hpp"
#include "smoke/internal/host_link.hpp"
#include "smoke/internal/verify.hpp"
#include "util/gpu_name.hpp"
#include "util/strings.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

DeviceRun::DeviceRun(system::System& system, std::shared_ptr<Gpu> gpu, std::shared_ptr<const Expectations> expectations,
                     std::string driver_version, int driver_version_number, DeviceResult& result)
    : m_system(system),
      m_gpu(std::move(gpu)),
      m_expectations(std::move(expectations)),
      m_driver_version(std::move(driver_version)),
      m_driver_version_number(driver_version_number),
      m_result(result) {}

void DeviceRun::run() {
  if (!step("smoke.device", identify_device)) {
    m_gpu->stopped = true;
    return;
  }
  read_nvml_before();  // before this process has a context on the GPU: every process NVML lists is another's
  if (!step("smoke.device", create_context)) {
    m_gpu->stopped = true;
    return;
  }
  place_on_local_cpus();
  m_result.info = m_gpu->info;
  m_model = find_gpu(*m_expectations, m_gpu->info.name);
  if (m_model != nullptr) m_result.info.expectation_model = m_model->model;
  if (const auto profile = util::gpu_mig_profile(m_gpu->info.name)) judge_mig_instance(*profile);
  if (step("smoke.kernels", [version = m_driver_version, number = m_driver_version_number](Gpu& g) {
        return load_kernels(g, version, number);
      })) {
    m_result.info.kernel_image = m_gpu->info.kernel_image;
  }
  // GPUs run in parallel; their timed host<->device copies take turns: this GPU takes its turn when the host link is
  // free, between its device-only steps (and between its matmul plans), or at the end.
  copies();
  if (!m_host_copies_done) m_host_copies_done = host_link_copies(false);
  matmuls();
  memtest();
  if (!m_host_copies_done) host_link_copies(true);
  free_copy_buffers_unless_hung();
  read_usage_after();
}

void DeviceRun::release() {
  if (m_gpu->hung || m_gpu->context == nullptr) return;
  const auto released = run_step(m_gpu, "smoke.release", [](Gpu& g) {
    release_cublas(g);
    g.module.reset();
    g.start.reset();
    g.stop.reset();
    g.timing_events.clear();  // each destroyed, in order
    g.stream.reset();
    g.api.primary_ctx_release(g.device);
    g.context = nullptr;
    return StepOutcome{};
  });
  if (!released) m_gpu->stopped = m_gpu->hung = true;  // as in free_copy_buffers_unless_hung
}

void DeviceRun::place_on_local_cpus() {
  if (m_gpu->info.pci_bus_id.empty()) return;
  const auto text = m_system.read_file(m_gpu->options.sysfs_root + "/bus/pci/devices/" +
                                       sysfs_bus_id(m_gpu->info.pci_bus_id) + "/local_cpulist");
  if (!text) return;
  m_gpu->local_cpus = parse_cpu_list(*text);
  if (m_gpu->local_cpus.empty()) return;
  m_gpu->info.local_cpulist = std::string(util::trim(*text));
  m_gpu->host_link = m_gpu->host_links->for_node(m_gpu->info.local_cpulist);  // its socket's turn
  // Where a step thread really runs: pthread_setaffinity_np may refuse (a container's cpuset, CPUs offline).
  struct Placement {
    int result = 0;
    std::string cpus;
  };
  auto placed = std::make_shared<Placement>();
  run_step(m_gpu, "smoke.cpu_placement", [placed](Gpu& g) {
    placed->result = run_on_cpus(g.local_cpus);
    placed->cpus = thread_cpulist();
    return StepOutcome{};
  });
  m_gpu->info.step_cpulist = placed->cpus;
  if (placed->result == 0) {
    m_result.findings.push_back(Finding{
        "smoke.cpu_placement",
        Status::pass,
        "step threads run on CPUs " + placed->cpus + ", the GPU's NUMA node (" + m_gpu->info.local_cpulist + ")",
        {},
        {}});
    return;
  }
  // Not a fault of the GPU: said, not judged; host<->device figures may then be those of the far socket.
  m_result.findings.push_back(
      Finding{"smoke.cpu_placement",
              Status::skip,
              "step threads could not be placed on the GPU's NUMA node (CPUs " + m_gpu->info.local_cpulist +
                  "): pthread_setaffinity_np returned " + std::strerror(placed->result) + "; they run on CPUs " +
                  (placed->cpus.empty() ? std::string("unknown") : placed->cpus) +
                  ", so pinned buffers may sit on another socket",
              "allow the GPU's local CPUs in the container's cpuset (docker --cpuset-cpus, Kubernetes CPU manager)",
              {}});
}

void DeviceRun::absorb(StepOutcome outcome) {
  for (Finding& finding : outcome.findings) m_result.findings.push_back(std::move(finding));
  for (Metric& metric : outcome.metrics) m_result.metrics.push_back(std::move(metric));
  if (outcome.stop) m_gpu->stopped = true;
}

void DeviceRun::free_copy_buffers_unless_hung() {
  if (m_gpu->hung) return;
  const auto freed = run_step(m_gpu, "smoke.copy_buffers", [](Gpu& g) {
    free_copy_buffers(g);
    return StepOutcome{};
  });
  // Its thread is still inside the driver: ~Gpu must leave the handles to it, and cli must leave with _Exit.
  if (!freed) m_gpu->stopped = m_gpu->hung = true;
}

int DeviceRun::sgemm_size() const {
  const SmokeOptions& options = m_gpu->options;
  return options.sgemm_size > 0 ? options.sgemm_size : (options.quick ? 1024 : 4096);
}

int DeviceRun::tensor_size() const {
  const SmokeOptions& options = m_gpu->options;
  return options.tensor_size > 0 ? options.tensor_size : (options.quick ? 2048 : 8192);
}

void DeviceRun::matmuls() {
  if (m_gpu->stopped) return;
  const bool kernels = static_cast<bool>(m_gpu->module.get());
  if (!kernels) {
    m_result.findings.push_back(Finding{
        "smoke.matmul", Status::skip, "matmul tests skipped: the kernels are not loaded (see smoke.kernels)", {}, {}});
  }
  const bool cublas = m_gpu->cublas != nullptr &&
                      step("smoke.cublas", [version = m_driver_version](Gpu& g) { return prepare_cublas(g, version); });
  const Precision tensor = tensor_precision();
  std::vector<GemmPlan> plans;
  for (const auto& [precision, size, floor_size, suffix] :
       {std::tuple{Precision::fp32, sgemm_size(), m_gpu->options.sgemm_floor_size, std::string("sgemm_fp32")},
        std::tuple{tensor, tensor_size(), m_gpu->options.tensor_floor_size,
                   std::string("gemm_") + to_string(tensor)}}) {
    if (cublas) plans.push_back({"cublas_" + suffix, GemmPlan::Engine::cublas, precision, size, floor_size, {}});
    if (kernels) plans.push_back({suffix, GemmPlan::Engine::kernel, precision, size, floor_size, {}});
  }
  std::optional<ClockSampler> clocks;
  if (m_gpu->nvml != nullptr && !plans.empty())
    clocks.emplace(m_gpu->nvml, m_gpu->info.pci_bus_id, std::chrono::milliseconds(20), m_gpu->launches_in_flight);
  for (GemmPlan& plan : plans) {
    if (plan.engine == GemmPlan::Engine::kernel) plan.cublas_tflops = measured("cublas_" + plan.id);
    // By value: `model` points into `expectations`, which the thread co-owns, so an abandoned GEMM that
    // finishes after run_smoke returned still reads live memory.
    step("smoke." + plan.id, [plan, model = m_model, expectations = m_expectations](Gpu& g) {
      return run_gemm(g, plan, model, *expectations);
    });
    // Between plans too (each is ~1 s of sustained windows): four GPUs of a socket waiting for the whole matmul
    // block before their turn would end one turn apart after it (scripts/bench: 8 GPUs took 1.9 x one).
    if (!m_host_copies_done) m_host_copies_done = host_link_copies(false);
  }
  if (!m_gpu->stopped) m_gpu->operand_cache = nullptr;  // the last GPU done frees them (a hung step holds its own)
  if (!plans.empty()) judge_matmul_clocks(clocks ? clocks->stop() : std::vector<ClockSample>{});
}

void DeviceRun::judge_matmul_clocks(const std::vector<ClockSample>& samples) {
  Finding finding = judge_clocks(samples, m_gpu->info.clock_mhz);
  std::vector<unsigned> mhz;
  for (const ClockSample& sample : samples) {
    if (sample.under_load) mhz.push_back(sample.sm_mhz);  // as judge_clocks: idle samples say nothing
  }
  if (!mhz.empty()) {
    std::nth_element(mhz.begin(), mhz.begin() + static_cast<std::ptrdiff_t>(mhz.size() / 2), mhz.end());
    m_result.info.matmul_clock_mhz = static_cast<int>(mhz[mhz.size() / 2]);
  }
  m_result.findings.push_back(std::move(finding));
}

std::optional<double> DeviceRun::measured(const std::string& id) const {
  for (const Metric& metric : m_result.metrics) {
    if (metric.id == id && metric.verified) return metric.summary.median;
  }
  return std::nullopt;
}

void DeviceRun::memtest() {
  if (m_gpu->stopped || m_gpu->options.memtest_fraction == 0) return;
  if (!m_gpu->module.get()) {
    m_result.findings.push_back(Finding{
        "smoke.memtest", Status::skip, "memtest skipped: the kernels are not loaded (see smoke.kernels)", {}, {}});
    return;
  }
  // NVML's counters before and after: a test that provoked corrected (or remapped) errors reads back right.
  const std::shared_ptr<const NvmlMonitor> nvml = m_gpu->nvml;
  const std::string bus_id = m_gpu->info.pci_bus_id;
  auto errors = [bus_id](const NvmlMonitor& monitor) { return monitor.memory_errors(bus_id); };
  const MemoryErrorCounters before = read_bounded<MemoryErrorCounters>(nvml, errors).value_or(MemoryErrorCounters{});
  if (!step("smoke.memtest", run_memtest) && m_gpu->hung) return;
  if (nvml == nullptr) return;
  m_result.findings.push_back(
      judge_memory_errors(before, read_bounded<MemoryErrorCounters>(nvml, errors).value_or(MemoryErrorCounters{})));
}

}  // namespace gpuenv::smoke
