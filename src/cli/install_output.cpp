#include "cli/install_output.hpp"

#include <nlohmann/json.hpp>

#include "util/strings.hpp"

namespace gpuenv::cli {
namespace {

using Json = nlohmann::json;

Json finding_json(const report::Finding& finding) {
  Json out = {{"id", finding.id},
              {"status", std::string(report::to_string(finding.status))},
              {"message", finding.message},
              {"remedy", finding.remedy}};
  if (!finding.source.empty()) out["source"] = finding.source;
  return out;
}

Json step_json(const install::Step& step, const install::StepReport* report) {
  Json files = Json::array();
  for (const install::FileToWrite& file : step.files)
    files.push_back({{"path", file.path}, {"mode", file.mode}, {"content", file.content}});
  Json out = {{"id", step.id},
              {"why", step.why},
              {"commands", step.commands},
              {"files", files},
              {"done_if", step.done_if},
              {"timeout_s", step.timeout.count()},
              {"reboots", step.reboots},
              {"result", report ? std::string(install::to_string(report->result)) : "planned"}};
  if (step.done_if_stdout) {
    out["done_if_stdout"] = *step.done_if_stdout;
    out["done_if_match"] = std::string(install::to_string(step.done_if_match));
  }
  if (step.retries > 0) out["retries"] = {{"count", step.retries}, {"delay_s", step.retry_delay.count()}};
  Json checks = Json::array();
  for (const install::Check& check : step.checks)
    checks.push_back({{"argv", check.argv},
                      {"match", std::string(install::to_string(check.match))},
                      {"text", check.text},
                      {"meaning", check.meaning}});
  out["checks"] = checks;
  out["failure_stops"] = step.failure_stops;
  out["explain_failure"] = step.explain_failure;
  if (report != nullptr && !report->detail.empty()) out["detail"] = report->detail;
  return out;
}

/// An argv as one line a person can read (and paste): words with spaces or quotes are single-quoted.
std::string shown(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const std::string& word : argv) {
    const bool plain = word.find_first_of(" \t'\"$*\\") == std::string::npos && !word.empty();
    words.push_back(plain ? word : "'" + word + "'");
  }
  return util::join(words, " ");
}

/// `text` in double quotes with newlines as \n.
std::string escaped(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out + "\"";
}

/// " prints ..." for a done_if whose output matters ("" when only its exit code does).
std::string expectation(const install::Step& step) {
  if (!step.done_if_stdout) return "";
  switch (step.done_if_match) {
    case install::OutputMatch::exact:
      return step.done_if_stdout->empty() ? " prints nothing" : " prints " + escaped(*step.done_if_stdout);
    case install::OutputMatch::has_line:
      return " prints a line with " + escaped(*step.done_if_stdout);
    case install::OutputMatch::lines_prefixed:
      break;
  }
  return " prints only lines starting " + escaped(*step.done_if_stdout);
}

}  // namespace

std::string install_json(const install::InstallPlan& plan, const std::optional<install::ApplyReport>& report) {
  Json refusals = Json::array();
  for (const report::Finding& finding : plan.refusals) refusals.push_back(finding_json(finding));
  Json notes = Json::array();
  for (const report::Finding& finding : plan.notes) notes.push_back(finding_json(finding));
  Json steps = Json::array();
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const install::StepReport* step_report = report && i < report->steps.size() ? &report->steps[i] : nullptr;
    steps.push_back(step_json(plan.steps[i], step_report));
  }
  Json out = {
      {"schema", 1},
      {"mode", report ? "apply" : "dry-run"},
      {"profile", plan.profile},
      {"target",
       {{"distro", plan.target.distro},
        {"version", plan.target.version},
        {"arch", plan.target.arch},
        {"manager", plan.target.manager},
        {"repo_dir", plan.target.repo_dir},
        {"repo_url", plan.repo_url}}},
      {"driver",
       {{"branch", plan.driver.branch},
        {"modules", plan.driver.modules},
        {"source", plan.driver.source},
        {"lock", plan.driver.lock},
        {"how", plan.driver.how}}},
      {"fabric_manager", plan.fabric_manager},
      {"refusals", refusals},
      {"notes", notes},
      {"steps", steps},
      {"changed", report ? report->changed : false},
      {"reboot_required", report ? report->reboot_required : false},
      {"outcome",
       report ? std::string(install::to_string(report->outcome)) : (plan.refusals.empty() ? "planned" : "refused")},
      {"failed_step", report && !report->failed_step.empty() ? Json(report->failed_step) : Json()},
  };
  if (report) {
    out["message"] = report->message;
    out["log"] = report->log_path;
    out["state"] = report->state_path;
  }
  return out.dump(2) + "\n";
}

std::string install_plan_text(const install::InstallPlan& plan) {
  std::string out = "gpuenv install plan: " + plan.profile + " on " + plan.target.label();
  if (!plan.target.manager.empty())
    out += " (" + plan.target.manager + ", " +
           (plan.driver.source == "distro" ? "the distribution's archive" : plan.repo_url) + ")";
  out += "\n";
  if (!plan.driver.branch.empty()) {
    out += "driver: branch " + plan.driver.branch + ", " + plan.driver.modules + " modules, from " +
           plan.driver.source + (plan.driver.lock.empty() ? "" : ", kept by " + plan.driver.lock) + "\n";
    if (!plan.driver.how.empty()) out += "  chosen: " + plan.driver.how + "\n";
    if (plan.fabric_manager) out += "fabric manager: an NVSwitch system; installed at the driver's version\n";
  }
  for (const report::Finding& finding : plan.refusals) {
    out += "REFUSED " + finding.id + ": " + finding.message + "\n  fix: " + finding.remedy + "\n";
  }
  for (const report::Finding& finding : plan.notes) out += "note " + finding.id + ": " + finding.message + "\n";
  int number = 0;
  for (const install::Step& step : plan.steps) {
    out += "\n" + std::to_string(++number) + ". " + step.id + ": " + step.why + "\n";
    if (!step.done_if.empty()) out += "   skip when: " + shown(step.done_if) + expectation(step) + "\n";
    for (const install::FileToWrite& file : step.files) out += "   write " + file.path + "\n";
    for (const auto& argv : step.commands) out += "   $ " + shown(argv) + "\n";
    for (const install::Check& check : step.checks)
      out += "   check: " + shown(check.argv) + " prints a line with " + escaped(check.text) + "\n";
  }
  return out;
}

std::string install_report_text(const install::InstallPlan& plan, const install::ApplyReport& report) {
  std::string out;
  for (std::size_t i = 0; i < report.steps.size() && i < plan.steps.size(); ++i) {
    const install::StepReport& step = report.steps[i];
    out += std::string(install::to_string(step.result)) + "  " + step.id +
           (step.detail.empty() ? "" : ": " + step.detail) + "\n";
  }
  out += "outcome: " + std::string(install::to_string(report.outcome)) + ": " + report.message + "\n";
  out += std::string("changed: ") + (report.changed ? "yes" : "no") +
         ", reboot required: " + (report.reboot_required ? "yes" : "no") + ", log: " + report.log_path + "\n";
  return out;
}

}  // namespace gpuenv::cli
