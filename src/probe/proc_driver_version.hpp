#pragma once
// /proc/driver/nvidia/version: which kernel module is loaded (version, open or proprietary, build compiler).

#include <optional>
#include <string>
#include <string_view>

#include "util/expected.hpp"

namespace gpuenv::probe {

/// The loaded NVIDIA kernel module as its banner describes it.
struct KernelModuleBanner {
  std::string version;       ///< "460.39", "565.57.01": as printed, leading zeros kept
  bool open_module = false;  ///< "Open Kernel Module" (open-gpu-kernel-modules) vs the proprietary module
  std::string architecture;  ///< "x86_64", "aarch64"; empty when the banner does not name one
  std::string build_info;    ///< the rest of the banner: build date, or "Release Build (builder) date"
};

/// The whole /proc/driver/nvidia/version file.
struct ProcDriverVersion {
  KernelModuleBanner module;
  std::optional<std::string> gcc_version;  ///< "7.5.0"; absent when there is no GCC line or no version in it
  std::string gcc_line;                    ///< the text after "GCC version:", trimmed; empty when absent
};

/// Parses the text after "NVRM version:" or "NVRM: loading " ("NVIDIA UNIX x86_64 Kernel Module  460.39  ...").
util::Expected<KernelModuleBanner> parse_kernel_module_banner(std::string_view banner);

/// Parses /proc/driver/nvidia/version; an Error when there is no "NVRM version:" line with a version in it.
util::Expected<ProcDriverVersion> parse_proc_driver_version(std::string_view text);

}  // namespace gpuenv::probe
