// Opening the driver and cuBLAS for a smoke run: libcuda through System, cuInit on a worker thread with a deadline
// (its errors mapped to their causes), and the node's cuBLAS.

#include "smoke/internal/driver_setup.hpp"

#include <future>
#include <thread>

#include "probe/cuda_api.hpp"

namespace gpuenv::smoke {

using report::Finding;
using report::Status;

namespace {

/// The failing finding for a cuInit error, with the remedy that fits it.
Finding init_failure(const CudaApi& api, CUresult result, const std::string& driver_version) {
  Finding finding{"smoke.driver", Status::fail, "cuInit failed: " + describe_cuda_error(api, result), {}, {}};
  if (result == cuda_error_no_device) {
    finding.message = "no CUDA device: " + finding.message;
    finding.remedy =
        "check that the GPUs are visible (nvidia-smi, CUDA_VISIBLE_DEVICES, container --gpus) and run `gpuenv doctor`";
  } else if (result == cuda_error_insufficient_driver || result == cuda_error_system_driver_mismatch ||
             result == cuda_error_compat_not_supported_on_device) {
    finding.message =
        "the CUDA driver library (CUDA " + driver_version + ") does not match the kernel driver: " + finding.message;
    finding.remedy =
        "install matching NVIDIA user-space and kernel driver packages, or remove a cuda-compat library from "
        "LD_LIBRARY_PATH";
  } else if (result == cuda_error_system_not_ready) {
    finding.message =
        "the system is not ready for CUDA (on NVSwitch systems: the fabric manager is not running): " + finding.message;
    finding.remedy =
        "on an NVSwitch board (HGX/DGX 8-GPU) start the nvidia-fabricmanager service (`journalctl -u "
        "nvidia-fabricmanager` shows why it stopped; its version must equal the driver's) and wait for the fabric to "
        "be ready; then `gpuenv doctor`";
  } else if (result == cuda_error_unknown) {
    finding.remedy =
        "an unknown error at initialisation usually means a GPU in a bad state or a user-space/kernel driver "
        "mismatch: check Xid errors (sudo dmesg | grep -i xid; smoke.xid below lists new ones), `nvidia-smi`, that "
        "/dev/nvidia* are accessible (containers: --gpus), then reset the GPU or reboot; run `gpuenv doctor`";
  } else {
    finding.remedy = "run `gpuenv doctor` to check the driver and the kernel log";
  }
  return finding;
}

}  // namespace

/// Opens libcuda and resolves the driver API; nullptr (with a failing smoke.driver finding) when it cannot.
std::shared_ptr<Gpu> open_driver(system::System& system, const SmokeOptions& options, SmokeReport& report) {
  auto loaded = system.load_library(options.library);
  if (!loaded) {
    report.findings.push_back(
        Finding{"smoke.driver",
                Status::fail,
                "no NVIDIA driver found: " + options.library + " cannot be loaded (" + loaded.error().message + ")",
                "install the NVIDIA driver (run `gpuenv doctor` for details), or run on a machine with a GPU",
                {}});
    return nullptr;
  }
  auto driver = std::make_shared<Gpu>();
  driver->library = std::shared_ptr<system::DynamicLibrary>(std::move(*loaded));
  auto api = probe::cuda::resolve(*driver->library);
  if (!api) {
    report.findings.push_back(Finding{"smoke.driver",
                                      Status::fail,
                                      options.library + " is not a usable CUDA driver: " + api.error().message,
                                      "reinstall the NVIDIA driver; an old driver lacks these entry points",
                                      {}});
    return nullptr;
  }
  driver->api = *api;
  driver->options = options;
  report.driver_loaded = true;
  return driver;
}

/// cuInit, the driver version and the device count, on a worker thread (cuInit can hang on a GPU that fell off the
/// bus). Fills report.driver_cuda_version and device_count; false (with a failing finding) when no GPU can be tested.
bool initialise_driver(const std::shared_ptr<Gpu>& driver, const SmokeOptions& options, SmokeReport& report,
                       int& driver_version) {
  struct InitResult {
    CUresult init = cuda_error_unknown;
    int version = 0;
    int count = 0;
  };
  auto promise = std::make_shared<std::promise<InitResult>>();
  std::future<InitResult> future = promise->get_future();
  std::thread([driver, promise] {
    InitResult result;
    driver->api.driver_get_version(&result.version);
    result.init = driver->api.init(0);
    if (result.init == cuda_success && driver->api.device_get_count(&result.count) != cuda_success) result.count = 0;
    promise->set_value(result);
  }).detach();
  if (future.wait_for(options.init_timeout) != std::future_status::ready) {
    report.abandoned_work = true;
    report.findings.push_back(
        Finding{"smoke.driver",
                Status::fail,
                "hang: cuInit did not return within " +
                    format("%g", static_cast<double>(options.init_timeout.count()) / 1000) + " s",
                "without persistence mode cuInit on many GPUs can be slow: enable it (`sudo nvidia-smi -pm 1`, or "
                "nvidia-persistenced) or raise --init-timeout; otherwise check the kernel log for Xid errors (sudo "
                "dmesg | grep -i xid) and run `gpuenv doctor`",
                {}});
    return false;
  }
  const InitResult init = future.get();
  driver_version = init.version;
  report.driver_cuda_version = cuda_version_text(init.version);
  if (init.init != cuda_success) {
    report.findings.push_back(init_failure(driver->api, init.init, report.driver_cuda_version));
    return false;
  }
  report.device_count = init.count;
  if (init.count <= 0) {
    report.findings.push_back(Finding{"smoke.driver",
                                      Status::fail,
                                      "no CUDA device: the driver reports 0 GPUs",
                                      "check CUDA_VISIBLE_DEVICES and the container's GPU access; run `gpuenv doctor`",
                                      {}});
    return false;
  }
  if (options.device && (*options.device < 0 || *options.device >= init.count)) {
    report.findings.push_back(Finding{"smoke.device",
                                      Status::fail,
                                      "--device " + std::to_string(*options.device) + ": the driver reports " +
                                          std::to_string(init.count) + " GPU(s), numbered 0 to " +
                                          std::to_string(init.count - 1),
                                      "pick a CUDA device ordinal that exists",
                                      {}});
    return false;
  }
  report.findings.push_back(Finding{"smoke.driver",
                                    Status::pass,
                                    "CUDA driver " + report.driver_cuda_version + " (" + options.library + "), " +
                                        std::to_string(init.count) + " GPU(s)",
                                    {},
                                    {}});
  return true;
}

/// The node's cuBLAS (options.cublas_library, else the best candidate for the driver's CUDA major); nullptr with a
/// skip finding when there is none: a driver-only host is normal, and our own kernels still ran.
std::shared_ptr<const Cublas> open_cublas(system::System& system, const SmokeOptions& options, int driver_version,
                                          SmokeReport& report) {
  const std::vector<std::string> candidates = options.cublas_library.empty()
                                                  ? cublas_candidates(system, driver_version / 1000)
                                                  : std::vector<std::string>{options.cublas_library};
  auto cublas = load_cublas(system, candidates);
  if (!cublas) {
    report.findings.push_back(
        Finding{"smoke.cublas",
                Status::skip,
                "cuBLAS GEMMs skipped: no usable cuBLAS for CUDA " + report.driver_cuda_version + " or older (" +
                    cublas.error().message + "); the matmuls ran on gpuenv's own kernels only",
                "to test the node's CUDA math libraries, install cuBLAS (the libcublas package of the CUDA "
                "repository) or point GPUENV_CUBLAS_LIBRARY at a libcublas.so",
                {}});
    return nullptr;
  }
  return std::make_shared<const Cublas>(std::move(*cublas));
}
}  // namespace gpuenv::smoke
