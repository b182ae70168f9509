#pragma once
// The source tree the tests were built from: the shipped data/, profiles/, packaging/ and dockerfiles/ they check,
// and the source files the scans of src/ read.

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace gpuenv::testing {

/// The repository's root (GPUENV_SOURCE_DIR, set by tests/CMakeLists.txt).
inline const std::filesystem::path k_source{GPUENV_SOURCE_DIR};

/// Every regular file under `root` whose extension is one of `extensions` (".cpp"), sorted, so a scan lists its
/// offenders in a stable order.
inline std::vector<std::filesystem::path> files_under(const std::filesystem::path& root,
                                                      const std::set<std::string>& extensions) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && extensions.count(entry.path().extension().string()) != 0)
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpuenv::testing
