// Inputs the data-rows fuzz target (tests/fuzz/data_rows_fuzz.cpp) runs into: toml++ 3.3 reached
// __builtin_unreachable() on some non-ASCII code points where it looks for whitespace (upstream
// marzer/tomlplusplus issue 190). The ASan+UBSan preset stops on these without the fix in
// cmake/include/gpuenv_toml_config.hpp.

#include <catch2/catch.hpp>

#include "util/toml_rows.hpp"

using gpuenv::util::TomlFile;
using gpuenv::util::TomlRow;

TEST_CASE("TomlFile: a line-ending backslash before a non-ASCII letter keeps the letter", "[util]") {
  // A multi-line basic string whose line ends in "\": the whitespace after it is trimmed, "§" (U+00A7) is not.
  auto file = TomlFile::parse("[t]\ns = \"\"\"\\\n\xc2\xa7\"\"\"\n", "data.toml");
  REQUIRE(file);
  std::string value;
  REQUIRE(file->read_table("t", [&value](TomlRow& row) { value = row.text("s"); }));
  CHECK(value == "\xc2\xa7");
}

TEST_CASE("TomlFile: a non-ASCII letter outside strings is a parse error naming the file and line", "[util]") {
  auto file = TomlFile::parse("a = 1\nb = 2 \xd0\x96\n", "data.toml");
  REQUIRE_FALSE(file);
  CHECK(file.error().message.rfind("data.toml:2", 0) == 0);
}
