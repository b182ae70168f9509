#include "probe/nvidia_smi_exit.hpp"

#include "util/strings.hpp"

namespace gpuenv::probe {
namespace {

// Source of the meanings: nvidia-smi man page, section RETURN VALUE
// (https://docs.nvidia.com/deploy/nvidia-smi/index.html; the same list is in the man page shipped with the
// driver, e.g. manpages.ubuntu.com nvidia-smi.1 for nvidia-utils-550-server). The codes mirror NVML's
// nvmlReturn_t values (9 = NVML_ERROR_DRIVER_NOT_LOADED, 15 = NVML_ERROR_GPU_IS_LOST, ...).
// The remedies are gpuenv's own advice, not NVIDIA's.
constexpr NvidiaSmiExitCode k_exit_codes[] = {
    {0, "Success", ""},
    {2, "A supplied argument or flag is invalid", "check the nvidia-smi command line (nvidia-smi -h)"},
    {3, "The requested operation is not available on target device",
     "the GPU or driver does not support this query; skip it on this GPU"},
    {4, "The current user does not have permission to access this device or perform this operation",
     "run as root, or check the permissions of /dev/nvidia* (and the container's device cgroup)"},
    {6, "A query to find an object was unsuccessful",
     "the GPU, UUID or bus id asked for does not exist; list GPUs with nvidia-smi -L"},
    {8, "A device's external power cables are not properly attached",
     "power the node down and seat the GPU's auxiliary power cables"},
    {9, "NVIDIA driver is not loaded",
     "load the kernel module (sudo modprobe nvidia); if it fails, check dmesg, DKMS for the running kernel "
     "and Secure Boot signing"},
    {10, "NVIDIA Kernel detected an interrupt issue with a GPU",
     "check dmesg for Xid errors; reset the GPU or reboot the node"},
    {12, "NVML Shared Library couldn't be found or loaded",
     "install the driver's user-space libraries (libnvidia-ml.so.1) or add their directory to the loader path"},
    {13, "Local version of NVML doesn't implement this function",
     "the NVML library is older than nvidia-smi; make the driver libraries and nvidia-smi the same version"},
    {14, "infoROM is corrupted", "the GPU's infoROM is corrupt: reflash it or RMA the board (contact the vendor)"},
    {15, "The GPU has fallen off the bus or has otherwise become inaccessible",
     "reboot the node; if it repeats, check PCIe seating, power and thermals, then contact the vendor"},
    {255, "Other error or internal driver error occurred",
     "check dmesg for NVRM and Xid messages; reload the driver or reboot the node"},
};

constexpr std::string_view k_remedy_reload =
    "the kernel module and the user-space driver differ (usually a driver upgrade without a reboot): reboot, or "
    "unload and reload the nvidia modules; pin the driver packages to stop unattended upgrades";

/// The part of `line` after `prefix`, trimmed; assumes `line` starts with `prefix`.
std::string after(std::string_view line, std::string_view prefix) {
  return std::string(util::trim(line.substr(prefix.size())));
}

}  // namespace

std::span<const NvidiaSmiExitCode> nvidia_smi_exit_codes() { return k_exit_codes; }

std::optional<NvidiaSmiExitCode> nvidia_smi_exit_code(int code) {
  for (const NvidiaSmiExitCode& entry : k_exit_codes) {
    if (entry.code == code) return entry;
  }
  return std::nullopt;
}

NvidiaSmiError classify_nvidia_smi_error(std::string_view output) {
  NvidiaSmiError out;
  std::string first_line;
  for (const std::string_view raw : util::split_lines(output)) {
    const std::string_view line = util::trim(raw);
    if (line.empty()) continue;
    if (first_line.empty()) first_line = std::string(line);
    if (util::starts_with(line, "NVML library version:")) {
      const std::string version = after(line, "NVML library version:");
      if (!version.empty()) out.nvml_library_version = version;
      continue;
    }
    if (out.kind != NvidiaSmiFailure::none) continue;  // the first recognized line decides
    constexpr std::string_view k_nvml_init = "Failed to initialize NVML:";
    constexpr std::string_view k_handle = "Unable to determine the device handle for GPU";
    if (util::contains(line, "couldn't communicate with the NVIDIA driver")) {
      out.kind = NvidiaSmiFailure::driver_not_communicating;
      out.remedy =
          "the NVIDIA kernel module is not loaded: run sudo modprobe nvidia and read dmesg; usual causes are a "
          "kernel update without a DKMS rebuild, Secure Boot rejecting the unsigned module, or nouveau owning "
          "the GPU";
    } else if (util::starts_with(line, k_nvml_init)) {
      out.detail = after(line, k_nvml_init);
      if (util::contains(out.detail, "Driver/library version mismatch")) {
        out.kind = NvidiaSmiFailure::driver_library_mismatch;
        out.remedy = std::string(k_remedy_reload);
      } else if (out.detail == "Unknown Error") {
        out.kind = NvidiaSmiFailure::nvml_unknown_error;
        out.remedy =
            "NVML could not open the GPU device nodes; in a container this usually means it lost access to "
            "/dev/nvidia* (e.g. after systemctl daemon-reload): restart the container, or check the device cgroup";
      } else {
        out.kind = NvidiaSmiFailure::nvml_init_failed;
        out.remedy = "NVML failed to start; check dmesg for NVRM messages and the driver installation";
      }
    } else if (util::contains(line, "couldn't find libnvidia-ml.so")) {
      out.kind = NvidiaSmiFailure::nvml_library_not_found;
      out.remedy =
          "install the driver's user-space libraries, or add the directory of libnvidia-ml.so to the "
          "loader path (ldconfig)";
    } else if (line == "No devices were found") {
      out.kind = NvidiaSmiFailure::no_devices_found;
      out.remedy =
          "the driver sees no GPU: check lspci for the device, dmesg for NVRM probe errors, and "
          "whether another driver (nouveau, vfio-pci) owns it";
    } else if (util::starts_with(line, k_handle)) {
      out.kind = NvidiaSmiFailure::device_handle_error;
      // "...for GPU0000:08:00.0: Unknown Error" or "...for GPU1: 0000:34:00.0: Unknown Error": the reason follows
      // the last ": ".
      const std::size_t colon = line.rfind(": ");
      if (colon != std::string_view::npos) out.detail = std::string(util::trim(line.substr(colon + 2)));
      out.remedy = "one GPU cannot be reached: check dmesg for Xid 79 / \"fallen off the bus\"; reboot the node";
    } else {
      continue;
    }
    out.line = std::string(line);
  }
  if (out.kind == NvidiaSmiFailure::none && !first_line.empty()) {
    out.kind = NvidiaSmiFailure::unrecognized;
    out.line = first_line;
  }
  return out;
}

}  // namespace gpuenv::probe
