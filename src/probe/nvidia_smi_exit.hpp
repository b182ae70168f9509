#pragma once
// What a failed nvidia-smi run means: its exit code, and the error text it printed.

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpuenv::probe {

/// One documented nvidia-smi exit code, with what to do about it.
struct NvidiaSmiExitCode {
  int code = 0;
  std::string_view meaning;  ///< NVIDIA's words from the RETURN VALUE section of the nvidia-smi man page
  std::string_view remedy;   ///< gpuenv's advice; empty for success
};

/// Every exit code the nvidia-smi man page documents, ascending.
std::span<const NvidiaSmiExitCode> nvidia_smi_exit_codes();

/// The documented meaning of `code`, or nullopt for a code the man page does not list.
std::optional<NvidiaSmiExitCode> nvidia_smi_exit_code(int code);

/// A failure nvidia-smi reported in words.
enum class NvidiaSmiFailure {
  none,                      ///< no text at all
  driver_not_communicating,  ///< "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
  driver_library_mismatch,   ///< "Failed to initialize NVML: Driver/library version mismatch"
  nvml_unknown_error,        ///< "Failed to initialize NVML: Unknown Error" (often a container that lost its devices)
  nvml_init_failed,          ///< any other "Failed to initialize NVML: <reason>"
  nvml_library_not_found,    ///< "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system"
  no_devices_found,          ///< "No devices were found"
  device_handle_error,       ///< "Unable to determine the device handle for GPU...: <reason>"
  unrecognized,              ///< text that matches none of the above
};

/// The classification of nvidia-smi's error text.
struct NvidiaSmiError {
  NvidiaSmiFailure kind = NvidiaSmiFailure::none;
  std::string line;    ///< the line that decided `kind` (first non-empty line if unrecognized)
  std::string detail;  ///< the reason NVML gave, e.g. "Unknown Error"; empty if none
  std::optional<std::string> nvml_library_version;  ///< from "NVML library version: 550.144" (newer drivers)
  std::string remedy;                               ///< what to do; empty for none/unrecognized
};

/// Recognizes nvidia-smi's known failure messages in its stdout/stderr text (CRLF and extra lines tolerated).
NvidiaSmiError classify_nvidia_smi_error(std::string_view output);

}  // namespace gpuenv::probe
