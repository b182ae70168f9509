// The install additions to schema 1: [driver] source and the [install] booleans.

#include <catch2/catch.hpp>
#include <string>

#include "profile/parser.hpp"
#include "support/minimal_profile.hpp"

using gpuenv::profile::parse_profile;

namespace {

const std::string k_install_base = gpuenv::testing::minimal_profile();

}  // namespace

TEST_CASE("install fields are empty (their defaults) when absent", "[profile][install]") {
  auto parsed = parse_profile(k_install_base, "t.toml");
  REQUIRE(parsed.has_value());
  CHECK(parsed->base.driver_source.empty());
  CHECK(parsed->base.install_container_toolkit.empty());
  CHECK(parsed->base.install_cuda_compat.empty());
}

TEST_CASE("driver.source and the [install] booleans are read", "[profile][install]") {
  auto parsed = parse_profile(k_install_base +
                                  "[driver]\nsource = \"distro\"\n[install]\ncontainer_toolkit = false\n"
                                  "cuda_compat = true\n",
                              "t.toml");
  REQUIRE(parsed.has_value());
  CHECK(parsed->base.driver_source == "distro");
  CHECK(parsed->base.install_container_toolkit == "false");
  CHECK(parsed->base.install_cuda_compat == "true");
}

TEST_CASE("install fields refuse wrong values and types with the fix", "[profile][install]") {
  auto quoted = parse_profile(k_install_base + "[install]\ncontainer_toolkit = \"yes\"\n", "t.toml");
  REQUIRE_FALSE(quoted.has_value());
  CHECK(quoted.error().message == "t.toml:9:21: `install.container_toolkit` must be true or false, not a string");
  auto source = parse_profile(k_install_base + "[driver]\nsource = \"cuda\"\n", "t.toml");
  REQUIRE_FALSE(source.has_value());
  CHECK(source.error().message.find("`driver.source` = \"cuda\" is not valid") != std::string::npos);
  auto typo = parse_profile(k_install_base + "[install]\ncontainer_tolkit = true\n", "t.toml");
  REQUIRE_FALSE(typo.has_value());
  CHECK(typo.error().message.find("did you mean `container_toolkit`") != std::string::npos);
}
