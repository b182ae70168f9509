// deploy/grafana/gpuenv-fleet.json: a dashboard Grafana can import (valid JSON, panels with unique ids, a grid
// position and PromQL targets on the ${DS_PROMETHEUS} input), whose every expression names only metrics that
// `doctor --prometheus` declares, and which covers readiness, findings, Xids and the smoke rates.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "cli/doctor_output.hpp"
#include "fleet/fleet_support.hpp"

namespace {

using namespace gpuenv::testing::fleet;

/// Every metric family the renderer declares, whatever the node: families are declared even without samples.
std::set<std::string> rendered_names() {
  const std::string text = gpuenv::cli::doctor_prometheus(gpuenv::doctor::DoctorReport{}, "0", 0);
  std::set<std::string> names;
  const std::regex type_line(R"(^# TYPE (\S+) gauge$)", std::regex::multiline);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), type_line); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

}  // namespace

TEST_CASE("grafana: the dashboard is importable and queries only metrics doctor writes", "[fleet][grafana]") {
  const auto dashboard = nlohmann::json::parse(
      read_text(std::string(GPUENV_SOURCE_DIR) + "/deploy/grafana/gpuenv-fleet.json"), nullptr, false);
  REQUIRE_FALSE(dashboard.is_discarded());
  CHECK(dashboard.at("uid") == "gpuenv-fleet");
  CHECK(dashboard.at("__inputs").at(0).at("name") == "DS_PROMETHEUS");
  const auto names = rendered_names();
  REQUIRE(names.size() >= 15);

  std::set<int> ids;
  std::set<std::string> used;
  const std::regex metric(R"(\bgpuenv_[a-z_]+)");
  for (const auto& panel : dashboard.at("panels")) {
    INFO(panel.at("title"));
    CHECK(ids.insert(panel.at("id").get<int>()).second);
    CHECK(panel.at("gridPos").at("w").get<int>() > 0);
    CHECK(panel.at("datasource").at("uid") == "${DS_PROMETHEUS}");
    REQUIRE_FALSE(panel.at("targets").empty());
    for (const auto& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      INFO(expr);
      bool names_one = false;
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric); it != std::sregex_iterator(); ++it) {
        CHECK(names.count(it->str()) == 1);
        used.insert(it->str());
        names_one = true;
      }
      CHECK(names_one);
    }
  }
  for (const char* needed :
       {"gpuenv_doctor_ready", "gpuenv_finding_status", "gpuenv_xid_events", "gpuenv_smoke_bandwidth_bytes_per_second",
        "gpuenv_smoke_matmul_flops_per_second", "gpuenv_doctor_last_run_timestamp_seconds"})
    CHECK(used.count(needed) == 1);
  WARN("grafana: " << ids.size() << " panels, " << used.size() << " of " << names.size() << " metrics used");
}
