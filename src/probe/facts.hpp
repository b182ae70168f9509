#pragma once
// HostFacts: everything doctor knows about a node, as plain data. Collectors fill it through System;
// rules read it; nothing here touches the machine.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/fabric_facts.hpp"
#include "probe/sxid.hpp"
#include "probe/xid.hpp"

namespace gpuenv::probe {

/// Where a group of facts came from, or why it is missing: rules say "skip: <reason>" instead of guessing.
struct Availability {
  bool available = false;
  std::string source;  ///< "NVML", "nvidia-smi -q -x", "/proc/driver/nvidia/version", ...
  std::string reason;  ///< why not available (empty when available)
};

/// One GPU as NVML or nvidia-smi reports it. Absent optionals mean "not reported / not supported".
/// A GPU's NVLinks as NVML reports them; links it does not report are in neither list.
struct NvLinkFacts {
  std::vector<unsigned> active;    ///< link numbers that are up
  std::vector<unsigned> inactive;  ///< link numbers that exist but are down
  /// Error counters summed over the active links that report them, since the driver loaded.
  std::optional<std::uint64_t> replay_errors;
  std::optional<std::uint64_t> recovery_errors;
  std::optional<std::uint64_t> crc_errors;  ///< flit + data CRC
  /// NVLink5 (Blackwell, whose links refuse the three above): each counter of probe/nvlink5.hpp's table summed over
  /// the active links that report it, since the driver loaded.
  std::vector<NvLink5Counter> nvlink5 = {};
};

struct GpuFacts {
  unsigned index = 0;
  std::string access_error;  ///< non-empty when the driver lists the GPU but it cannot be queried ("GPU is lost")
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  std::optional<std::uint64_t> memory_total_mib;
  std::optional<std::uint64_t> memory_used_mib;
  std::string compute_capability;  ///< "9.0"; empty when not reported
  std::optional<bool> persistence_mode;
  std::optional<bool> mig_enabled;
  std::optional<bool> ecc_enabled;
  std::optional<std::uint64_t> ecc_uncorrected_volatile;
  std::optional<std::uint64_t> ecc_uncorrected_aggregate;
  std::optional<std::uint64_t> ecc_corrected_volatile;
  std::optional<unsigned> retired_pages_single_bit;
  std::optional<unsigned> retired_pages_double_bit;
  std::optional<bool> retired_pages_pending;
  std::optional<unsigned> remapped_rows_correctable;
  std::optional<unsigned> remapped_rows_uncorrectable;
  std::optional<bool> remapped_rows_pending;
  std::optional<bool> remapped_rows_failure;
  std::optional<double> temperature_c;
  std::optional<double> temperature_slowdown_c;
  std::optional<double> power_draw_w;
  std::optional<double> power_limit_w;
  std::optional<double> utilization_percent;
  std::optional<unsigned> sm_clock_mhz;       ///< the SM clock now (nvmlDeviceGetClockInfo NVML_CLOCK_SM)
  std::vector<std::string> throttle_reasons;  ///< active reasons: hw_slowdown, hw_thermal_slowdown, sw_power_cap, ...
  std::optional<unsigned> pcie_gen_current;
  std::optional<unsigned> pcie_gen_max;
  std::optional<unsigned> pcie_width_current;
  std::optional<unsigned> pcie_width_max;
  std::optional<unsigned> process_count;
  std::optional<NvLinkFacts> nvlink;    ///< nullopt: the GPU reports no NVLink
  std::optional<GpuFabricInfo> fabric;  ///< nullopt: neither NVML nor the report said (an old driver)
};

/// The GPUs and the driver as seen through NVML (or a captured nvidia-smi report).
struct GpuInventory {
  Availability availability;
  std::string driver_version;  ///< user-space driver (NVML's view)
  std::string nvml_version;
  std::string cuda_driver_version;  ///< highest CUDA the driver supports, "12.4"
  std::vector<GpuFacts> gpus;
  std::optional<unsigned> attached_gpus;  ///< as reported in the header, may differ from gpus.size()
};

/// The operating system and the machine's size.
struct HostInfo {
  std::string os_id;          ///< os-release ID: "ubuntu"
  std::string os_version_id;  ///< "22.04"
  std::string os_pretty_name;
  std::string kernel_release;  ///< /proc/sys/kernel/osrelease
  std::string architecture;    ///< "x86_64", "aarch64"
  std::optional<unsigned> cpu_count;
  std::optional<std::uint64_t> memory_total_kib;
  std::string cloud;          ///< "aws", "gcp", ... (probe/cloud.hpp); empty when DMI names no cloud
  std::string instance_type;  ///< "p4d.24xlarge"; empty when unknown
  std::string cloud_source;   ///< how they were found ("DMI sys_vendor=Amazon EC2"), or why not
  /// Free bytes where the CUDA stack and container images live, by path.
  std::vector<std::pair<std::string, std::uint64_t>> free_bytes;
};

/// The NVIDIA kernel module and what surrounds it.
struct KernelDriver {
  bool module_loaded = false;       ///< "nvidia" in /proc/modules, or /proc/driver/nvidia/version present
  std::string module_version;       ///< from /proc/driver/nvidia/version
  std::optional<bool> open_module;  ///< open vs proprietary kernel module
  bool nouveau_loaded = false;
  std::optional<bool> secure_boot;        ///< from efivars, when readable
  std::vector<std::string> device_nodes;  ///< /dev/nvidia* present
  std::string modules_source;             ///< where module facts came from, or why unknown
};

/// A user-space driver library found on disk, with the version in its file name.
struct DriverLibrary {
  std::string name;     ///< "libnvidia-ml", "libcuda"
  std::string path;     ///< e.g. /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15
  std::string version;  ///< "550.54.15"
};

/// The CUDA driver API (libcuda), loaded at run time.
struct CudaDriver {
  Availability availability;
  std::optional<int> init_result;   ///< cuInit's CUresult
  std::string init_error;           ///< its name / description when not 0
  std::string driver_cuda_version;  ///< cuDriverGetVersion: the highest CUDA the driver supports, "12.4"
  std::string not_checked;          ///< why libcuda was deliberately not loaded on a live run; "" when it was tried
};

/// One CUDA toolkit installation.
struct CudaToolkit {
  std::string root;     ///< /usr/local/cuda-12.4
  std::string version;  ///< from version.json or version.txt
  bool has_nvcc = false;
  bool on_path = false;          ///< its bin/ is in PATH
  bool on_library_path = false;  ///< its lib64/ is in LD_LIBRARY_PATH or the loader config
  std::string cublas_version;    ///< from libcublas.so.X.Y.Z in lib64, when present
};

/// cuDNN / NCCL found on the node.
struct Library {
  std::string version;          ///< header version (X.Y.Z); empty when no header
  std::string header;           ///< where it was read
  std::string runtime_version;  ///< what the loaded library says (cudnnGetVersion), when it could be loaded
  std::string library_path;     ///< a shared library found on disk
  std::string built_for_cuda;   ///< cuDNN: the CUDA major it was built for, when known ("12")
};

/// The NVIDIA Container Toolkit and container engines.
struct ContainerRuntime {
  std::optional<std::string> nvidia_ctk;  ///< path of nvidia-ctk when found
  bool nvidia_container_runtime = false;  ///< nvidia-container-runtime binary or its config present
  bool docker_installed = false;
  bool docker_nvidia_runtime = false;  ///< /etc/docker/daemon.json names the nvidia runtime
  bool containerd_installed = false;
  bool containerd_nvidia_runtime = false;  ///< /etc/containerd/config.toml names the nvidia runtime
};

/// RDMA devices under /sys/class/infiniband, split by driver: AWS EFA, and the rest (ConnectX InfiniBand or RoCE).
struct RdmaDevices {
  Availability availability;            ///< source "/sys/class/infiniband"; a reason when it cannot be known
  std::vector<std::string> efa;         ///< devices the efa driver owns ("rdmap16s27", "efa_0")
  std::vector<std::string> infiniband;  ///< the others ("mlx5_0")
  std::vector<RdmaPort> ports;          ///< every port of every device, in device order
};

/// A 64x64 matmul of ones on one device, run by the framework (all 64**3 = 262144 when summed).
struct MatmulResult {
  enum class Outcome { ok, mismatch, error };
  unsigned device = 0;  ///< the framework's device index (cuda:N, /GPU:N)
  Outcome outcome = Outcome::ok;
  std::string detail;  ///< the wrong sum, or the exception's last line
};

/// One framework as the interpreter reports it.
struct FrameworkFacts {
  std::string name;          ///< "torch", "tensorflow"
  bool installed = false;    ///< importlib found the package
  std::string import_error;  ///< the exception's last line when `import` failed
  std::string error;         ///< a later call failed (the exception's last line)
  std::string version;
  std::string cuda;   ///< the CUDA it was built for ("12.4"); empty for CPU builds
  std::string cudnn;  ///< cuDNN version as the framework prints it
  std::optional<bool> cuda_available;
  std::optional<unsigned> device_count;
  std::vector<std::string> arch_list;            ///< torch.cuda.get_arch_list(): "sm_80", "compute_90"
  std::vector<std::string> device_capabilities;  ///< per visible device, "8.0"
  std::vector<MatmulResult> matmul;              ///< per visible device; empty unless the matmul ran (not --quick)
};

/// The interpreter run and what it reported.
struct FrameworkProbe {
  Availability availability;  ///< source: the interpreter; reason when it could not run
  std::vector<FrameworkFacts> frameworks;
};

/// Everything doctor collected, in one value. From here on, facts are immutable.
struct HostFacts {
  /// True when facts come from the running machine (commands run, libraries loaded, environment read);
  /// false under --root, where only files of the inspected tree are read.
  bool live = true;
  HostInfo host;
  KernelDriver kernel;
  std::vector<DriverLibrary> driver_libraries;
  GpuInventory gpus;
  std::vector<KernelEvent> kernel_events;
  std::string kernel_log_source;  ///< "dmesg", "/var/log/kern.log", or why none was readable
  CudaDriver cuda_driver;
  std::vector<CudaToolkit> toolkits;
  std::optional<Library> cudnn;
  std::optional<Library> nccl;
  ContainerRuntime containers;
  RdmaDevices rdma;
  FabricFacts fabric;
  std::vector<SxidEvent> sxid_events;  ///< NVSwitch errors in the kernel log (same window as kernel_events)
  /// Link counters (NVLink, PCIe replays, RDMA ports) at the start of the run and at its end: doctor judges the
  /// difference. Absent when not read (under --root, or a quick run that reads only one).
  std::optional<LinkCounterSnapshot> counters_start;
  std::optional<LinkCounterSnapshot> counters_end;
  std::optional<FrameworkProbe> frameworks;  ///< with --frameworks only
  std::vector<std::string> unreadable;       ///< files that exist but could not be read (permissions)
};

}  // namespace gpuenv::probe
