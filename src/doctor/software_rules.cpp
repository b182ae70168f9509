#include <algorithm>
#include <optional>

#include "compat/rules.hpp"
#include "doctor/rules_detail.hpp"

namespace gpuenv::doctor::rules_detail {

// ---- CUDA driver and toolkits -------------------------------------------------------------------

void check_cuda_driver(const HostFacts& facts, Findings& out) {
  const probe::CudaDriver& cuda = facts.cuda_driver;
  if (!facts.live) {
    out.push_back(make("cuda.driver", Status::skip,
                       "not loaded under --root (nothing is executed or loaded from an inspected tree)"));
    return;
  }
  if (!cuda.not_checked.empty()) {
    out.push_back(make("cuda.driver", Status::skip, cuda.not_checked));
    return;
  }
  if (!cuda.availability.available) {
    const bool no_driver = !facts.kernel.module_loaded;
    out.push_back(
        make("cuda.driver", no_driver ? Status::skip : Status::fail,
             no_driver ? "libcuda not checked: no NVIDIA driver"
                       : "libcuda.so.1 cannot be loaded: " + cuda.availability.reason,
             no_driver ? "" : "install the driver's CUDA user-space library (libnvidia-compute / nvidia-driver-cuda)"));
    return;
  }
  if (cuda.init_result && *cuda.init_result != 0) {
    out.push_back(make("cuda.driver", Status::fail,
                       "cuInit failed: " + cuda.init_error + " (CUresult " + std::to_string(*cuda.init_result) + ")",
                       *cuda.init_result == 100
                           ? "no CUDA-capable device is visible: check CUDA_VISIBLE_DEVICES and the GPU count"
                           : "see the driver/library and Xid findings; a reboot clears most initialisation failures"));
    return;
  }
  out.push_back(make("cuda.driver", Status::pass,
                     "cuInit succeeded; the driver supports CUDA up to " + cuda.driver_cuda_version));
}

namespace {

/// The highest CUDA version the node's driver runs, from libcuda or NVML.
std::optional<Version> driver_cuda(const HostFacts& facts) {
  if (auto v = Version::parse(facts.cuda_driver.driver_cuda_version)) return v;
  return Version::parse(facts.gpus.cuda_driver_version);
}

}  // namespace

void check_toolkits(const HostFacts& facts, const compat::KnowledgeBase& kb, Findings& out) {
  if (facts.toolkits.empty()) {
    out.push_back(make("toolkit.installed", Status::skip,
                       "no CUDA toolkit under /usr/local (containers and pip wheels bring their own CUDA runtime)"));
    return;
  }
  std::vector<std::string> found;
  for (const probe::CudaToolkit& tk : facts.toolkits)
    found.push_back(tk.version + " at " + tk.root + (tk.has_nvcc ? "" : " (no nvcc)"));
  out.push_back(make("toolkit.installed", Status::pass, "CUDA toolkit " + util::join(found, ", ")));

  const bool any_on_path =
      std::any_of(facts.toolkits.begin(), facts.toolkits.end(), [](const auto& tk) { return tk.on_path; });
  const probe::CudaToolkit& newest = facts.toolkits.back();
  if (!facts.live) {
    out.push_back(make("toolkit.path", Status::skip,
                       "PATH is not judged under --root (this process's environment is not the tree's)"));
  } else if (!any_on_path && newest.has_nvcc) {
    out.push_back(make("toolkit.path", Status::warn,
                       "CUDA " + newest.version + " is installed but its nvcc is not on PATH",
                       "add `export PATH=" + newest.root + "/bin:$PATH` and `export LD_LIBRARY_PATH=" + newest.root +
                           "/lib64:$LD_LIBRARY_PATH` to the login environment (e.g. /etc/profile.d/cuda.sh)"));
  } else if (any_on_path) {
    std::string which;
    for (const auto& tk : facts.toolkits) {
      if (tk.on_path) which = tk.version;
    }
    out.push_back(make("toolkit.path", Status::pass, "nvcc of CUDA " + which + " is on PATH"));
  }

  const auto cuda = driver_cuda(facts);
  const auto driver =
      Version::parse(facts.kernel.module_version.empty() ? facts.gpus.driver_version : facts.kernel.module_version);
  for (const probe::CudaToolkit& tk : facts.toolkits) {
    const auto version = Version::parse(tk.version);
    if (!version) continue;
    if (!driver) {
      out.push_back(
          make("toolkit.driver_support", Status::skip, "CUDA " + tk.version + ": no driver to judge it against"));
      continue;
    }
    const compat::CudaRelease* release = kb.cuda_release(version->truncated(3));
    const std::optional<Version> required = release ? release->driver_min : kb.driver_for_minor(*version);
    compat::DriverJudgement judged =
        compat::judge_driver(*driver, "driver " + driver->str(), version->truncated(3), required, kb);
    if (judged.status == Status::pass && cuda && version->truncated(2) > cuda->truncated(2)) {
      judged = {Status::warn,
                "toolkit CUDA " + tk.version + " is newer than the CUDA " + cuda->str() + " the driver reports",
                "upgrade the driver"};
    }
    out.push_back(make("toolkit.driver_support", judged.status, "toolkit CUDA " + tk.version + ": " + judged.message,
                       judged.remedy, release ? release->provenance.source : std::string()));
  }
}

void check_libraries(const HostFacts& facts, Findings& out) {
  if (!facts.cudnn) {
    out.push_back(make("cudnn.installed", Status::skip,
                       "cuDNN is not installed on the host (framework wheels and cuDNN images bring their own)"));
  } else {
    const probe::Library& cudnn = *facts.cudnn;
    const std::string version = cudnn.version.empty() ? cudnn.runtime_version : cudnn.version;
    std::string message = "cuDNN " + version + (cudnn.header.empty() ? "" : " (" + cudnn.header + ")");
    if (!cudnn.runtime_version.empty() && !cudnn.version.empty() && cudnn.runtime_version != cudnn.version) {
      out.push_back(make("cudnn.installed", Status::warn,
                         "cuDNN header says " + cudnn.version + " but the library reports " + cudnn.runtime_version,
                         "remove the stale copy so header and library come from one cuDNN release"));
    } else {
      out.push_back(make("cudnn.installed", Status::pass, message));
    }
    if (!cudnn.built_for_cuda.empty() && !facts.toolkits.empty()) {
      const auto toolkit = Version::parse(facts.toolkits.back().version);
      const auto built = Version::parse(cudnn.built_for_cuda);
      if (toolkit && built && toolkit->major() != built->major()) {
        out.push_back(make("cudnn.cuda_major", Status::fail,
                           "cuDNN " + version + " was built for CUDA " + cudnn.built_for_cuda +
                               " but the toolkit is CUDA " + facts.toolkits.back().version,
                           "install the cuDNN package for CUDA " + std::to_string(toolkit->major()) +
                               " (e.g. libcudnn9-cuda-" + std::to_string(toolkit->major()) + ")"));
      } else if (toolkit && built) {
        out.push_back(make("cudnn.cuda_major", Status::pass,
                           "cuDNN was built for CUDA " + cudnn.built_for_cuda + ", matching the toolkit"));
      }
    }
  }
  if (facts.nccl)
    out.push_back(
        make("nccl.installed", Status::pass,
             "NCCL " + facts.nccl->version + (facts.nccl->header.empty() ? "" : " (" + facts.nccl->header + ")")));
}

// ---- Containers ---------------------------------------------------------------------------------

void check_containers(const HostFacts& facts, Findings& out) {
  const probe::ContainerRuntime& c = facts.containers;
  const bool engine = c.docker_installed || c.containerd_installed;
  if (!c.nvidia_ctk && !c.nvidia_container_runtime) {
    out.push_back(make(
        "container.toolkit", engine ? Status::warn : Status::skip,
        engine
            ? "a container engine is installed but the NVIDIA Container Toolkit is not: containers cannot see the GPUs"
            : "no container engine and no NVIDIA Container Toolkit",
        engine ? "install nvidia-container-toolkit from NVIDIA's repository, then `nvidia-ctk runtime configure`"
               : ""));
    return;
  }
  out.push_back(make("container.toolkit", Status::pass,
                     "NVIDIA Container Toolkit present" + (c.nvidia_ctk ? " (" + *c.nvidia_ctk + ")" : std::string())));
  if (c.docker_installed) {
    out.push_back(make(
        "container.docker_runtime", c.docker_nvidia_runtime ? Status::pass : Status::warn,
        c.docker_nvidia_runtime ? "Docker is configured with the nvidia runtime"
                                : "Docker's /etc/docker/daemon.json has no nvidia runtime",
        c.docker_nvidia_runtime ? "" : "`nvidia-ctk runtime configure --runtime=docker && systemctl restart docker`"));
  }
  // Docker CE installs containerd as its own backend; only a containerd used directly (Kubernetes) needs the runtime.
  if (c.containerd_installed && !c.docker_installed) {
    out.push_back(make("container.containerd_runtime", c.containerd_nvidia_runtime ? Status::pass : Status::warn,
                       c.containerd_nvidia_runtime ? "containerd is configured with the nvidia runtime"
                                                   : "containerd's config has no nvidia runtime",
                       c.containerd_nvidia_runtime
                           ? ""
                           : "`nvidia-ctk runtime configure --runtime=containerd && systemctl restart containerd`"));
  }
}

}  // namespace gpuenv::doctor::rules_detail
