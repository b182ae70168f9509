// `--expect` / `--minimum ID=VALUE`: a positive decimal VALUE for a judged metric id, anything else bad usage.

#include "cli/smoke_overrides.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>

using gpuenv::cli::read_smoke_overrides;
using gpuenv::smoke::MetricOverride;

TEST_CASE("read_smoke_overrides: ID=VALUE with a positive decimal value, every malformed pair bad usage", "[cli]") {
  struct Row {
    const char* pair;
    std::optional<double> value;  // nullopt: a usage error
  };
  const Row rows[] = {
      {"h2d_pinned=24", 24.0},           {"d2d=1500.5", 1500.5},          {"gemm_bf16=1e3", 1000.0},
      {"h2d_pinned=fast", std::nullopt}, {"h2d_pinned=", std::nullopt},   {"h2d_pinned", std::nullopt},
      {"h2d_pinned=0", std::nullopt},    {"h2d_pinned=-1", std::nullopt}, {"h2d_pinned=24x", std::nullopt},
      {"h2d_pinned=inf", std::nullopt},   // std::strtod read an infinite floor
      {"h2d_pinned=0x18", std::nullopt},  // std::strtod read hexadecimal 24
      {"warp_speed=9", std::nullopt},
  };
  for (const Row& row : rows) {
    INFO(row.pair);
    std::map<std::string, MetricOverride> overrides;
    const auto read = read_smoke_overrides({row.pair}, "--minimum", true, overrides);
    REQUIRE(static_cast<bool>(read) == row.value.has_value());
    if (!row.value) {
      CHECK(read.error().message.find(std::string("--minimum ") + row.pair + ": expected ID=VALUE") == 0);
      CHECK(overrides.empty());
      continue;
    }
    const std::string id = std::string(row.pair).substr(0, std::string(row.pair).find('='));
    CHECK(overrides.at(id).minimum == row.value);
    CHECK_FALSE(overrides.at(id).expected);
  }
}
