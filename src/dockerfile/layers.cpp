#include "dockerfile/layers.hpp"

#include "compat/derive.hpp"
#include "dockerfile/text.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpuenv::dockerfile {

/// The curl image of the download stage: Alpine-based, with busybox's sha256sum (data/dockerfile is for facts
/// with sources; this is a tool choice, pinned like uv's image).
constexpr const char* k_curl_image = "curlimages/curl:8.11.1";

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

bool wants_compiler(const profile::Profile& profile) {
  if (profile.framework_name != "pytorch" || profile.image_compiler == "false") return false;
  const auto torch = util::Version::parse(profile.framework_version);
  return torch && torch->major() >= 2;
}

std::vector<std::string> compiler_packages(const PythonPlan& plan, bool apt) {
  // gcc alone misses the C library headers with --no-install-recommends (Debian's gcc only recommends
  // libc6-dev); Triton compiles a small C launcher that includes Python.h.
  std::vector<std::string> out = apt ? std::vector<std::string>{"gcc", "libc6-dev"} : std::vector<std::string>{"gcc"};
  if (plan.method == PythonPlan::Method::os) out.push_back(apt ? "python3-dev" : "python3-devel");
  return out;
}

bool stays_root(const profile::Profile& profile) { return profile.image_user == "root"; }

std::string user_comment(const profile::Profile& profile) {
  if (stays_root(profile)) return {};
  const bool venv = !profile.framework_name.empty();
  return comment(std::string("A numeric non-root user, uid ") + k_user_id +
                 " with group 0: Kubernetes' runAsNonRoot needs a numeric USER, and OpenShift runs an arbitrary uid "
                 "in group 0, so its home" +
                 (venv ? " and the Python environment are" : " is") + " group-writable (chgrp 0, chmod g=u)" +
                 (venv ? ": installing packages works at run time and in derived images." : ".") +
                 " `[image] user = \"root\"` keeps root.");
}

std::vector<std::string> user_commands(const profile::Profile& profile) {
  if (stays_root(profile)) return {};
  return {"useradd --uid " + std::string(k_user_id) + " --gid 0 --home-dir " + k_home +
              " --create-home --no-log-init --shell /bin/bash gpuenv",
          std::string("chgrp -R 0 ") + k_home, std::string("chmod -R g=u ") + k_home};
}

std::string final_user(const profile::Profile& profile) {
  if (stays_root(profile)) return "# [image] user = \"root\": an image meant as a base for others.\nUSER root\n";
  return std::string("ENV HOME=") + k_home + "\nUSER " + k_user_id + "\nWORKDIR " + k_home + "\n";
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

std::string doctor_global_arg() {
  return "\n# --with-doctor: where the gpuenv binary comes from: `download` (GPUENV_URL, GPUENV_SHA256) or `context`.\n"
         "ARG GPUENV_FROM=download\n";
}

std::string doctor_stages() {
  return std::string(
             "\n# --with-doctor: the portable gpuenv binary (docs/packaging.md, gpuenv-<version>-linux-<arch>, built\n"
             "# for an old glibc floor), either downloaded with its SHA-256 checked (default) or copied from the "
             "build\n"
             "# context (--build-arg GPUENV_FROM=context, file ./gpuenv). BuildKit builds only the stage selected.\n"
             "FROM ") +
         k_curl_image +
         " AS gpuenv-download\n"
         "ARG GPUENV_URL\n"
         "ARG GPUENV_SHA256\n"
         "RUN test -n \"${GPUENV_URL}\" -a -n \"${GPUENV_SHA256}\" \\\n"
         " && curl -fsSL --retry 3 -o /tmp/gpuenv \"${GPUENV_URL}\" \\\n"
         " && printf '%s  /tmp/gpuenv\\n' \"${GPUENV_SHA256}\" > /tmp/gpuenv.sha256 \\\n"
         " && sha256sum -c /tmp/gpuenv.sha256\n\n"
         "FROM scratch AS gpuenv-context\n"
         "COPY gpuenv /tmp/gpuenv\n\n"
         "FROM gpuenv-${GPUENV_FROM} AS gpuenv-binary\n";
}

std::string doctor_download_image() { return k_curl_image; }

std::string doctor_install() {
  return "\n# Health: `gpuenv doctor --quick --oneline` judges the GPUs this container sees; any failure is exit 1\n"
         "# (unhealthy), as Docker reserves the other codes. Kubernetes ignores HEALTHCHECK: use the probe in\n"
         "# docs/dockerfile.md. `gpuenv --version` fails the build if the binary cannot run on this image.\n"
         "COPY --from=gpuenv-binary --chmod=0755 /tmp/gpuenv /usr/local/bin/gpuenv\n"
         "RUN gpuenv --version\n"
         "HEALTHCHECK --interval=5m --timeout=30s --start-period=30s --retries=3 \\\n"
         "  CMD [\"/bin/sh\", \"-c\", \"/usr/local/bin/gpuenv doctor --quick --oneline || exit 1\"]\n";
}

}  // namespace gpuenv::dockerfile
