#include "util/toml_rows.hpp"

#include <catch2/catch.hpp>

using gpuenv::util::TomlFile;
using gpuenv::util::TomlRow;

namespace {

/// What the test schema reads from one [[row]].
struct Item {
  std::string name;
  std::string kind;
  std::vector<std::string> os;
  std::vector<std::string> tags;
  std::string note;
  std::optional<gpuenv::util::Version> since;
  std::optional<double> size;
  long long count = 0;
};

/// The schema: name, kind (a|b), os and count required; tags, note, since and size optional.
Item read_item(TomlRow& row) {
  return Item{row.text("name"),
              row.one_of("kind", {"a", "b"}),
              row.texts("os"),
              row.optional_texts("tags"),
              row.optional_text("note"),
              row.optional_version("since"),
              row.optional_number("size"),
              row.integer_in("count", 1, 9, "from 1 to 9")};
}

gpuenv::util::Expected<std::vector<Item>> read_items(std::string_view text) {
  auto file = TomlFile::parse(text, "items.toml");
  if (!file) return file.error();
  std::vector<Item> items;
  if (auto read = file->append_rows("row", items, read_item); !read) return read.error();
  return items;
}

constexpr const char* good_row = "[[row]]\nname = \"n\"\nkind = \"a\"\nos = [\"ubuntu\"]\ncount = 1\n";

}  // namespace

TEST_CASE("TomlFile rows: bad data is an internal Error naming the file, the row, its line and the key", "[util]") {
  struct Case {
    const char* what;
    std::string text;
    const char* message;  ///< part of the error
  };
  const std::string good = good_row;
  const Case cases[] = {
      {"unknown key", good + "colour = \"red\"\n", "items.toml: [[row]] #1 (line 1): unexpected key `colour`"},
      {"unknown key in the second row", good + "\n" + good + "typo = 1\n",
       "items.toml: [[row]] #2 (line 7): unexpected key `typo`"},
      {"missing string", "[[row]]\nkind = \"a\"\nos = []\ncount = 1\n", "#1 (line 1): missing `name`"},
      {"missing string array", "[[row]]\nname = \"n\"\nkind = \"a\"\ncount = 1\n", "missing `os`"},
      {"missing integer", "[[row]]\nname = \"n\"\nkind = \"a\"\nos = []\n", "`count` must be from 1 to 9"},
      {"string of another type", "[[row]]\nname = 1\nkind = \"a\"\nos = []\ncount = 1\n", "`name` must be a string"},
      {"array of another type", "[[row]]\nname = \"n\"\nkind = \"a\"\nos = \"ubuntu\"\ncount = 1\n",
       "`os` must be an array of strings"},
      {"array holding another type", "[[row]]\nname = \"n\"\nkind = \"a\"\nos = [1]\ncount = 1\n",
       "`os` must hold strings"},
      {"integer of another type", "[[row]]\nname = \"n\"\nkind = \"a\"\nos = []\ncount = \"1\"\n",
       "`count` must be from 1 to 9"},
      {"integer out of range", "[[row]]\nname = \"n\"\nkind = \"a\"\nos = []\ncount = 10\n",
       "`count` must be from 1 to 9"},
      {"number of another type", good + "size = \"big\"\n", "`size` must be a number"},
      {"not a version", good + "since = \"1.x\"\n", "`since` = \"1.x\" is not a version"},
      {"not one of", "[[row]]\nname = \"n\"\nkind = \"c\"\nos = []\ncount = 1\n", "`kind` must be a or b"},
      {"the first problem wins", "[[row]]\nname = 1\nkind = \"c\"\n", "`name` must be a string"},
      {"rows not tables", "row = [1, 2]\n", "items.toml: `row` must be an array of tables"},
      {"rows not an array", "row = \"x\"\n", "items.toml: `row` must be an array of tables"},
      {"TOML syntax", "[[row]]\nname = \n", "items.toml:2: "},
  };
  for (const Case& c : cases) {
    INFO(c.what << "\n" << c.text);
    const auto items = read_items(c.text);
    REQUIRE_FALSE(items.has_value());
    CHECK(items.error().kind == gpuenv::util::ErrorKind::internal);
    CHECK_THAT(items.error().message, Catch::Contains(c.message));
  }
}

TEST_CASE("TomlFile rows: optional keys may be absent, string arrays keep their order", "[util]") {
  struct Case {
    const char* what;
    std::string text;
    std::vector<std::string> os;
    std::vector<std::string> tags;
    std::string note;
    std::optional<std::string> since;
    std::optional<double> size;
  };
  const std::string good = good_row;
  const Case cases[] = {
      {"all optional keys absent", good, {"ubuntu"}, {}, "", std::nullopt, std::nullopt},
      {"empty arrays",
       "[[row]]\nname = \"n\"\nkind = \"b\"\nos = []\ntags = []\ncount = 2\n",
       {},
       {},
       "",
       std::nullopt,
       std::nullopt},
      {"arrays in order",
       "[[row]]\nname = \"n\"\nkind = \"a\"\nos = [\"b\", \"a\"]\ntags = [\"x\", \"y\", \"z\"]\ncount = 9\n",
       {"b", "a"},
       {"x", "y", "z"},
       "",
       std::nullopt,
       std::nullopt},
      {"optional keys present",
       good + "note = \"why\"\nsince = \"12.4\"\nsize = 2.5\n",
       {"ubuntu"},
       {},
       "why",
       "12.4",
       2.5},
      {"an empty version is absent", good + "since = \"\"\n", {"ubuntu"}, {}, "", std::nullopt, std::nullopt},
      {"an integer is a number", good + "size = 3\n", {"ubuntu"}, {}, "", std::nullopt, 3.0},
  };
  for (const Case& c : cases) {
    INFO(c.what << "\n" << c.text);
    const auto items = read_items(c.text);
    INFO((items ? std::string() : items.error().message));
    REQUIRE(items.has_value());
    REQUIRE(items->size() == 1);
    const Item& item = items->front();
    CHECK(item.name == "n");
    CHECK(item.os == c.os);
    CHECK(item.tags == c.tags);
    CHECK(item.note == c.note);
    CHECK(item.since.has_value() == c.since.has_value());
    if (item.since && c.since) CHECK(item.since->str() == *c.since);
    CHECK(item.size == c.size);
  }
}

TEST_CASE("TomlFile rows: an absent array is no rows, present rows come in file order", "[util]") {
  const auto none = read_items("");
  REQUIRE(none.has_value());
  CHECK(none->empty());
  const auto two =
      read_items(std::string(good_row) + "\n" + "[[row]]\nname = \"m\"\nkind = \"b\"\nos = []\ncount = 3\n");
  REQUIRE(two.has_value());
  REQUIRE(two->size() == 2);
  CHECK(two->at(0).name == "n");
  CHECK(two->at(1).name == "m");
  CHECK(two->at(1).kind == "b");
  CHECK(two->at(1).count == 3);
}

TEST_CASE("TomlFile tables and top-level keys", "[util]") {
  auto file = TomlFile::parse("title = \"t\"\n\n[meta]\nversion = \"1.2\"\nflag = true\nextra = 1\n", "meta.toml");
  REQUIRE(file.has_value());
  CHECK(file->contains("meta"));
  CHECK_FALSE(file->contains("other"));
  CHECK(file->unexpected_key({"title", "meta"}) == std::nullopt);
  CHECK(file->unexpected_key({"meta"}) == "title");

  std::string version;
  bool flag = false;
  std::vector<std::string> unread;
  const auto read = file->read_table("meta", [&](TomlRow& row) {
    version = row.version("version").str();
    flag = row.boolean("flag");
    unread = row.unread_keys();
  });
  REQUIRE_FALSE(read.has_value());
  CHECK(version == "1.2");
  CHECK(flag);
  CHECK(unread == std::vector<std::string>{"extra"});
  CHECK_THAT(read.error().message, Catch::Contains("meta.toml: [meta] (line 3): unexpected key `extra`"));

  CHECK(file->read_table("absent", [](TomlRow& row) { row.fail("not called"); }).has_value());
  const auto not_a_table = file->read_table("title", [](TomlRow&) {});
  REQUIRE_FALSE(not_a_table.has_value());
  CHECK_THAT(not_a_table.error().message, Catch::Contains("meta.toml: `title` must be a table"));
}

TEST_CASE("TomlRow: a caller's own check fails the row unless an earlier read did", "[util]") {
  auto file = TomlFile::parse("[[row]]\nflag = \"yes\"\n[[row]]\nflag = true\n", "f.toml");
  REQUIRE(file.has_value());
  const auto read = file->read_rows("row", [](TomlRow& row) {
    row.boolean("flag");
    row.fail("the caller's check");
  });
  REQUIRE_FALSE(read.has_value());
  CHECK_THAT(read.error().message, Catch::Contains("f.toml: [[row]] #1 (line 1): `flag` must be true or false"));
  const auto second = TomlFile::parse("[[row]]\nflag = true\n", "f.toml")->read_rows("row", [](TomlRow& row) {
    row.boolean("flag");
    row.fail("the caller's check");
  });
  REQUIRE_FALSE(second.has_value());
  CHECK_THAT(second.error().message, Catch::Contains("f.toml: [[row]] #1 (line 1): the caller's check"));
}
