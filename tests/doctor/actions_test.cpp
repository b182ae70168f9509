// What to do about each finding: data/doctor/actions.toml (per finding id and status, cases a rule tells apart,
// "prefix.*" rows), the default for an id without a row, the Xid table's node_action, and every documented finding
// id (docs/doctor-json.md, docs/smoke.md) having a row — the ids that lack one are listed when the test fails.

#include "doctor/actions.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "support/fake_system.hpp"
#include "support/run_binary.hpp"
#include "support/source_tree.hpp"
#include "support/text_files.hpp"
#include "util/strings.hpp"

namespace {

using gpuenv::report::Action;
using gpuenv::report::Finding;
using gpuenv::report::Status;

using gpuenv::testing::k_source;

/// The finding ids a document lists: every `a.b` in the first column of the table under `heading` (doctor-json.md),
/// or every `smoke.x` anywhere (smoke.md). Patterns such as `profile.<rule>` are left out.
std::set<std::string> documented_ids(const std::string& text, const std::regex& id) {
  std::set<std::string> ids;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), id); it != std::sregex_iterator(); ++it)
    ids.insert((*it)[1].str());
  return ids;
}

std::set<std::string> doctor_json_ids() {
  const std::string text = gpuenv::testing::read_text((k_source / "docs/doctor-json.md").string());
  const std::size_t begin = text.find("## `findings[]`");
  const std::size_t end = text.find("\n## ", begin + 1);
  REQUIRE(begin != std::string::npos);
  std::set<std::string> ids;
  for (std::string_view line : gpuenv::util::split_lines(std::string_view(text).substr(begin, end - begin))) {
    if (!gpuenv::util::starts_with(line, "| `")) continue;
    const std::string first_column(line.substr(0, line.find(" |", 2)));
    for (const std::string& id : documented_ids(first_column, std::regex(R"(`([a-z_]+\.[a-z0-9_.]+)`)")))
      ids.insert(id);
  }
  return ids;
}

std::set<std::string> smoke_ids() {
  return documented_ids(gpuenv::testing::read_text((k_source / "docs/smoke.md").string()),
                        std::regex(R"(`(smoke\.[a-z0-9_]+)`)"));
}

const gpuenv::doctor::ActionTable& table() {
  const auto loaded = gpuenv::doctor::builtin_actions();
  INFO((loaded ? std::string() : loaded.error().message));
  REQUIRE(loaded);
  return **loaded;
}

nlohmann::json doctor_json(const std::string& tree, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"doctor", "--root", gpuenv::testing::fixture_path("hosts/" + tree), "--json",
                                "--quick"};
  const std::string xml = gpuenv::testing::fixture_path("hosts/" + tree + ".nvidia-smi.xml");
  if (std::filesystem::exists(xml)) args.insert(args.end(), {"--nvidia-smi-xml", xml});
  args.insert(args.end(), extra.begin(), extra.end());
  const auto run = gpuenv::testing::run_gpuenv(args);
  INFO(run.err);
  auto json = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  return json;
}

std::string action_of_id(const nlohmann::json& report, const std::string& id) {
  for (const auto& finding : report.at("findings"))
    if (finding.at("id") == id) return finding.at("action");
  return "(no finding " + id + ")";
}

}  // namespace

TEST_CASE("actions: the shipped table parses, every row has a source and an action for fail or warn",
          "[doctor][actions]") {
  const auto& rows = table().rows;
  REQUIRE(rows.size() > 50);
  for (const auto& row : rows) {
    INFO(row.id);
    CHECK_FALSE(row.source.empty());
    CHECK((row.status == "policy" || row.status == "verified" || row.status == "secondary"));
  }
}

TEST_CASE("actions: every documented finding id has a row (the ids without one are listed)", "[doctor][actions]") {
  std::set<std::string> ids = doctor_json_ids();
  const std::set<std::string> smoke = smoke_ids();
  ids.insert(smoke.begin(), smoke.end());
  REQUIRE(ids.count("gpu.ecc") == 1);  // the readers found the tables
  REQUIRE(ids.count("xid.events") == 1);
  REQUIRE(ids.count("smoke.memtest") == 1);
  std::vector<std::string> missing;
  for (const std::string& id : ids)
    if (table().find(id) == nullptr) missing.push_back(id);
  INFO(
      "finding ids without a row in data/doctor/actions.toml (they get the default: drain_and_inspect on fail, "
      "none on warn): "
      << gpuenv::util::join(missing, ", "));
  CHECK(missing.empty());
}

TEST_CASE("actions: the default without a row, pass and skip are none, data rows by status, prefixes and cases",
          "[doctor][actions]") {
  // No row: a failure takes the node out for a person, a warning changes nothing.
  CHECK(gpuenv::report::action_of({"new.check", Status::fail, "", "", ""}) == Action::drain_and_inspect);
  CHECK(gpuenv::report::action_of({"new.check", Status::warn, "", "", ""}) == Action::none);
  // Pass and skip need nothing, whatever the finding says.
  CHECK(gpuenv::report::action_of({"x", Status::pass, "", "", "", Action::reboot}) == Action::none);
  CHECK(gpuenv::report::action_of({"x", Status::skip, "", "", "", Action::reboot}) == Action::none);

  std::vector<Finding> findings = {
      {"gpu.ecc", Status::fail, "", "", ""},
      {"gpu.ecc", Status::warn, "", "", ""},
      {"driver.library_mismatch", Status::fail, "", "", ""},
      {"profile.cuda.release", Status::fail, "", "", ""},
      {"xid.events", Status::fail, "", "", "", Action::reboot},  // brought by the rule from data/xid.toml
      {"not.in.the.table", Status::fail, "", "", ""},
  };
  gpuenv::doctor::assign_actions(findings, table());
  CHECK(findings[0].action == Action::reset_gpu);
  CHECK(findings[1].action == Action::none);
  CHECK(findings[2].action == Action::reboot);
  CHECK(findings[3].action == Action::drain_and_inspect);  // "profile.*"
  CHECK(findings[4].action == Action::reboot);
  CHECK_FALSE(findings[5].action.has_value());
  CHECK(gpuenv::report::action_of(findings[5]) == Action::drain_and_inspect);
  CHECK(gpuenv::report::node_action(findings) == Action::drain_and_inspect);

  // A case row is looked up by the rule that tells the case apart, never by the id alone.
  CHECK(gpuenv::doctor::case_action("gpu.row_remap", "failure") == Action::replace_hardware);
  CHECK(gpuenv::doctor::case_action("gpu.retired_pages", "table_full") == Action::replace_hardware);
  CHECK_FALSE(gpuenv::doctor::case_action("gpu.row_remap", "no-such-case").has_value());
  CHECK(table().action("gpu.row_remap", Status::fail) == Action::reset_gpu);
}

TEST_CASE("actions: a data overlay can change an action, and a bad action is an error naming the row",
          "[doctor][actions]") {
  const std::string shipped = gpuenv::testing::read_text((k_source / "data/doctor/actions.toml").string());
  const gpuenv::util::Overlay overlay = {{"actions.toml", "/etc/gpuenv/data.d/actions.toml",
                                          "[[action]]\nid = \"gpu.ecc\"\nfail = \"replace_hardware\"\n"
                                          "status = \"policy\"\nsource = \"our fleet RMAs on the first DBE\"\n"}};
  const auto merged = gpuenv::doctor::parse_actions(shipped, overlay);
  REQUIRE(merged);
  CHECK(merged->action("gpu.ecc", Status::fail) == Action::replace_hardware);
  const auto bad = gpuenv::doctor::parse_actions(
      "[[action]]\nid = \"x\"\nfail = \"panic\"\nstatus = \"policy\"\n"
      "source = \"s\"\n");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("`fail` must be"));
}

TEST_CASE("actions: doctor --json carries each finding's action and the node's, from the data", "[doctor][actions]") {
  struct Row {
    const char* tree;
    const char* id;
    const char* finding_action;
    const char* node_action;
  };
  const Row rows[] = {
      {"xid79", "xid.events", "reboot", "reboot"},  // Xid 79: NVIDIA's RESTART_BM
      // The node's action is the most disruptive: its PCIe link under load needs a person.
      {"t4-ecc-row-remap", "gpu.ecc", "reset_gpu", "drain_and_inspect"},
      {"a10g-row-remap-pending", "gpu.row_remap", "reset_gpu", "reset_gpu"},
      {"driver-library-mismatch", "driver.library_mismatch", "reboot", "reboot"},
      {"no-driver", "driver.kernel_module", "drain_and_inspect", "drain_and_inspect"},
      {"healthy-8xh100", "gpu.count", "none", "none"},
  };
  for (const Row& row : rows) {
    INFO(row.tree);
    const auto report = doctor_json(row.tree);
    CHECK(action_of_id(report, row.id) == row.finding_action);
    if (std::string(row.tree) != "healthy-8xh100") CHECK(report.at("action") == row.node_action);
  }
}
