#pragma once
// The fake libnvidia-ml (tests/fake_nvml) as tests load it: a private copy of the library per fixture, and the
// environment variable that names the fixture, set for a scope.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

namespace gpuenv::testing {

/// Sets an environment variable for the scope and restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : m_name(std::move(name)) {
    if (const char* old = std::getenv(m_name.c_str())) m_old = old;
    ::setenv(m_name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (m_old) {
      ::setenv(m_name.c_str(), m_old->c_str(), 1);
    } else {
      ::unsetenv(m_name.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string m_name;
  std::optional<std::string> m_old;
};

/// A private copy of the fake library. The fake reads its fixture once per loaded instance (a static), so each
/// fixture gets its own file: a new path is a new dlopen instance even when several tests share one process.
class FakeNvmlCopy {
 public:
  FakeNvmlCopy() {
    static int counter = 0;
    m_path = std::filesystem::temp_directory_path() /
             ("gpuenv-fake-nvml-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + ".so");
    std::filesystem::copy_file(GPUENV_FAKE_NVML_LIBRARY, m_path, std::filesystem::copy_options::overwrite_existing);
  }
  ~FakeNvmlCopy() {
    std::error_code ignored;
    std::filesystem::remove(m_path, ignored);  // a hung reader keeps its mapping; removing the name is safe
  }
  FakeNvmlCopy(const FakeNvmlCopy&) = delete;
  FakeNvmlCopy& operator=(const FakeNvmlCopy&) = delete;
  std::string path() const { return m_path.string(); }

 private:
  std::filesystem::path m_path;
};

}  // namespace gpuenv::testing
