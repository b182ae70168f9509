#pragma once
// A data file compiled into the binary (see cmake/GpuenvEmbed.cmake).

#include <span>
#include <string_view>

#include "util/expected.hpp"

namespace gpuenv::util {

/// A file embedded at build time: its path relative to the embedded folder, and its bytes.
struct EmbeddedFile {
  std::string_view name;
  std::string_view contents;
};

/// The contents of the file named `name` among `files`; an internal Error when this build did not embed it.
inline Expected<std::string_view> embedded_text(std::span<const EmbeddedFile> files, std::string_view name) {
  for (const EmbeddedFile& file : files) {
    if (file.name == name) return file.contents;
  }
  return Error::internal(std::string(name) + " is not compiled into this build");
}

}  // namespace gpuenv::util
