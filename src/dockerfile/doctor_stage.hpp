#pragma once
// The --with-doctor parts of a generated Dockerfile (docs/dockerfile.md "gpuenv doctor in the image"): the portable
// gpuenv binary for the platform being built (TARGETARCH), downloaded with its SHA-256 checked or copied from the
// build context; no HEALTHCHECK (a readiness signal, never a liveness probe: docs/dockerfile.md). Pure text builders.

#include <string>

namespace gpuenv::dockerfile {

/// The global ARG (before the first FROM) that picks the binary's stage.
std::string doctor_global_arg();
/// The stages that provide the binary, before the image's FROM. `curl_reference` is how FROM names the curl image
/// (data/dockerfile/base_images.toml [curl], behind a registry mirror, pinned by digest).
std::string doctor_stages(const std::string& curl_reference);
/// The final-stage lines that install the binary and prove it runs; deliberately no HEALTHCHECK.
std::string doctor_install();

}  // namespace gpuenv::dockerfile
