#include "dockerfile/doctor_stage.hpp"

namespace gpuenv::dockerfile {

std::string doctor_global_arg() {
  return "\n# --with-doctor: where the gpuenv binary comes from: `download` (GPUENV_URL_<ARCH>, GPUENV_SHA256_<ARCH>) "
         "or\n"
         "# `context` (./gpuenv).\n"
         "ARG GPUENV_FROM=download\n";
}

std::string doctor_stages(const std::string& curl_reference) {
  // A missing URL or checksum fails with a message naming the build arguments, not with an empty curl error.
  return "\n# --with-doctor: the portable gpuenv binary (docs/packaging.md, gpuenv-<version>-linux-<arch>, built for "
         "an\n"
         "# old glibc floor) for the platform being built, downloaded with its SHA-256 checked (default; per\n"
         "# architecture: --build-arg GPUENV_URL_AMD64=... --build-arg GPUENV_SHA256_AMD64=..., _ARM64 for\n"
         "# linux/arm64) or copied from the build context (--build-arg GPUENV_FROM=context, file ./gpuenv, one\n"
         "# platform). BuildKit builds only the stage selected.\n"
         "FROM " +
         curl_reference +
         " AS gpuenv-download\n"
         "ARG TARGETARCH\n"
         "ARG GPUENV_URL_AMD64\n"
         "ARG GPUENV_SHA256_AMD64\n"
         "ARG GPUENV_URL_ARM64\n"
         "ARG GPUENV_SHA256_ARM64\n"
         "RUN case \"${TARGETARCH}\" in \\\n"
         "      amd64) url=\"${GPUENV_URL_AMD64}\" sha256=\"${GPUENV_SHA256_AMD64}\" arch=AMD64 ;; \\\n"
         "      arm64) url=\"${GPUENV_URL_ARM64}\" sha256=\"${GPUENV_SHA256_ARM64}\" arch=ARM64 ;; \\\n"
         "      *) echo \"--with-doctor: no gpuenv binary for linux/${TARGETARCH} (amd64, arm64)\" >&2; exit 1 ;; \\\n"
         "    esac \\\n"
         " && if [ -z \"${url}\" ] || [ -z \"${sha256}\" ]; then \\\n"
         "      echo \"--with-doctor: set --build-arg GPUENV_URL_${arch}=<release URL> and "
         "GPUENV_SHA256_${arch}=<its\" \\\n"
         "        \"SHA-256> for linux/${TARGETARCH}, or --build-arg GPUENV_FROM=context with ./gpuenv\" >&2; exit 1; "
         "\\\n"
         "    fi \\\n"
         " && curl -fsSL --retry 3 -o /tmp/gpuenv \"${url}\" \\\n"
         " && printf '%s  /tmp/gpuenv\\n' \"${sha256}\" > /tmp/gpuenv.sha256 \\\n"
         " && sha256sum -c /tmp/gpuenv.sha256\n\n"
         "FROM scratch AS gpuenv-context\n"
         "COPY gpuenv /tmp/gpuenv\n\n"
         "FROM gpuenv-${GPUENV_FROM} AS gpuenv-binary\n";
}

std::string doctor_install() {
  // No HEALTHCHECK on purpose: Swarm's executor stops the container of a task whose HEALTHCHECK turns unhealthy and
  // fails the task with ErrContainerUnhealthy, so the service replaces it (moby/moby
  // daemon/cluster/executor/container/controller.go, Wait), which makes an image's HEALTHCHECK a liveness probe.
  return "\n# `gpuenv doctor --quick --oneline` judges the GPUs this container sees (exit 0 ready, 1 not). A "
         "readiness\n"
         "# and startup signal, never a liveness probe: a GPU or driver fault belongs to the node, and restarting the\n"
         "# container there would restart-loop a training job. So no HEALTHCHECK (Docker Swarm replaces tasks whose\n"
         "# HEALTHCHECK turns unhealthy; Kubernetes ignores it): declare the command as a startupProbe and\n"
         "# readinessProbe (docs/dockerfile.md). `gpuenv --version` fails the build if the binary cannot run here.\n"
         "COPY --from=gpuenv-binary --chmod=0755 /tmp/gpuenv /usr/local/bin/gpuenv\n"
         "RUN gpuenv --version\n";
}

}  // namespace gpuenv::dockerfile
