#pragma once
// The one conversion every fuzz target makes: libFuzzer's bytes as the text a parser reads.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpuenv::fuzz {

/// The input bytes as text (any bytes, NULs included: parsers take host text as it comes).
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace gpuenv::fuzz
