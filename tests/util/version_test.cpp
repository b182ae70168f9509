#include "util/version.hpp"

#include <catch2/catch.hpp>

#include "util/strings.hpp"

using gpuenv::util::Version;

TEST_CASE("Version parses dotted numbers and refuses anything else", "[util]") {
  struct Row {
    const char* text;
    bool valid;
  };
  const Row rows[] = {{"12", true},     {"12.4", true},   {"12.4.1", true}, {"8.9.7.29", true}, {"535.54.03", true},
                      {"", false},      {"12.", false},   {".4", false},    {"12..4", false},   {"12.4.1.2.3", false},
                      {"v12.4", false}, {"12.4a", false}, {"-1", false},    {"12 .4", false}};
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK(Version::parse(row.text).has_value() == row.valid);
  }
}

TEST_CASE("Version compares numerically, padding with zeros, and keeps its spelling", "[util]") {
  CHECK(*Version::parse("12.10") > *Version::parse("12.9"));
  CHECK(*Version::parse("550.54.15") > *Version::parse("550.54.14"));
  CHECK(*Version::parse("12.4") == *Version::parse("12.4.0"));
  CHECK(*Version::parse("9") < *Version::parse("9.1"));
  CHECK(Version::parse("535.54.03")->str() == "535.54.03");
  CHECK(Version::parse("12.4.1")->truncated(2).str() == "12.4");
  CHECK(Version::parse("9.1.0")->starts_with(*Version::parse("9")));
  CHECK_FALSE(Version::parse("9.1.0")->starts_with(*Version::parse("9.10")));
}

// Issue 25, rule 2: a version is compared at the precision it is written with ("580.65" is the 580.65 line), so a
// driver written "580.65" meets the 13.x floor 580.65.06; both sides of the edge, and a full version compared fully.
TEST_CASE("Version::at_least_as_written compares at the written precision", "[util]") {
  struct Row {
    const char* written;
    const char* floor;
    bool meets;
  };
  const Row rows[] = {
      {"580.65", "580.65.06", true},      {"580.64", "580.65.06", false},    {"580.66", "580.65.06", true},
      {"580.65.06", "580.65.06", true},   {"580.65.05", "580.65.06", false}, {"580.65.07", "580.65.06", true},
      {"580", "580.65.06", true},         {"575", "580.65.06", false},       {"570.26", "570.26", true},
      {"570.124.06", "575.51.03", false}, {"12.4", "12.4.1", true},          {"12.3", "12.4.1", false},
      {"12.4.0", "12.4.1", false},        {"13.0.2", "13.0", true},
  };
  for (const Row& row : rows) {
    INFO(row.written << " vs " << row.floor);
    CHECK(Version::parse(row.written)->at_least_as_written(*Version::parse(row.floor)) == row.meets);
  }
}

TEST_CASE("closest_match suggests plausible typos only", "[util]") {
  const std::vector<std::string> keys = {"version", "distro", "flavor"};
  CHECK(gpuenv::util::closest_match("verison", keys) == "version");
  CHECK(gpuenv::util::closest_match("distr", keys) == "distro");
  CHECK_FALSE(gpuenv::util::closest_match("completely-different", keys).has_value());
}

TEST_CASE("split_lines accepts LF and CRLF", "[util]") {
  const auto lines = gpuenv::util::split_lines("a\r\nb\nc\n");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "a");
  CHECK(lines[1] == "b");
  CHECK(lines[2] == "c");
}
