#pragma once
// gpuenv's own version, generated once from CMakeLists.txt's `project(gpuenv VERSION …)` (src/cli/version.cpp.in),
// the line scripts/package names its packages by. Every place that prints the version reads it here: --version,
// the JSON reports, the Prometheus expositions and the Dockerfile and cloud-init headers.

#include <string>

namespace gpuenv::cli {

/// "0.1.0": the version this binary was built as.
const std::string& gpuenv_version();

}  // namespace gpuenv::cli
