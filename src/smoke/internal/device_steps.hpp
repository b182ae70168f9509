#pragma once
// The steps every GPU runs before its tests: the device query, loading the kernel image, and the copy buffers with
// the verdict of one copy. DeviceRun (device_run.hpp) runs them in order on step threads.

#include <string>

#include "report/finding.hpp"
#include "smoke/internal/step.hpp"
#include "smoke/internal/verify.hpp"

namespace gpuenv::smoke {

/// Reads the device's name, PCI address and attributes (no context yet: NVML then still sees only other processes).
StepOutcome identify_device(Gpu& gpu);
/// Retains the device's primary context and creates its stream and events; the smoke.device finding.
StepOutcome create_context(Gpu& gpu);

/// Loads the first embedded kernel image that runs on this driver and GPU (kernel_images_for's order); a warning,
/// not a failure, when none can.
StepOutcome load_kernels(Gpu& gpu, const std::string& driver_version, int driver_version_number);

/// Allocates the two device buffers, the pinned and pageable host buffers and the spin flag of the copy tests.
StepOutcome allocate_copy_buffers(Gpu& gpu);

/// Frees what allocate_copy_buffers allocated, also after it failed half-way.
void free_copy_buffers(Gpu& gpu);

/// The metric and finding of one timed copy of `size` bytes (`bytes` counted: twice for read + write): a failure when
/// the data came back wrong, else judged against `from_data` (or the operator's override).
StepOutcome copy_outcome(const Gpu& gpu, const std::string& id, const std::string& label, const Summary& rates,
                         double bytes, std::size_t size, const PatternCheck& data, const Expectation& from_data);

}  // namespace gpuenv::smoke
