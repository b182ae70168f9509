#include "smoke/internal/device_steps.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "smoke/cuda_api.hpp"
#include "smoke/internal/kernel_images.hpp"
#include "smoke/smoke.hpp"
#include "util/strings.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

// ---------------------------------------------------------------------------------------------------- device query

StepOutcome identify_device(Gpu& gpu) {
  const CudaApi& api = gpu.api;
  check(api.device_get(&gpu.device, gpu.ordinal), "cuDeviceGet");
  char name[256] = {};
  check(api.device_get_name(name, sizeof name - 1, gpu.device), "cuDeviceGetName");
  gpu.info.name = name;
  char bus[64] = {};
  if (api.device_get_pci_bus_id(bus, sizeof bus - 1, gpu.device) == cuda_success) gpu.info.pci_bus_id = bus;
  auto attribute = [&](int which) {
    int value = 0;
    return api.device_get_attribute(&value, which, gpu.device) == cuda_success ? value : 0;
  };
  gpu.info.cc_major = attribute(attribute_compute_capability_major);
  gpu.info.cc_minor = attribute(attribute_compute_capability_minor);
  gpu.info.sm_count = attribute(attribute_multiprocessor_count);
  gpu.info.clock_mhz = attribute(attribute_clock_rate) / 1000;
  gpu.info.memory_clock_mhz = attribute(attribute_memory_clock_rate) / 1000;
  gpu.info.memory_bus_width = attribute(attribute_global_memory_bus_width);
  gpu.info.l2_bytes = static_cast<std::uint64_t>(attribute(attribute_l2_cache_size));
  std::size_t total = 0;
  if (api.device_total_mem(&total, gpu.device) == cuda_success) gpu.info.memory_bytes = total;
  return {};
}

StepOutcome create_context(Gpu& gpu) {
  StepOutcome out;
  const CudaApi& api = gpu.api;
  check(api.primary_ctx_retain(&gpu.context, gpu.device), "cuDevicePrimaryCtxRetain");
  set_current_gpu(gpu.ordinal);
  check(api.ctx_set_current(gpu.context), "cuCtxSetCurrent");
  check(create_stream(api, 1 /* CU_STREAM_NON_BLOCKING */, gpu.stream), "cuStreamCreate");
  check(create_event(api, 0, gpu.start), "cuEventCreate");
  check(create_event(api, 0, gpu.stop), "cuEventCreate");
  out.findings.push_back(
      Finding{"smoke.device",
              Status::pass,
              gpu.info.name + " at " + (gpu.info.pci_bus_id.empty() ? "unknown PCI address" : gpu.info.pci_bus_id) +
                  ": CC " + std::to_string(gpu.info.cc_major) + "." + std::to_string(gpu.info.cc_minor) + ", " +
                  std::to_string(gpu.info.sm_count) + " SMs, " + size_text(gpu.info.memory_bytes) + ", max SM clock " +
                  std::to_string(gpu.info.clock_mhz) + " MHz, max memory clock " +
                  std::to_string(gpu.info.memory_clock_mhz) + " MHz",
              {},
              {}});
  return out;
}

// ---------------------------------------------------------------------------------------------------- kernels

namespace {

/// The driver cannot JIT PTX: its compiler library is missing (a container without libnvidia-ptxjitcompiler) or JIT
/// is disabled (CUDA_DISABLE_PTX_JIT). A GPU newer than an image's SASS (Blackwell on the 11.8 image) then cannot run
/// it.
bool jit_unavailable(CUresult result) {
  return result == cuda_error_jit_compiler_not_found || result == cuda_error_jit_compilation_disabled;
}

/// Errors that mean "this image has no code for this GPU or driver": the next image may have. Not a fault of the GPU.
bool image_cannot_run(CUresult result) {
  return result == cuda_error_no_binary_for_gpu || result == cuda_error_unsupported_ptx_version ||
         result == cuda_error_invalid_ptx || result == cuda_error_invalid_image || jit_unavailable(result);
}

}  // namespace

StepOutcome load_kernels(Gpu& gpu, const std::string& driver_version, int driver_version_number) {
  StepOutcome out;
  const KernelsInfo kernels = embedded_kernels_info();
  if (!kernels.embedded) {
    out.findings.push_back(
        Finding{"smoke.kernels",
                Status::skip,
                "skipped: built without CUDA (nvcc was not found when gpuenv was built); matmul tests do not run",
                "rebuild gpuenv on a machine with the CUDA toolkit (nvcc) to include the kernels",
                {}});
    return out;
  }
  const KernelImage* loaded_image = nullptr;
  std::string tried;
  CUresult last = cuda_success;
  for (const KernelImage* image : kernel_images_for(kernels.images, driver_version_number)) {
    // cuModuleLoadData reads the fatbin header with 8-byte loads: give it an aligned copy.
    std::vector<std::uint64_t> aligned((image->bytes + 7) / 8 + 1, 0);
    std::memcpy(aligned.data(), image->contents.data(), image->bytes);
    last = load_module(gpu.api, aligned.data(), gpu.module);
    tried += (tried.empty() ? "" : "; ") + image->file + " (CUDA " + image->cuda_version + ": " +
             describe_cuda_error(gpu.api, last) + ")";
    if (last == cuda_success) {
      loaded_image = image;
      break;
    }
    if (!image_cannot_run(last)) break;
  }
  const std::string cc = std::to_string(gpu.info.cc_major) + "." + std::to_string(gpu.info.cc_minor);
  if (loaded_image == nullptr && image_cannot_run(last)) {  // gpu.module stays empty
    // Not a fault of the GPU or the node (a build without the image for this driver, or a container without the PTX
    // JIT): our own matmuls and memory test are not run, said as a skip so that a healthy node is not DEGRADED by it.
    out.findings.push_back(
        Finding{"smoke.kernels",
                Status::skip,
                "the embedded kernels cannot run here: cuModuleLoadData returned " +
                    describe_cuda_error(gpu.api, last) + "; kernels built with CUDA " + kernels.cuda_version + " for " +
                    kernels.archs + "; driver supports CUDA " + driver_version + ", GPU is CC " + cc +
                    "; images tried: " + tried + "; device query and copies still ran, matmul tests skipped",
                std::string(jit_unavailable(last)
                                ? "the driver cannot compile PTX here: install the driver's PTX JIT compiler "
                                  "(libnvidia-ptxjitcompiler.so.1; in a container, the NVIDIA Container Toolkit's "
                                  "compute capability mounts it) and unset CUDA_DISABLE_PTX_JIT, or "
                                : "") +
                    "a driver that supports CUDA " + kernels.cuda_version +
                    " (or newer) runs them; `gpuenv smoke --describe` lists the images and the drivers each is for",
                {}});
    return out;
  }
  check(last, "cuModuleLoadData");
  gpu.info.kernel_image = loaded_image->file;
  check(gpu.api.module_get_function(&gpu.sgemm, gpu.module.get(), "smoke_sgemm"), "cuModuleGetFunction(smoke_sgemm)");
  check(gpu.api.module_get_function(&gpu.hgemm, gpu.module.get(), "smoke_hgemm_wmma"),
        "cuModuleGetFunction(smoke_hgemm_wmma)");
  check(gpu.api.module_get_function(&gpu.bf16gemm, gpu.module.get(), "smoke_bf16gemm_wmma"),
        "cuModuleGetFunction(smoke_bf16gemm_wmma)");
  check(gpu.api.module_get_function(&gpu.memtest_fill, gpu.module.get(), "smoke_fill_pattern"),
        "cuModuleGetFunction(smoke_fill_pattern)");
  check(gpu.api.module_get_function(&gpu.memtest_check, gpu.module.get(), "smoke_check_pattern"),
        "cuModuleGetFunction(smoke_check_pattern)");
  check(gpu.api.module_get_function(&gpu.memtest_move, gpu.module.get(), "smoke_move_inversion"),
        "cuModuleGetFunction(smoke_move_inversion)");
  for (const auto& [function, name] :
       {std::pair{&gpu.fill_words, "smoke_fill_words"}, std::pair{&gpu.check_words, "smoke_check_words"},
        std::pair{&gpu.compare_words, "smoke_compare_words"}, std::pair{&gpu.stream_copy, "smoke_stream_copy"}}) {
    check(gpu.api.module_get_function(function, gpu.module.get(), name),
          std::string("cuModuleGetFunction(") + name + ")");
  }
  // Optional: without it copies are timed one per event pair.
  if (gpu.api.module_get_function(&gpu.spin_wait, gpu.module.get(), "smoke_spin_wait") != cuda_success)
    gpu.spin_wait = nullptr;
  out.findings.push_back(Finding{"smoke.kernels",
                                 Status::pass,
                                 "kernels loaded (" + loaded_image->file + ": CUDA " + loaded_image->cuda_version +
                                     " fatbin, " + std::to_string(loaded_image->bytes) +
                                     " bytes; driver supports CUDA " + driver_version + ")",
                                 {},
                                 {}});
  return out;
}

// ---------------------------------------------------------------------------------------------------- copies

StepOutcome allocate_copy_buffers(Gpu& gpu) {
  const CudaApi& api = gpu.api;
  gpu.bytes = copy_bytes(gpu.options, gpu.info.l2_bytes);
  gpu.host_bytes = std::min(gpu.bytes, host_copy_bytes(gpu.options));
  check(allocate_device_memory(api, gpu.bytes, gpu.device_a), "cuMemAlloc_v2(" + size_text(gpu.bytes) + ")");
  check(allocate_device_memory(api, gpu.bytes, gpu.device_b), "cuMemAlloc_v2(" + size_text(gpu.bytes) + ")");
  void* host = nullptr;
  check(api.mem_alloc_host(&host, gpu.host_bytes), "cuMemAllocHost_v2(" + size_text(gpu.host_bytes) + ")");
  gpu.pinned = static_cast<std::uint32_t*>(host);
  allocate_spin_flag(gpu);
  gpu.pageable.assign(gpu.host_bytes / 4, 0);
  return {};
}

void free_copy_buffers(Gpu& gpu) {
  gpu.device_a.reset();
  gpu.device_b.reset();
  if (gpu.pinned != nullptr) gpu.api.mem_free_host(gpu.pinned);
  free_spin_flag(gpu);
  gpu.pinned = nullptr;
  gpu.pageable = {};
}

StepOutcome copy_outcome(const Gpu& gpu, const std::string& id, const std::string& label, const Summary& rates,
                         double bytes, std::size_t size, const PatternCheck& data, const Expectation& from_data) {
  StepOutcome out;
  const Expectation expectation = with_override(gpu.options, id, from_data);
  Metric metric{id, "GB/s", rates, expectation.expected, bytes, data.ok()};
  out.metrics.push_back(metric);
  const std::string observed = label + " " + rate_text(rates.median) + " GB/s (median of " +
                               std::to_string(rates.count) + ", " + size_text(size) + ", min " + rate_text(rates.min) +
                               ", max " + rate_text(rates.max) + ")";
  if (!data.ok()) {
    out.findings.push_back(
        Finding{"smoke." + id,
                Status::fail,
                observed + ": data corrupted: " + data.describe(size / 4),
                "the copy returned wrong data: check for Xid errors (sudo dmesg | grep -i xid) and run `gpuenv doctor`",
                {}});
    return out;
  }
  if (rates.invalid) {
    out.findings.push_back(Finding{"smoke." + id, Status::skip,
                                   observed + ", data verified; " + invalid_timing_text(rates),
                                   "run it again on an idle host; a host that stalls for seconds while queueing "
                                   "copies (CPU starvation, a blocked driver call) is worth checking",
                                   expectation.source});
    return out;
  }
  const Judgement judgement = judge(rates.median, expectation, gpu.options.thresholds, "GB/s");
  Finding finding{"smoke." + id,
                  judgement.status,
                  observed + ", data verified; " + judgement.explanation + discarded_note(rates),
                  {},
                  expectation.source};
  if (judgement.status == Status::warn || judgement.status == Status::fail) {
    finding.remedy =
        id.find("2d_pinned") != std::string::npos || id.rfind("h2d", 0) == 0
            ? "check the PCIe link (gen and width in `nvidia-smi -q`), the slot, NUMA placement and IOMMU settings"
            : "check clocks and throttling (`nvidia-smi -q -d PERFORMANCE`) and run `gpuenv doctor`";
  }
  out.findings.push_back(std::move(finding));
  return out;
}

}  // namespace gpuenv::smoke
