#pragma once
// Internal to smoke: opening libcuda, cuInit on an abandonable thread, and finding the node's cuBLAS.

#include <memory>

#include "smoke/internal/step.hpp"

namespace gpuenv::smoke {

/// Opens libcuda and resolves the driver API; nullptr (with a failing smoke.driver finding) when it cannot.
std::shared_ptr<Gpu> open_driver(system::System& system, const SmokeOptions& options, SmokeReport& report);

/// cuInit, the driver version and the device count, on a worker thread with options.init_timeout (cuInit can hang on
/// a GPU that fell off the bus). Fills report.driver_cuda_version and device_count; false (with a failing finding)
/// when no GPU can be tested.
bool initialise_driver(const std::shared_ptr<Gpu>& driver, const SmokeOptions& options, SmokeReport& report,
                       int& driver_version);

/// The node's cuBLAS (options.cublas_library, else the best candidate for the driver's CUDA major); nullptr with a
/// skip finding when there is none.
std::shared_ptr<const Cublas> open_cublas(system::System& system, const SmokeOptions& options, int driver_version,
                                          SmokeReport& report);

}  // namespace gpuenv::smoke
