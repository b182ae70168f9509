// util::clean_host_text: the one cleaning every renderer applies to text from the host (issue 16).

#include "util/host_text.hpp"

#include <catch2/catch.hpp>
#include <string>

using gpuenv::util::clean_host_text;
using gpuenv::util::CleanOptions;
using gpuenv::util::TextRepairs;

TEST_CASE("host text: invalid UTF-8, controls and length, table-driven", "[util][host_text]") {
  struct Row {
    std::string input;
    bool escape_control;
    std::string expected;
    std::size_t invalid, control, truncated;
  };
  const std::string fffd = "\xEF\xBF\xBD";
  // clang-format off
  const Row rows[] = {
      {"Ubuntu 22.04.4 LTS",          true,  "Ubuntu 22.04.4 LTS",              0, 0, 0},
      {"caf\xC3\xA9 \xE2\x9C\x93",    true,  "caf\xC3\xA9 \xE2\x9C\x93",        0, 0, 0},  // valid multi-byte kept
      {"Ubuntu\xFF",                  true,  "Ubuntu" + fffd,                   1, 0, 0},  // stray byte
      {"\xC3",                        true,  fffd,                              1, 0, 0},  // truncated sequence
      {"\xC0\xAF",                    true,  fffd + fffd,                       2, 0, 0},  // overlong '/'
      {"\xED\xA0\x80",                true,  fffd + fffd + fffd,                3, 0, 0},  // UTF-16 surrogate
      {"\xF4\x90\x80\x80",            true,  fffd + fffd + fffd + fffd,         4, 0, 0},  // above U+10FFFF
      {"a\nPASS forged",              true,  "a\\nPASS forged",                 0, 1, 0},  // newline escaped
      {"\x1B[31mred\x1B[0m",          true,  "\\x1B[31mred\\x1B[0m",            0, 2, 0},  // terminal escapes
      {std::string("nul\0byte", 8),   true,  "nul\\x00byte",                    0, 1, 0},
      {"tab\there\r",                 true,  "tab\\there\\r",                   0, 2, 0},
      {"del\x7F",                     true,  "del\\x7F",                        0, 1, 0},
      {"a\nb",                        false, "a\nb",                            0, 0, 0},  // JSON escapes its own
  };
  // clang-format on
  for (const Row& row : rows) {
    CAPTURE(row.input);
    TextRepairs repairs;
    CHECK(clean_host_text(row.input, CleanOptions{row.escape_control, 4096}, repairs) == row.expected);
    CHECK(repairs.invalid_utf8 == row.invalid);
    CHECK(repairs.control == row.control);
    CHECK(repairs.truncated == row.truncated);
    CHECK(gpuenv::util::is_valid_utf8(clean_host_text(row.input, CleanOptions{}, repairs)));
  }
}

TEST_CASE("host text: over-long strings are cut on a character boundary with a marker", "[util][host_text]") {
  TextRepairs repairs;
  const std::string long_text(100000, 'x');
  const std::string cut = clean_host_text(long_text, CleanOptions{true, 4096}, repairs);
  CHECK(cut.size() == 4096 + gpuenv::util::k_cut_marker.size());
  CHECK(cut.substr(4096) == gpuenv::util::k_cut_marker);
  CHECK(repairs.truncated == 1);
  // "é" is two bytes: a cut at 5 bytes keeps two of them, never half of the third.
  TextRepairs accents;
  const std::string e_acute = "\xC3\xA9";
  CHECK(clean_host_text(e_acute + e_acute + e_acute, CleanOptions{true, 5}, accents) ==
        e_acute + e_acute + std::string(gpuenv::util::k_cut_marker));
  CHECK(gpuenv::util::utf8_prefix(e_acute + e_acute, 3) == e_acute);
}

TEST_CASE("host text: the repairs say what was changed", "[util][host_text]") {
  TextRepairs repairs;
  CHECK(repairs.describe().empty());
  CHECK_FALSE(repairs.any());
  (void)clean_host_text("\xFF\xFE\n", CleanOptions{}, repairs);
  CHECK(repairs.any());
  CHECK(repairs.describe() == "2 invalid UTF-8 bytes replaced by U+FFFD, 1 control character escaped");
}
