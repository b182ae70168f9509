#pragma once
// A guard run before the TOML parser: toml++ caps nested arrays and inline tables (256) but not dotted keys, and a
// table header such as [a.a.a. ... .a] with 10^5 parts overflows the stack when the parsed tree is built or freed.

#include <cstddef>
#include <string_view>

#include "util/expected.hpp"

namespace gpuenv::profile {

/// The most dot-separated parts one key or table header may have; profiles use two (`[cuda] version`, or the
/// quoted matrix key "cuda.version" which is one part).
inline constexpr std::size_t k_max_key_parts = 32;

/// An input Error "origin:LINE:COLUMN: ..." at the first line whose keys have more than k_max_key_parts parts. Dots
/// inside quoted strings and between digits (1.5) are not counted; any other dot outside a string is.
util::Expected<util::Ok> check_key_depth(std::string_view text, std::string_view origin);

}  // namespace gpuenv::profile
