#pragma once
// Force-included before toml++ in every module that reads TOML (see src/CMakeLists.txt, gpuenv_toml).
// toml++ 3.3 asserts (aborts) on some malformed input in debug builds, e.g. "[)"; a user's bad file must
// be an error with file:line:column, not a crash, in every build type.
#define TOML_ASSERT(expr) static_assert(true)
