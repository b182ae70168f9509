// Inputs the profile fuzz target (tests/fuzz/profile_fuzz.cpp) found. Each was undefined behaviour inside toml++ 3.3
// (its whitespace table reached __builtin_unreachable() on some non-ASCII code points): the ASan+UBSan preset stops
// on it without the fix in cmake/include/gpuenv_toml_config.hpp; with it, each is an ordinary parse error or value.

#include <catch2/catch.hpp>
#include <string>

#include "profile/parser.hpp"
#include "support/minimal_profile.hpp"

using gpuenv::profile::parse_profile;

namespace {

const std::string k_minimal_profile = gpuenv::testing::minimal_profile();

}  // namespace

TEST_CASE("non-ASCII letters where TOML expects whitespace are a parse error with line:column", "[profile][parser]") {
  // The fuzzer's input, reduced: a float cut by "Ƣ" (U+01A2) inside a matrix axis.
  auto axis = parse_profile(k_minimal_profile + "[matrix]\n\"cuda.version\" = [3.10, 3.1\xc6\xa2\n", "t.toml");
  REQUIRE_FALSE(axis);
  CHECK(axis.error().kind == gpuenv::util::ErrorKind::input);
  CHECK(axis.error().message.rfind("t.toml:9:", 0) == 0);
  // Latin-1, Cyrillic and CJK punctuation at the start of a line and after a value.
  for (const char* text : {"\xc3\xa9 = 1\n", "name2 = \"x\" \xd0\x96\n", "\xe3\x80\x82\n", "\xef\xb9\x90 = 1\n"}) {
    auto parsed = parse_profile(k_minimal_profile + text, "t.toml");
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().message.rfind("t.toml:8:", 0) == 0);
  }
}

TEST_CASE("the same characters in comments and strings are still valid TOML", "[profile][parser]") {
  auto parsed =
      parse_profile("# caf\xc3\xa9 \xc2\xa7 \xd0\x96 \xe3\x80\x82\n" + k_minimal_profile + "# \xc6\xa2\n", "t.toml");
  REQUIRE(parsed);
  CHECK(parsed->base.name == "t");
}
