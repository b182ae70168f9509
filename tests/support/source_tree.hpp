#pragma once
// The source tree the tests were built from: the shipped data/, profiles/, packaging/ and dockerfiles/ they check.

#include <filesystem>

namespace gpuenv::testing {

/// The repository's root (GPUENV_SOURCE_DIR, set by tests/CMakeLists.txt).
inline const std::filesystem::path k_source{GPUENV_SOURCE_DIR};

}  // namespace gpuenv::testing
