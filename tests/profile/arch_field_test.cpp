// [os] arch (issue 25, rule 4): x86_64 | arm64, default x86_64; a --set field and a matrix axis like any other.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "profile/matrix.hpp"
#include "profile/parser.hpp"
#include "profile/profile.hpp"

using gpuenv::profile::effective_arch;
using gpuenv::profile::parse_profile;

namespace {

const std::string k_base = R"(schema = 1
name = "t"
[os]
distro = "ubuntu"
version = "22.04"
)";
const std::string k_cuda = "[cuda]\nversion = \"12.8.1\"\n";

}  // namespace

TEST_CASE("os.arch is empty when absent and reads as x86_64", "[profile][arch]") {
  auto parsed = parse_profile(k_base + k_cuda, "t.toml");
  REQUIRE(parsed.has_value());
  CHECK(parsed->base.os_arch.empty());
  CHECK(effective_arch(parsed->base) == "x86_64");
}

TEST_CASE("os.arch accepts x86_64 and arm64 and refuses the rest with the fix", "[profile][arch]") {
  struct Row {
    std::string value;
    bool valid;
  };
  const Row rows[] = {{"x86_64", true}, {"arm64", true},    {"aarch64", false}, {"amd64", false},
                      {"ARM64", false}, {"ppc64le", false}, {"", false}};
  for (const Row& row : rows) {
    INFO(row.value);
    auto parsed = parse_profile(k_base + "arch = \"" + row.value + "\"\n" + k_cuda, "t.toml");
    CHECK(parsed.has_value() == row.valid);
    if (row.valid) {
      CHECK(parsed->base.os_arch == row.value);
      CHECK(effective_arch(parsed->base) == row.value);
    } else {
      CHECK(parsed.error().message == "t.toml:6:8: `os.arch` = \"" + row.value + "\" is not valid");
      CHECK(parsed.error().remedy == "write one of x86_64, arm64 (default x86_64; aarch64 is written arm64)");
    }
  }
}

TEST_CASE("os.arch is a matrix axis and a --set field", "[profile][arch][matrix]") {
  auto parsed = parse_profile(k_base + k_cuda + "[matrix]\n\"os.arch\" = [\"x86_64\", \"arm64\"]\n", "t.toml");
  REQUIRE(parsed.has_value());
  const auto cells = gpuenv::profile::expand_matrix(*parsed);
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].label() == "os.arch=x86_64");
  CHECK(cells[1].label() == "os.arch=arm64");
  CHECK(effective_arch(cells[1].profile) == "arm64");
  CHECK(gpuenv::profile::select_cells(cells, {{"os.arch", "arm64"}}).size() == 1);

  auto bad_axis = parse_profile(k_base + k_cuda + "[matrix]\n\"os.arch\" = [\"aarch64\"]\n", "t.toml");
  REQUIRE_FALSE(bad_axis.has_value());
  CHECK(bad_axis.error().message.find("`os.arch` = \"aarch64\" is not valid") != std::string::npos);

  auto set = gpuenv::profile::parse_assignments({"os.arch=arm64"});
  REQUIRE(set.has_value());
  auto applied = gpuenv::profile::apply_overrides(parsed->base, *set);
  REQUIRE(applied.has_value());
  CHECK(applied->os_arch == "arm64");
  CHECK_FALSE(gpuenv::profile::parse_assignments({"os.arch=aarch64"}).has_value());
}
