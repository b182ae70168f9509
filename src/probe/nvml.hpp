#pragma once
// GPU facts through NVML, loaded at run time (dlopen of libnvidia-ml.so.1 via System); no link-time dependency.

#include <chrono>
#include <string>

#include "probe/facts.hpp"
#include "system/system.hpp"

namespace gpuenv::probe {

/// The default NVML soname; GPUENV_NVML_LIBRARY overrides it (tests point it at a fake libnvidia-ml).
inline constexpr const char* k_nvml_library = "libnvidia-ml.so.1";

/// Reads every GPU through NVML. Never throws: a missing library, a failed nvmlInit (with NVML's own
/// error string) or a call that does not return within `timeout` gives availability.available = false.
GpuInventory read_nvml(system::System& system, const std::string& library, std::chrono::milliseconds timeout);

/// NVML's name for a return code when the library is not there to ask ("Driver Not Loaded" for 9, ...).
std::string nvml_error_name(int code);

/// Names of the active bits of an NVML clocks-event (throttle) reason mask, idle and application clocks excluded.
std::vector<std::string> throttle_reason_names(unsigned long long mask);

}  // namespace gpuenv::probe
