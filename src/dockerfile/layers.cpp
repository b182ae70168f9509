#include "dockerfile/layers.hpp"

#include "compat/derive.hpp"
#include "dockerfile/text.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::dockerfile {

std::optional<report::Finding> duplicate_libraries(const profile::Profile& p, const compat::KnowledgeBase& kb) {
  if (!compat::framework_brings_cuda_libraries(p, kb)) return std::nullopt;
  const std::string flavor = compat::effective_image_flavor(p, kb);
  const bool cudnn_image = !p.cudnn_version.empty() && flavor != "base";
  if (flavor != "runtime" && !cudnn_image) return std::nullopt;
  const std::string framework = p.framework_name == "pytorch" ? "PyTorch's CUDA wheels" : "TensorFlow [and-cuda]";
  return report::Finding{"dockerfile.duplicate_libraries", report::Status::warn,
                         framework + " bring their own CUDA and cuDNN libraries, so the " +
                             compat::derive(p, kb).image_flavor +
                             " image's copies are never loaded: about 2-3 GB compressed of dead weight per image "
                             "(h2oai/h2o-llmstudio#1081 went from 15 GB to 8.5 GB by moving to a base image)",
                         std::string("set image.flavor = \"base\" (the default for this framework)") +
                             (p.cudnn_version.empty() ? "" : "; [cudnn] then states the cuDNN the wheels load"),
                         "https://github.com/h2oai/h2o-llmstudio/pull/1081"};
}

bool has_torch_compile(const profile::Profile& profile) {
  if (profile.framework_name != "pytorch") return false;
  const auto torch = util::Version::parse(profile.framework_version);
  return torch && torch->major() >= 2;
}

const TorchCompileGap* compile_gap(const profile::Profile& profile, const Data& data) {
  if (!has_torch_compile(profile)) return nullptr;
  const auto torch = util::Version::parse(profile.framework_version);
  const auto python = util::Version::parse(profile.framework_python);
  return python ? data.compile_gap(*torch, *python) : nullptr;
}

std::optional<report::Finding> compile_finding(const profile::Profile& profile, const Data& data) {
  const TorchCompileGap* gap = compile_gap(profile, data);
  if (gap == nullptr) return std::nullopt;
  const std::string series = major_minor(gap->torch_min) +
                             (gap->torch_max == gap->torch_min ? std::string() : "-" + major_minor(gap->torch_max));
  return report::Finding{"dockerfile.compile", report::Status::warn,
                         "torch.compile of PyTorch " + series + " does not run on Python " + gap->python_from.str() +
                             "+ (it raises RuntimeError): the image gets no C/C++ compiler and no torch.compile check",
                         "use an older Python with PyTorch " + profile.framework_version +
                             ", or a PyTorch release whose torch.compile supports Python " + profile.framework_python,
                         gap->provenance.source};
}

bool wants_compiler(const profile::Profile& profile, const Data& data) {
  return has_torch_compile(profile) && profile.image_compiler != "false" && compile_gap(profile, data) == nullptr;
}

std::vector<std::string> compiler_packages(const PythonPlan& plan, bool apt) {
  // Inductor compiles C++ with $CXX or g++ (torch/_inductor/config.py cpp.cxx) and Triton a C launcher with gcc.
  // gcc alone misses the C library headers with --no-install-recommends (Debian's gcc only recommends libc6-dev);
  // Triton's launcher includes Python.h.
  std::vector<std::string> out =
      apt ? std::vector<std::string>{"gcc", "g++", "libc6-dev"} : std::vector<std::string>{"gcc", "gcc-c++"};
  if (plan.method == PythonPlan::Method::os) out.push_back(apt ? "python3-dev" : "python3-devel");
  return out;
}

bool wants_rdma(const profile::Profile& profile) { return profile.image_rdma == "true"; }

std::vector<std::string> rdma_packages(bool apt) {
  // Debian/Ubuntu split rdma-core into libibverbs1 (the loader), ibverbs-providers (mlx5 and the other drivers) and
  // librdmacm1; RHEL's libibverbs package carries the providers.
  if (apt) return {"libibverbs1", "ibverbs-providers", "librdmacm1"};
  return {"libibverbs", "librdmacm"};
}

bool stays_root(const profile::Profile& profile) { return profile.image_user == "root"; }

std::string user_comment(const profile::Profile& profile) {
  if (stays_root(profile)) return {};
  const bool venv = !profile.framework_name.empty();
  const bool writable = profile.image_writable_venv == "true";
  std::string text = std::string("A numeric non-root user, uid ") + k_user_id +
                     " with group 0: Kubernetes' runAsNonRoot needs a numeric USER, and OpenShift runs an arbitrary "
                     "uid in group 0, so the home is group-writable (chgrp 0, chmod g=u)";
  if (venv) {
    text += writable ? " and so is the Python environment (`[image] writable_venv = true`): pip install works at run "
                       "time"
                     : "; the Python environment is read-only to that uid (`[image] writable_venv = true` makes it "
                       "writable), so a running job cannot change what the image was built and checked with";
  }
  return comment(text + ". `[image] user = \"root\"` keeps root.");
}

std::vector<std::string> user_commands(const profile::Profile& profile) {
  if (stays_root(profile)) return {};
  std::vector<std::string> out{"useradd --uid " + std::string(k_user_id) + " --gid 0 --home-dir " + k_home +
                               " --create-home --no-log-init --shell /bin/bash gpuenv"};
  if (has_torch_compile(profile)) out.push_back(std::string("mkdir -p ") + k_inductor_cache + " " + k_triton_cache);
  out.push_back(std::string("chgrp -R 0 ") + k_home);
  out.push_back(std::string("chmod -R g=u ") + k_home);
  return out;
}

std::string venv_permissions(const profile::Profile& profile) {
  return std::string(profile.image_writable_venv == "true" ? "chmod -R g=u " : "chmod -R g=rX ") + k_venv;
}

std::string runtime_identity(const profile::Profile& profile) {
  if (stays_root(profile)) return {};
  std::string text =
      "Any uid in group 0 runs the image (`docker run --user <uid>:0`, OpenShift's restricted SCCs): HOME is set "
      "for a uid without an /etc/passwd entry, and USER and LOGNAME answer getpass.getuser(), which raises for such "
      "a uid";
  std::string env = std::string("ENV HOME=") + k_home + " \\\n    USER=gpuenv \\\n    LOGNAME=gpuenv";
  if (has_torch_compile(profile)) {
    text +=
        " (torch.compile names its cache with it: pytorch/pytorch#140765); torch.compile's caches are group-writable "
        "directories in the home";
    env += std::string(" \\\n    TORCHINDUCTOR_CACHE_DIR=") + k_inductor_cache +
           " \\\n    TRITON_CACHE_DIR=" + k_triton_cache;
  }
  return "\n" + comment(text + ".") + env + "\n";
}

std::string compile_check(const profile::Profile& profile, const Data& data) {
  if (!wants_compiler(profile, data) || stays_root(profile)) return {};
  const std::string code =
      "import getpass, os, pwd, torch; uid = os.getuid(); "
      "assert uid not in [e.pw_uid for e in pwd.getpwall()], 'uid %d has an /etc/passwd entry' % uid; "
      "f = torch.compile(lambda x: torch.sin(x) + torch.cos(x)); x = torch.linspace(0, 1, 64); "
      "assert torch.allclose(f(x), torch.sin(x) + torch.cos(x)), 'torch.compile computed another result'; "
      "print('torch.compile on the CPU as uid', uid, 'user', getpass.getuser())";
  // Everything the check's uid wrote (the caches, Inductor's files under /tmp) is removed in the same layer: left
  // behind, directories owned by that uid would be read-only to the uid the image runs as.
  return comment(std::string("Fail the build unless torch.compile works for a uid without an /etc/passwd entry, as "
                             "OpenShift assigns: its cache directory from getpass.getuser() and a C++ kernel compiled "
                             "and loaded, on the CPU (a build has no GPU). What that uid wrote is removed in the same "
                             "layer.")) +
         "USER " + k_unlisted_uid + ":0\nRUN python -c \"" + code + "\" \\\n && find " + k_home +
         " /tmp -mindepth 1 -user " + k_unlisted_uid + " -delete\n";
}

std::string final_user(const profile::Profile& profile) {
  if (stays_root(profile)) return "# [image] user = \"root\": an image meant as a base for others.\nUSER root\n";
  return std::string("USER ") + k_user_id + "\nWORKDIR " + k_home + "\n";
}

std::string loader_path(bool framework_brings_libraries) {
  if (!framework_brings_libraries) return {};
  return "# The framework's wheels carry their own CUDA libraries and find them through RUNPATH, which the loader\n"
         "# searches after LD_LIBRARY_PATH: keep only the driver directories there so no /usr/local/cuda/lib64 copy\n"
         "# can shadow the wheels' pinned cuBLAS/nvJitLink (the build check below proves where they load from).\n"
         "ENV LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64\n";
}

std::string wheel_library_assert(const std::string& venv) {
  return "libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcublas' in l or 'libcudnn' in l}); "
         "missing = [n for n in ('libcublas', 'libcudnn') if not any(n in p for p in libs)]; "
         "assert not missing, 'no %s loaded: not a CUDA build of the framework' % missing; "
         "foreign = [p for p in libs if not p.startswith('" +
         venv + "/')]; assert not foreign, 'libraries from outside the wheels: %s' % foreign";
}

}  // namespace gpuenv::dockerfile
