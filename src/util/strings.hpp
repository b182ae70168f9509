#pragma once
// Small string helpers with no domain knowledge.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuenv::util {

/// `text` without leading and trailing ASCII white space (including CR).
std::string_view trim(std::string_view text);
/// Splits on `separator`; keeps empty fields.
std::vector<std::string_view> split(std::string_view text, char separator);
/// Splits into lines, accepting LF and CRLF endings; a final newline adds no empty line.
std::vector<std::string_view> split_lines(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
bool ends_with(std::string_view text, std::string_view suffix);
bool contains(std::string_view text, std::string_view needle);
/// Whether `c` is an ASCII decimal digit (whatever the locale).
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
std::string to_lower(std::string_view text);
/// `list` followed by the items of `more` it does not already hold, in order (package lists).
std::vector<std::string> append_missing(std::vector<std::string> list, const std::vector<std::string>& more);
/// Joins items with `separator` between them.
std::string join(const std::vector<std::string>& items, std::string_view separator);
// The number parsers of gpuenv: host text, flags and data fields are read with these, never with std::sto* (which
// throw on malformed or oversized input and would end the process; tests/util/no_throwing_parsers_test.cpp).
// Surrounding ASCII white space is allowed; anything else that is not the number gives nullopt.

/// Parses a whole string as a non-negative or negative decimal integer.
std::optional<long long> parse_int(std::string_view text);
/// Parses a whole string as a decimal integer in [min, max].
std::optional<long long> parse_int(std::string_view text, long long min, long long max);
/// Parses a whole string as an unsigned integer in `base` (10 or 16: digits only, no sign, no "0x") no larger than
/// `max`.
std::optional<unsigned long long> parse_unsigned(std::string_view text, unsigned long long max = ~0ULL, int base = 10);
/// Parses a whole string as a decimal floating-point number.
std::optional<double> parse_double(std::string_view text);

/// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);
/// The candidate closest to `word` when it is plausibly a typo of it (distance <= max(2, len/3)).
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace gpuenv::util
