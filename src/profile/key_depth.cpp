#include "profile/key_depth.hpp"

#include <cctype>
#include <string>

#include "util/strings.hpp"

namespace gpuenv::profile {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

/// The number of key-separating dots in `line` outside strings, and the column of the last one counted.
std::size_t key_dots(std::string_view line, std::size_t& column) {
  std::size_t dots = 0;
  char quote = 0;  // the open string's quote character, or 0 outside strings
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == '\\' && quote == '"') {
        ++i;  // an escaped character, e.g. \" inside a basic string
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '#') break;  // a comment runs to the end of the line
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '.') {
      const bool decimal_point = i > 0 && i + 1 < line.size() && is_digit(line[i - 1]) && is_digit(line[i + 1]);
      if (!decimal_point) {
        ++dots;
        column = i + 1;
      }
    }
  }
  return dots;
}

}  // namespace

util::Expected<util::Ok> check_key_depth(std::string_view text, std::string_view origin) {
  std::size_t number = 0;
  for (std::string_view line : util::split_lines(text)) {
    ++number;
    std::size_t column = 0;
    const std::size_t parts = key_dots(line, column) + 1;
    if (parts > k_max_key_parts) {
      return util::Error::input(std::string(origin) + ":" + std::to_string(number) + ":" + std::to_string(column) +
                                    ": a key or table header of " + std::to_string(parts) +
                                    " dotted parts, over the limit of " + std::to_string(k_max_key_parts),
                                "profile keys have two parts ([section] key); remove the extra dots");
    }
  }
  return util::Ok{};
}

}  // namespace gpuenv::profile
