#pragma once
// Installs a committed npm package set (package.json + package-lock.json) into a build-directory prefix, once, for
// tests that run real npm tools (validators). Safe when CTest runs several such tests at the same time.

#include <filesystem>
#include <string>

namespace gpuenv::testing {

/// `npm ci` of `source_dir`'s package.json and package-lock.json into `prefix`, unless `prefix` already holds a
/// finished install of the same lock file. Concurrent callers (other test processes) wait on a lock file and never
/// see a half-made node_modules. Returns prefix/node_modules, or an empty path and `why` (no node/npm, npm failed).
std::filesystem::path npm_ci_once(const std::filesystem::path& source_dir, const std::filesystem::path& prefix,
                                  std::string& why);

}  // namespace gpuenv::testing
