// report's rendering: status labels, verdict words, the text table with its remedies, the JSON of a finding, and the
// cleaning of host text in both (src/report/render.hpp).

#include "report/render.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using gpuenv::report::Action;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::report::TextStyle;
using gpuenv::report::Verdict;

TEST_CASE("report: status labels, plain and coloured, and verdict words", "[report][render]") {
  struct Row {
    Status status;
    const char* plain;
    const char* colored;
  };
  const Row rows[] = {{Status::pass, "PASS", "\033[32mPASS\033[0m"},
                      {Status::warn, "WARN", "\033[33mWARN\033[0m"},
                      {Status::fail, "FAIL", "\033[31mFAIL\033[0m"},
                      {Status::skip, "SKIP", "\033[2mSKIP\033[0m"}};
  for (const Row& row : rows) {
    CAPTURE(row.plain);
    CHECK(gpuenv::report::status_label(row.status, TextStyle{false}) == row.plain);
    CHECK(gpuenv::report::status_label(row.status, TextStyle{true}) == row.colored);
  }
  CHECK(gpuenv::report::to_string(Verdict::ok) == "OK");
  CHECK(gpuenv::report::to_string(Verdict::degraded) == "DEGRADED");
  CHECK(gpuenv::report::to_string(Verdict::not_ok) == "NOT OK");
}

TEST_CASE("report: the text table aligns ids, and remedies list warnings and failures with their action",
          "[report][render]") {
  struct Row {
    const char* what;
    std::vector<Finding> findings;
    std::string expected;
  };
  const Row rows[] = {
      {"no findings", {}, ""},
      {"a pass: no remedies, even with a remedy text",
       {{"gpu.count", Status::pass, "8 GPUs", "nothing to do", ""}},
       "  PASS  gpu.count  8 GPUs\n"},
      {"a failure without an action from data: the default action, then the remedy",
       {{"gpu.count", Status::pass, "8 GPUs", "", ""},
        {"driver.loaded", Status::fail, "no driver", "install the driver", ""}},
       "  PASS  gpu.count      8 GPUs\n"
       "  FAIL  driver.loaded  no driver\n"
       "Remedies:\n"
       "  driver.loaded: [drain_and_inspect] install the driver\n"},
      {"a warning without a remedy text still names its action; a skip with one lists it without an action",
       {{"gpu.ecc", Status::warn, "2 corrected", "", "", Action::reset_gpu},
        {"fabric.nvlink", Status::skip, "no NVLink", "run as root", ""}},
       "  WARN  gpu.ecc        2 corrected\n"
       "  SKIP  fabric.nvlink  no NVLink\n"
       "Remedies:\n"
       "  gpu.ecc: [reset_gpu]\n"
       "  fabric.nvlink: run as root\n"},
      {"a fact from a data overlay is named after the message",
       {{"x.limit", Status::warn, "over", "", "data/x.toml (from overlay /etc/gpuenv/data.d/x.toml:3)"}},
       "  WARN  x.limit  over (from overlay /etc/gpuenv/data.d/x.toml:3)\n"
       "Remedies:\n"
       "  x.limit: [none]\n"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    CHECK(gpuenv::report::render_findings(row.findings, TextStyle{false}) == row.expected);
  }
}

TEST_CASE("report: host text in the table is cleaned, and the repairs are noted or handed back", "[report][render]") {
  const std::vector<Finding> findings = {{"os.release", Status::fail, "Ubuntu\nPASS forged", "fix \x1B[31mit", ""}};
  const std::string table =
      "  FAIL  os.release  Ubuntu\\nPASS forged\n"
      "Remedies:\n"
      "  os.release: [drain_and_inspect] fix \\x1B[31mit\n";
  CHECK(gpuenv::report::render_findings(findings, TextStyle{false}) ==
        table + "note: host text was cleaned for display: 2 control characters escaped\n");

  gpuenv::util::TextRepairs repairs;
  CHECK(gpuenv::report::render_findings(findings, TextStyle{false}, &repairs) == table);  // the caller notes them
  CHECK(repairs.control == 2);
  CHECK(gpuenv::report::repairs_note(repairs) ==
        "note: host text was cleaned for display: 2 control characters escaped\n");
  CHECK(gpuenv::report::repairs_note(gpuenv::util::TextRepairs{}).empty());
}

TEST_CASE("report: the JSON of a finding carries its remedy, its source when it has one, and its action",
          "[report][render]") {
  struct Row {
    const char* what;
    Finding finding;
    nlohmann::json expected;
  };
  const Row rows[] = {
      {"a pass without a source",
       {"gpu.count", Status::pass, "8 GPUs", "", ""},
       {{"id", "gpu.count"}, {"status", "pass"}, {"message", "8 GPUs"}, {"remedy", ""}, {"action", "none"}}},
      {"a failure with remedy and source, default action",
       {"driver.loaded", Status::fail, "no driver", "install the driver", "https://docs.nvidia.com/x"},
       {{"id", "driver.loaded"},
        {"status", "fail"},
        {"message", "no driver"},
        {"remedy", "install the driver"},
        {"source", "https://docs.nvidia.com/x"},
        {"action", "drain_and_inspect"}}},
      {"a warning with its action from data",
       {"gpu.ecc", Status::warn, "2 corrected", "reset the GPU", "", Action::reset_gpu},
       {{"id", "gpu.ecc"},
        {"status", "warn"},
        {"message", "2 corrected"},
        {"remedy", "reset the GPU"},
        {"action", "reset_gpu"}}},
  };
  nlohmann::json all = nlohmann::json::array();
  std::vector<Finding> findings;
  for (const Row& row : rows) {
    CAPTURE(row.what);
    CHECK(gpuenv::report::to_json(row.finding) == row.expected);
    all.push_back(row.expected);
    findings.push_back(row.finding);
  }
  CHECK(gpuenv::report::to_json(findings) == all);
  CHECK(gpuenv::report::to_json(std::vector<Finding>{}) == nlohmann::json::array());
}

TEST_CASE("report: host JSON is cleaned in values and keys, and says so at the top level", "[report][render]") {
  const std::string fffd = "\xEF\xBF\xBD";
  nlohmann::json json = {{"name", "Ubuntu\xFF"}, {"list", {"ok", "a\nb"}}, {"k\xFE", 1}};
  gpuenv::util::TextRepairs repairs;
  nlohmann::json cleaned = json;
  gpuenv::report::clean_json_strings(cleaned, repairs);
  CHECK(cleaned["name"] == "Ubuntu" + fffd);
  CHECK(cleaned["list"] == nlohmann::json({"ok", "a\nb"}));  // JSON escapes control characters itself
  CHECK(cleaned.contains("k" + fffd));
  CHECK(repairs.invalid_utf8 == 2);
  CHECK(repairs.control == 0);

  const nlohmann::json dumped = nlohmann::json::parse(gpuenv::report::dump_host_json(json));
  CHECK(dumped["host_text_cleaned"] == "2 invalid UTF-8 bytes replaced by U+FFFD");
  CHECK(dumped["name"] == "Ubuntu" + fffd);
  // Nothing to clean: no note, indent 2 and a final newline; an array gets no note even when cleaned.
  CHECK(gpuenv::report::dump_host_json({{"a", 1}}) == "{\n  \"a\": 1\n}\n");
  CHECK(gpuenv::report::dump_host_json(nlohmann::json::array({"x\xFF"})) == "[\n  \"x" + fffd + "\"\n]\n");
}
