// Hostile values in profiles (issue 16 item 5): shell metacharacters, newlines, NUL bytes, very long strings,
// unicode look-alikes, huge matrices and deep nesting. Each is a clear error (file:line, field, fix) in bounded time.

#include <catch2/catch.hpp>
#include <string>

#include "profile/fields.hpp"
#include "profile/key_depth.hpp"
#include "profile/matrix.hpp"
#include "profile/parser.hpp"

namespace {

using gpuenv::profile::parse_profile;

const std::string k_hostile_base = R"(schema = 1
name = "hostile"
description = "base"
[os]
distro = "ubuntu"
version = "22.04"
[cuda]
version = "12.4.1"
)";

/// The base profile with `line` replaced by `replacement` (or appended when `line` is empty).
std::string with(const std::string& line, const std::string& replacement) {
  std::string text = k_hostile_base;
  if (line.empty()) return text + replacement + "\n";
  const std::size_t at = text.find(line);
  REQUIRE(at != std::string::npos);
  return text.replace(at, line.size(), replacement);
}

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("hostile field values are refused with file:line, the field and a fix", "[profile][hostile]") {
  REQUIRE(parse_profile(k_hostile_base, "t.toml"));
  struct Row {
    const char* line;         // the base line to replace ("" appends)
    std::string replacement;  // TOML text
    const char* excerpt;      // part of the message
  };
  // clang-format off
  const Row rows[] = {
      {"name = \"hostile\"",   "name = \"x; rm -rf /\"",                  "t.toml:2:8: `name` = \"x; rm -rf /\" is not valid"},
      {"name = \"hostile\"",   "name = \"$(id)\"",                        "`name` = \"$(id)\" is not valid"},
      {"name = \"hostile\"",   "name = \"cud\xD0\xB0\"",                  "`name` = \"cud\xD0\xB0\" is not valid"},  // Cyrillic a
      {"distro = \"ubuntu\"",  "distro = \"\xD1\x83" "buntu\"",              "t.toml:5:10: `os.distro`"},              // Cyrillic u
      {"distro = \"ubuntu\"",  "distro = \"ubuntu\\u0000\"",              "`os.distro`"},
      {"version = \"12.4.1\"", "version = \"12.4.1\\nRUN id\"",           "t.toml:8:11: `cuda.version`"},
      {"version = \"12.4.1\"", "version = \"12.4.1`id`\"",                "`cuda.version`"},
      {"version = \"12.4.1\"", "version = \"12\xEF\xBC\x8E" "4.1\"",      "`cuda.version`"},  // fullwidth full stop
      {"description = \"base\"", "description = \"one\\nRUN curl x | sh\"", "t.toml:3:15: `description`"},
      {"description = \"base\"", "description = \"a\\u0000b\"",             "control character (U+0000) at byte 1"},
      {"description = \"base\"", "description = \"\\u001b[2J\"",            "control character (U+001B) at byte 0"},
      {"description = \"base\"", "description = \"" + std::string(5000, 'x') + "\"", "it is 5000 bytes; at most 1024"},
      {"",                     "[mirrors]\npypi = \"https://m.example/$(id)\"", "`mirrors.pypi`"},
      {"",                     "[mirrors]\npypi = \"https://m.example/\\nx\"",  "`mirrors.pypi`"},
      {"",                     "[mirrors]\nregistry = \"r.example/a b\"",      "`mirrors.registry`"},
  };
  // clang-format on
  for (const Row& row : rows) {
    const std::string text = with(row.line, row.replacement);
    CAPTURE(text);
    auto parsed = parse_profile(text, "t.toml");
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().kind == gpuenv::util::ErrorKind::input);
    CHECK(mentions(parsed.error().message, row.excerpt));
    CHECK_FALSE(parsed.error().remedy.empty());
    // The message quotes at most 80 bytes of the value.
    CHECK(parsed.error().message.size() < 400);
  }
}

TEST_CASE("a description with shell metacharacters and look-alikes is accepted as text", "[profile][hostile]") {
  auto parsed = parse_profile(
      with("description = \"base\"", "description = \"$(id) `id` ' \\\" ; | & \xEF\xBC\x84HOME \\\\\""), "t.toml");
  REQUIRE(parsed);
  CHECK(parsed->base.description == "$(id) `id` ' \" ; | & \xEF\xBC\x84HOME \\");
}

TEST_CASE("a matrix over the cell limit is refused before a cell is made", "[profile][hostile][limits]") {
  const auto values = [](int count) {
    std::string out = "[";
    for (int i = 0; i < count; ++i) out += (i ? ",\"3." : "\"3.") + std::to_string(i) + "\"";
    return out + "]";
  };
  struct Row {
    std::string matrix;
    const char* excerpt;
  };
  std::string includes = "include = [";
  for (int i = 0; i < 1025; ++i) includes += std::string(i ? "," : "") + "{\"cudnn.version\" = \"9.1.0\"}";
  includes += "]";
  const Row rows[] = {
      {"\"framework.python\" = " + values(100000), "100000 cells or more, over the limit of 1024"},
      {"\"framework.python\" = " + values(40) + "\n\"cudnn.version\" = " + values(40), "1600 cells or more"},
      {includes, "1025 cells or more"},
  };
  for (const Row& row : rows) {
    auto parsed = parse_profile(with("", "[matrix]\n" + row.matrix), "t.toml");
    REQUIRE_FALSE(parsed);
    CHECK(mentions(parsed.error().message, "t.toml:"));
    CHECK(mentions(parsed.error().message, row.excerpt));
    CHECK(mentions(parsed.error().remedy, "split the matrix"));
  }
  // At the limit: 32 x 32 = 1024 cells parse and expand.
  auto at_limit = parse_profile(
      with("", "[matrix]\n\"framework.python\" = " + values(32) + "\n\"cudnn.version\" = " + values(32)), "t.toml");
  REQUIRE(at_limit);
  CHECK(gpuenv::profile::expand_matrix(*at_limit).size() == 1024);
}

TEST_CASE("deeply nested TOML is an error, not a stack overflow", "[profile][hostile][limits]") {
  const int depth = 100000;
  const std::string arrays = "x = " + std::string(depth, '[') + std::string(depth, ']');
  std::string inline_tables = "x = ";
  for (int i = 0; i < 1000; ++i) inline_tables += "{a=";
  inline_tables += "1" + std::string(1000, '}');
  std::string header = "[";
  for (int i = 0; i < depth; ++i) header += "a.";
  header += "a]";
  for (const std::string& nested : {arrays, inline_tables, header}) {
    CAPTURE(nested.substr(0, 40));
    auto parsed = parse_profile(with("", nested), "t.toml");
    REQUIRE_FALSE(parsed);
    CHECK(mentions(parsed.error().message, "t.toml:9:"));
  }
  // The header is refused by the key depth guard (toml++ itself would overflow the stack on it).
  auto deep_header = parse_profile(with("", header), "t.toml");
  REQUIRE_FALSE(deep_header);
  CHECK(mentions(deep_header.error().message, "100001 dotted parts, over the limit of 32"));
}

TEST_CASE("the key depth guard counts dots of keys only", "[profile][hostile][limits]") {
  using gpuenv::profile::check_key_depth;
  std::string dotted = "a";
  for (int i = 0; i < 40; ++i) dotted += ".a";
  CHECK(check_key_depth("x = \"" + dotted + "\"\n", "t.toml"));  // inside a string
  CHECK(check_key_depth("x = '" + dotted + "'\n", "t.toml"));    // inside a literal string
  CHECK(check_key_depth("# " + dotted + "\n", "t.toml"));        // in a comment
  std::string floats = "x = [";
  for (int i = 0; i < 40; ++i) floats += "1.5, ";
  CHECK(check_key_depth(floats + "2.5]\n", "t.toml"));  // decimal points
  auto header = check_key_depth("schema = 1\n[" + dotted + "]\n", "t.toml");
  REQUIRE_FALSE(header);
  CHECK(mentions(header.error().message, "t.toml:2:"));
  CHECK(mentions(header.error().message, "41 dotted parts, over the limit of 32"));
  CHECK_FALSE(check_key_depth("x = {" + dotted + " = 1}\n", "t.toml"));  // dotted keys in an inline table
}

TEST_CASE("a --set description that is not UTF-8 is refused", "[profile][hostile]") {
  auto refused = gpuenv::profile::validate_field("description", "caf\xFF");
  REQUIRE_FALSE(refused);
  CHECK(mentions(refused.error().message, "it is not valid UTF-8"));
  CHECK(gpuenv::profile::validate_field("description", "caf\xC3\xA9 $(id)"));
}
