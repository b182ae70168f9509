#include "probe/cuda_driver.hpp"

#include <memory>

#include "system/abandon.hpp"

namespace gpuenv::probe {
namespace {

using CUresult = int;

struct CudaApi {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_get_version)(int*) = nullptr;
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
};

CudaDriver call_driver(system::DynamicLibrary& library) {
  CudaApi api;
  api.init = reinterpret_cast<decltype(api.init)>(library.symbol("cuInit"));
  api.driver_get_version = reinterpret_cast<decltype(api.driver_get_version)>(library.symbol("cuDriverGetVersion"));
  api.get_error_name = reinterpret_cast<decltype(api.get_error_name)>(library.symbol("cuGetErrorName"));
  api.get_error_string = reinterpret_cast<decltype(api.get_error_string)>(library.symbol("cuGetErrorString"));
  CudaDriver out;
  out.availability.source = "libcuda.so.1";
  if (api.init == nullptr || api.driver_get_version == nullptr) {
    out.availability.reason = "libcuda.so.1 does not export cuInit/cuDriverGetVersion";
    return out;
  }
  out.availability.available = true;
  int version = 0;
  if (api.driver_get_version(&version) == 0 && version > 0) {
    out.driver_cuda_version = std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
  }
  const CUresult init = api.init(0);
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
    using GetVersion = std::size_t (*)();
    const auto get_version = reinterpret_cast<GetVersion>((*loaded)->symbol("cudnnGetVersion"));
    if (get_version != nullptr) return decode_cudnn_version(get_version());
  }
  return {};
}

}  // namespace gpuenv::probe
