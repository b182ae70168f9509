#include "probe/cuda_driver.hpp"

#include <memory>
#include <string>
#include <vector>

#include "probe/cuda_api.hpp"
#include "system/abandon.hpp"
#include "system/symbols.hpp"

namespace gpuenv::probe {
namespace {

CudaDriver call_driver(system::DynamicLibrary& library) {
  // The one libcuda table; this check needs only cuInit and cuDriverGetVersion of it (the rest may be missing).
  std::vector<std::string> unused;
  const cuda::Api api = cuda::bind_all(library, unused);
  CudaDriver out;
  out.availability.source = "libcuda.so.1";
  if (api.init == nullptr || api.driver_get_version == nullptr) {
    out.availability.reason = "libcuda.so.1 does not export cuInit/cuDriverGetVersion";
    return out;
  }
  out.availability.available = true;
  int version = 0;
  if (api.driver_get_version(&version) == 0 && version > 0) out.driver_cuda_version = cuda::cuda_version_text(version);
  const cuda::CUresult init = api.init(0);
  out.init_result = init;
  if (init != 0) {
    const char* name = nullptr;
    const char* text = nullptr;
    if (api.get_error_name != nullptr) api.get_error_name(init, &name);
    if (api.get_error_string != nullptr) api.get_error_string(init, &text);
    out.init_error = std::string(name != nullptr ? name : "CUDA error") +
                     (text != nullptr ? std::string(": ") + text : std::string());
  }
  return out;
}

}  // namespace

CudaDriver read_cuda_driver(system::System& system, std::chrono::milliseconds timeout) {
  CudaDriver failed;
  failed.availability.source = "libcuda.so.1";
  auto loaded = system.load_library("libcuda.so.1");
  if (!loaded) {
    failed.availability.reason = loaded.error().message;
    return failed;
  }
  // cuInit can hang on a GPU that has fallen off the bus: a thread abandoned at the timeout (system/abandon.hpp).
  auto driver = system::call_abandonable<CudaDriver>(std::shared_ptr<system::DynamicLibrary>(std::move(*loaded)),
                                                     call_driver, timeout);
  if (!driver) {
    failed.availability.reason = "cuInit did not return within " + std::to_string(timeout.count()) + " ms";
    return failed;
  }
  return std::move(*driver);
}

std::string decode_cudnn_version(std::size_t value) {
  if (value == 0) return {};
  if (value >= 90000)
    return std::to_string(value / 10000) + "." + std::to_string((value % 10000) / 100) + "." +
           std::to_string(value % 100);
  return std::to_string(value / 1000) + "." + std::to_string((value % 1000) / 100) + "." + std::to_string(value % 100);
}

std::string read_cudnn_runtime_version(system::System& system) {
  for (const char* name : {"libcudnn.so.9", "libcudnn.so.8"}) {
    auto loaded = system.load_library(name);
    if (!loaded) continue;
    std::size_t (*get_version)() = nullptr;
    system::SymbolBinder(**loaded).optional(get_version, "cudnnGetVersion");
    if (get_version != nullptr) return decode_cudnn_version(get_version());
  }
  return {};
}

}  // namespace gpuenv::probe
