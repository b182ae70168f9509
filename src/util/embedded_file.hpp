#pragma once
// A data file compiled into the binary (see cmake/GpuenvEmbed.cmake).

#include <span>
#include <string_view>

namespace gpuenv::util {

/// A file embedded at build time: its path relative to the embedded folder, and its bytes.
struct EmbeddedFile {
  std::string_view name;
  std::string_view contents;
};

}  // namespace gpuenv::util
