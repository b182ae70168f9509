#pragma once
// A private temporary directory for one test, removed with everything in it at the end of its scope.

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace gpuenv::testing {

class TempDir {
 public:
  /// A new directory named `<temp>/gpuenv-<purpose>-XXXXXX` (mkdtemp: mode 0700, a name no other run has).
  explicit TempDir(const std::string& purpose = "test") {
    std::string pattern = (std::filesystem::temp_directory_path() / ("gpuenv-" + purpose + "-XXXXXX")).string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    m_path = pattern;
  }
  ~TempDir() {
    // A test may have taken write permission away from the directory (to check a refused write).
    std::error_code ignored;
    std::filesystem::permissions(m_path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add,
                                 ignored);
    std::filesystem::remove_all(m_path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return m_path; }
  std::string str() const { return m_path.string(); }
  /// Writes `contents` to `name` inside the directory; returns the file's path.
  std::string write(const std::string& name, const std::string& contents) const {
    std::ofstream(m_path / name, std::ios::binary) << contents;
    return (m_path / name).string();
  }

 private:
  std::filesystem::path m_path;
};

}  // namespace gpuenv::testing
