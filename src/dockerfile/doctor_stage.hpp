#pragma once
// The --with-doctor parts of a generated Dockerfile (docs/dockerfile.md "gpuenv doctor in the image"): the portable
// gpuenv binary for the platform being built (TARGETARCH), downloaded with its SHA-256 checked or copied from the
// build context, and a HEALTHCHECK meant as a readiness signal, never a liveness probe. Pure text builders.

#include <string>

namespace gpuenv::dockerfile {

/// The curl image of the download stage, as the structural check must allow it ("curlimages/curl:<tag>").
std::string doctor_download_image();
/// The global ARG (before the first FROM) that picks the binary's stage.
std::string doctor_global_arg();
/// The stages that provide the binary, before the image's FROM. `curl_reference` is how FROM names the curl image
/// (doctor_download_image(), behind a registry mirror, pinned by digest).
std::string doctor_stages(const std::string& curl_reference);
/// The final-stage lines that install the binary, prove it runs, and declare the HEALTHCHECK.
std::string doctor_install();

}  // namespace gpuenv::dockerfile
