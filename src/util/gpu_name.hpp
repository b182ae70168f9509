#pragma once
// GPU identity by product name: one comparison shared by compat (gpu.models), doctor (instance types, profiles) and
// smoke (expectations). Names are compared whole after normalization, never as substrings: "NVIDIA T400" is not a
// T4, "GH200" is not an H200, "GB200" is not a B200. Which names belong to which product (the aliases NVML and
// nvidia-smi report) is data: data/compat/gpus.toml and data/smoke/expectations.toml.

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpuenv::util {

/// A GPU name for comparison: lower case, runs of white space as one space, trimmed, without a leading "nvidia " or
/// "tesla " ("NVIDIA  H100 80GB HBM3" -> "h100 80gb hbm3"). A MIG suffix is kept (see gpu_name_without_mig).
std::string normalized_gpu_name(std::string_view name);

/// The MIG profile in a MIG instance's device name ("NVIDIA A100-SXM4-40GB MIG 1g.5gb" -> "1g.5gb"); nullopt for a
/// whole GPU.
std::optional<std::string> gpu_mig_profile(std::string_view device_name);

/// The normalized name of the GPU a device belongs to: a MIG instance's name without its " MIG <profile>" part.
std::string gpu_name_without_mig(std::string_view device_name);

/// True when `device_name` (as the driver reports it, MIG instances included) is exactly one of `names` after
/// normalization. Whole names only.
bool gpu_name_matches(std::string_view device_name, std::span<const std::string> names);

}  // namespace gpuenv::util
