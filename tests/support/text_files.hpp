#pragma once
// Whole-file text helpers for tests (fixtures, generated files, logs the built binary wrote).

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuenv::testing {

/// The bytes of `path` ("" when it cannot be opened: the test's own assertions say what was expected).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Replaces `path` with `text`; returns whether every byte was written.
inline bool write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return out.good();
}

}  // namespace gpuenv::testing
