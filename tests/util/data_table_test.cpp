// util::read_data_table and TomlFile::merge: how overlay rows add to and replace a built-in table, where each row
// says it came from, and the file:line of every overlay error.

#include "util/data_table.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace {

using gpuenv::util::DataTable;
using gpuenv::util::ErrorKind;
using gpuenv::util::Overlay;
using gpuenv::util::TomlRow;

constexpr const char* k_builtin = R"(as_of = "2026-01-01"

[limits]
max = 10
min = 1

[[release]]
version = "1.0"
note = "built-in one"

[[release]]
version = "2.0"
note = "built-in two"

[[tag]]
name = "x"
)";

const DataTable k_table{"demo.toml", {"demo.toml", k_builtin}, {{"release", {"version"}}}};

/// (version, note, origin) of each [[release]] row of the merged table.
struct Row {
  std::string version;
  std::string note;
  std::string origin;
};

std::vector<Row> releases(const Overlay& overlay) {
  auto file = gpuenv::util::read_data_table(k_table, overlay);
  REQUIRE(file);
  std::vector<Row> out;
  auto read = file->read_rows("release", [&out](TomlRow& row) {
    out.push_back({row.text("version"), row.text("note"), row.origin()});
  });
  REQUIRE(read);
  return out;
}

}  // namespace

TEST_CASE("data overlay: a row with a new key is appended, the same key replaces", "[util][data_table]") {
  const Overlay overlay = {{"demo.toml", "/etc/gpuenv/data.d/demo.toml",
                            "[[release]]\nversion = \"2.0\"\nnote = \"replaced\"\n\n"
                            "[[release]]\nversion = \"3.0\"\nnote = \"added\"\n"}};
  const std::vector<Row> rows = releases(overlay);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].note == "built-in one");
  CHECK(rows[0].origin.empty());
  CHECK(rows[1].version == "2.0");
  CHECK(rows[1].note == "replaced");
  CHECK(rows[1].origin == "overlay /etc/gpuenv/data.d/demo.toml:1");
  CHECK(rows[2].note == "added");
  CHECK(rows[2].origin == "overlay /etc/gpuenv/data.d/demo.toml:5");
}

TEST_CASE("data overlay: later files win over earlier ones for the same key", "[util][data_table]") {
  const Overlay overlay = {
      {"demo.toml", "/etc/gpuenv/data.d/demo.toml", "[[release]]\nversion = \"3.0\"\nnote = \"etc\"\n"},
      {"demo.toml", "/env/demo.toml", "[[release]]\nversion = \"3.0\"\nnote = \"env\"\n"},
      {"other.toml", "/env/other.toml", "not toml at all ["}};
  const std::vector<Row> rows = releases(overlay);
  REQUIRE(rows.size() == 3);
  CHECK(rows[2].note == "env");
  CHECK(rows[2].origin == "overlay /env/demo.toml:1");
}

TEST_CASE("data overlay: [table] keys replace one by one, as_of keeps the later date", "[util][data_table]") {
  const Overlay overlay = {{"demo.toml", "/d/demo.toml", "as_of = \"2025-06-01\"\n[limits]\nmax = 20\n"}};
  auto file = gpuenv::util::read_data_table(k_table, overlay);
  REQUIRE(file);
  long long max = 0;
  long long min = 0;
  REQUIRE(file->read_table("limits", [&](TomlRow& row) {
    max = row.integer("max");
    min = row.integer("min");
  }));
  CHECK(max == 20);
  CHECK(min == 1);
  CHECK(*file->top_level_text("as_of") == "2026-01-01");
  const Overlay newer = {{"demo.toml", "/d/demo.toml", "as_of = \"2026-12-01\"\n"}};
  CHECK(*gpuenv::util::read_data_table(k_table, newer)->top_level_text("as_of") == "2026-12-01");
}

TEST_CASE("data overlay: an array without a key only appends", "[util][data_table]") {
  const Overlay overlay = {{"demo.toml", "/d/demo.toml", "[[tag]]\nname = \"x\"\n"}};
  auto file = gpuenv::util::read_data_table(k_table, overlay);
  REQUIRE(file);
  int count = 0;
  REQUIRE(file->read_rows("tag", [&count](TomlRow& row) {
    row.text("name");
    ++count;
  }));
  CHECK(count == 2);
}

TEST_CASE("data overlay: every error names the overlay file and line, as bad input", "[util][data_table]") {
  struct Case {
    const char* what;
    const char* text;
    const char* excerpt;
  };
  const std::vector<Case> cases = {
      {"not TOML", "[[release]]\nversion = \n", "/d/demo.toml:2:"},
      {"an unknown top-level table", "\n[[relase]]\nversion = \"3\"\n", "/d/demo.toml:2: unexpected key `relase`"},
      {"rows where the table has a [table]", "[[limits]]\nmax = 1\n", "/d/demo.toml:1: `limits` must be a [limits]"},
      {"a [table] where the table has rows", "[release]\nversion = \"3\"\n", "/d/demo.toml:1: `release` must be rows"},
      {"a key [limits] does not have", "[limits]\nmaxx = 1\n", "/d/demo.toml:2: [limits] has no key `maxx`"},
      {"as_of not a string", "as_of = 2026\n", "/d/demo.toml:1: `as_of` must be a date"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto file = gpuenv::util::read_data_table(k_table, {{"demo.toml", "/d/demo.toml", c.text}});
    REQUIRE_FALSE(file);
    CHECK(file.error().kind == ErrorKind::input);
    CHECK_THAT(file.error().message, Catch::Contains(c.excerpt));
    CHECK_FALSE(file.error().remedy.empty());
  }
}

TEST_CASE("data overlay: a bad overlay row is input naming file:line, a bad built-in row is internal",
          "[util][data_table]") {
  const Overlay overlay = {
      {"demo.toml", "/d/demo.toml", "\n\n[[release]]\nversion = \"3.0\"\nnote = \"n\"\nextra = 1\n"}};
  auto file = gpuenv::util::read_data_table(k_table, overlay);
  REQUIRE(file);
  auto read = file->read_rows("release", [](TomlRow& row) {
    row.text("version");
    row.text("note");
  });
  REQUIRE_FALSE(read);
  CHECK(read.error().kind == ErrorKind::input);
  CHECK_THAT(read.error().message, Catch::Contains("/d/demo.toml:3: [[release]]: unexpected key `extra`"));
  auto builtin = gpuenv::util::read_data_table(k_table, {});
  REQUIRE(builtin);
  auto strict = builtin->read_rows("release", [](TomlRow& row) { row.text("version"); });
  REQUIRE_FALSE(strict);
  CHECK(strict.error().kind == ErrorKind::internal);
  CHECK_THAT(strict.error().message, Catch::Contains("demo.toml: [[release]] #1 (line 7)"));
}

TEST_CASE("data overlay: a bad value in a [table] is named at the overlay's line", "[util][data_table]") {
  auto file = gpuenv::util::read_data_table(k_table, {{"demo.toml", "/d/demo.toml", "\n[limits]\nmax = \"ten\"\n"}});
  REQUIRE(file);
  auto read = file->read_table("limits", [](TomlRow& row) {
    row.integer("max");
    row.integer("min");
  });
  REQUIRE_FALSE(read);
  CHECK(read.error().kind == ErrorKind::input);
  CHECK_THAT(read.error().message, Catch::Contains("/d/demo.toml:3: [limits]: `max` must be an integer"));
}

TEST_CASE("data overlay: the merged table prints as TOML and JSON, overlay rows marked", "[util][data_table]") {
  const Overlay overlay = {{"demo.toml", "/d/demo.toml", "[[release]]\nversion = \"3.0\"\nnote = \"a \\\"q\\\"\"\n"}};
  auto file = gpuenv::util::read_data_table(k_table, overlay);
  REQUIRE(file);
  const std::string toml = file->to_toml();  // keys in name order: toml++ keeps no file order
  CHECK_THAT(toml, Catch::Contains("as_of = \"2026-01-01\""));
  CHECK_THAT(toml, Catch::Contains("[limits]\nmax = 10\n"));
  CHECK_THAT(toml,
             Catch::Contains("# from overlay /d/demo.toml:1\n[[release]]\nnote = \"a \\\"q\\\"\"\nversion = \"3.0\""));
  // The printed table reads back to the same rows.
  auto reread = gpuenv::util::TomlFile::parse(toml, "printed.toml");
  REQUIRE(reread);
  int rows = 0;
  REQUIRE(reread->read_rows("release", [&rows](TomlRow& row) {
    row.text("version");
    row.text("note");
    ++rows;
  }));
  CHECK(rows == 3);
  const std::string json = file->to_json();
  CHECK_THAT(json,
             Catch::Contains("{\"note\": \"a \\\"q\\\"\", \"version\": \"3.0\", \"overlay\": \"/d/demo.toml:1\"}"));
  CHECK_THAT(json, Catch::Contains("\"limits\": {\"max\": 10, \"min\": 1}"));
}
