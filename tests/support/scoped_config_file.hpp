#pragma once
// A fake library's configuration file for a test's scope: written to a fresh temporary file that the environment
// variable the fake reads (GPUENV_FAKE_CUDA, GPUENV_FAKE_NVML, GPUENV_FAKE_NCCL) names until the scope ends.

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuenv::testing {

class ScopedConfigFile {
 public:
  /// Writes `text` to <tmp>/<stem>-<pid>-<n>.conf and sets `variable` to that path.
  ScopedConfigFile(const char* variable, const std::string& stem, const std::string& text) : m_variable(variable) {
    static std::atomic<int> counter{0};
    m_path = std::filesystem::temp_directory_path() /
             (stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + ".conf");
    std::ofstream(m_path) << text;
    ::setenv(m_variable, m_path.c_str(), 1);
  }
  ~ScopedConfigFile() {
    ::unsetenv(m_variable);
    std::error_code ignored;
    std::filesystem::remove(m_path, ignored);
  }
  ScopedConfigFile(const ScopedConfigFile&) = delete;
  ScopedConfigFile& operator=(const ScopedConfigFile&) = delete;
  std::string path() const { return m_path.string(); }

 private:
  const char* m_variable;
  std::filesystem::path m_path;
};

}  // namespace gpuenv::testing
