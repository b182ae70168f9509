// util's number parsers, the only way gpuenv reads a number from text: whole strings only, every malformed or
// out-of-range input a nullopt (std::sto* threw on these and ended the process). Decimal and hexadecimal forms as
// std::from_chars reads them (C++20 [charconv.from.chars]: no "0x" prefix, a minus sign only for signed types).

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "util/strings.hpp"

using gpuenv::util::parse_double;
using gpuenv::util::parse_int;
using gpuenv::util::parse_unsigned;

TEST_CASE("parse_int: whole decimal integers, nullopt for anything else", "[util]") {
  struct Row {
    const char* text;
    std::optional<long long> value;
  };
  const Row rows[] = {
      {"550", 550},
      {"-3", -3},
      {" 42\r\n", 42},  // host text keeps its line ending
      {"0", 0},
      {"9223372036854775807", 9223372036854775807LL},
      {"", std::nullopt},
      {" ", std::nullopt},
      {"abc", std::nullopt},
      {"12abc", std::nullopt},  // std::stoi read 12 and ignored the rest
      {"1 2", std::nullopt},
      {"+5", std::nullopt},
      {"1.5", std::nullopt},
      {"0x10", std::nullopt},
      {"9223372036854775808", std::nullopt},  // past long long: std::stoll threw out_of_range
      {"99999999999999999999999", std::nullopt},
      {"-", std::nullopt},
  };
  for (const Row& row : rows) {
    INFO("'" << row.text << "'");
    CHECK(parse_int(row.text) == row.value);
  }
}

TEST_CASE("parse_int with a range: the bounds are inclusive, values outside are nullopt", "[util]") {
  CHECK(parse_int("0", 0, 10) == 0);
  CHECK(parse_int("10", 0, 10) == 10);
  CHECK(parse_int("11", 0, 10) == std::nullopt);
  CHECK(parse_int("-1", 0, 10) == std::nullopt);
  CHECK(parse_int("ten", 0, 10) == std::nullopt);
}

TEST_CASE("parse_unsigned: decimal and hexadecimal digits, no sign, no prefix, at most max", "[util]") {
  struct Row {
    const char* text;
    unsigned long long max;
    int base;
    std::optional<unsigned long long> value;
  };
  constexpr unsigned long long any = ~0ULL;
  const Row rows[] = {
      {"65535", 65535, 10, 65535},
      {"65536", 65535, 10, std::nullopt},
      {"18446744073709551615", any, 10, 18446744073709551615ULL},
      {"18446744073709551616", any, 10, std::nullopt},  // past 64 bits: std::stoull threw out_of_range
      {"-1", any, 10, std::nullopt},                    // std::stoul wrapped it to 2^64-1
      {"+1", any, 10, std::nullopt},
      {"", any, 10, std::nullopt},
      {"8O", any, 10, std::nullopt},
      {"1c", any, 16, 28},
      {"1C", any, 16, 28},
      {"0000", 0xffffffff, 16, 0},
      {"0x1c", any, 16, std::nullopt},  // std::stoul(…, 16) took the prefix
      {"1g", any, 16, std::nullopt},
      {"ffffffffffffffff", any, 16, any},
      {"10000000000000000", any, 16, std::nullopt},
      {"100000000", 0xffffffff, 16, std::nullopt},
  };
  for (const Row& row : rows) {
    INFO("'" << row.text << "' base " << row.base << " max " << row.max);
    CHECK(parse_unsigned(row.text, row.max, row.base) == row.value);
  }
}

TEST_CASE("parse_double: whole decimal numbers in the classic locale, nullopt for anything else", "[util]") {
  struct Row {
    const char* text;
    std::optional<double> value;
  };
  const Row rows[] = {
      {"24", 24.0},           {"0.5", 0.5},          {"1e3", 1000.0},       {" 2.5 ", 2.5},
      {"-1.25", -1.25},       {"", std::nullopt},    {".", std::nullopt},   {"1.2.3", std::nullopt},
      {"fast", std::nullopt}, {"24x", std::nullopt}, {"inf", std::nullopt}, {"nan", std::nullopt},
      {"0,5", std::nullopt},
  };
  for (const Row& row : rows) {
    INFO("'" << row.text << "'");
    CHECK(parse_double(row.text) == row.value);
  }
}
