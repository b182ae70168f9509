#pragma once
// The CUDA driver API (libcuda.so.1) and cuDNN's own version, loaded at run time through System.

#include <chrono>
#include <string>

#include "probe/facts.hpp"
#include "system/system.hpp"

namespace gpuenv::probe {

/// Loads libcuda.so.1, calls cuInit(0) and cuDriverGetVersion. Never throws; a call that does not
/// return within `timeout` (a hung GPU) is reported as unavailable.
CudaDriver read_cuda_driver(system::System& system, std::chrono::milliseconds timeout);

/// cudnnGetVersion() of the first loadable libcudnn (.so.9, then .so.8) as "X.Y.Z"; empty when none loads.
std::string read_cudnn_runtime_version(system::System& system);

/// Decodes cudnnGetVersion(): 90100 -> "9.1.0" (cuDNN 9: M*10000+m*100+p), 8907 -> "8.9.7" (cuDNN 8: M*1000+m*100+p).
std::string decode_cudnn_version(std::size_t value);

}  // namespace gpuenv::probe
