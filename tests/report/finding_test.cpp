// report's vocabulary: status and action names, the action a finding calls for, the node's action, the verdict, the
// worst status and the counts over a list of findings (src/report/finding.hpp).

#include "report/finding.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

using gpuenv::report::Action;
using gpuenv::report::Finding;
using gpuenv::report::Status;
using gpuenv::report::Verdict;

namespace {

/// A finding with only the fields these tests judge.
Finding finding_with(Status status, std::optional<Action> action = std::nullopt) {
  return {"x.check", status, "", "", "", action};
}

}  // namespace

TEST_CASE("report: status and action names, and parse_action back from them", "[report]") {
  struct StatusRow {
    Status status;
    const char* name;
  };
  const StatusRow statuses[] = {
      {Status::pass, "pass"}, {Status::skip, "skip"}, {Status::warn, "warn"}, {Status::fail, "fail"}};
  for (const StatusRow& row : statuses) CHECK(gpuenv::report::to_string(row.status) == row.name);

  struct ActionRow {
    Action action;
    const char* name;
  };
  const ActionRow actions[] = {{Action::none, "none"},
                               {Action::restart_job, "restart_job"},
                               {Action::reset_gpu, "reset_gpu"},
                               {Action::reboot, "reboot"},
                               {Action::drain_and_inspect, "drain_and_inspect"},
                               {Action::replace_hardware, "replace_hardware"}};
  REQUIRE(std::size(actions) == std::size(gpuenv::report::k_actions));
  for (std::size_t i = 0; i < std::size(actions); ++i) {
    CAPTURE(actions[i].name);
    CHECK(gpuenv::report::k_actions[i] == actions[i].action);  // least disruptive first
    CHECK(gpuenv::report::to_string(actions[i].action) == actions[i].name);
    CHECK(gpuenv::report::parse_action(actions[i].name) == actions[i].action);
  }
  for (const char* unknown : {"", "Reboot", "drain", "reboot "}) {
    CAPTURE(unknown);
    CHECK_FALSE(gpuenv::report::parse_action(unknown).has_value());
  }
}

TEST_CASE("report: action_of is none for pass and skip, the finding's own action, else drain for a failure",
          "[report]") {
  struct Row {
    Status status;
    std::optional<Action> own;
    Action expected;
  };
  const Row rows[] = {
      {Status::pass, std::nullopt, Action::none},
      {Status::pass, Action::reboot, Action::none},  // pass and skip need nothing, whatever the finding says
      {Status::skip, Action::reboot, Action::none},
      {Status::warn, std::nullopt, Action::none},  // a warning changes nothing by default
      {Status::warn, Action::restart_job, Action::restart_job},
      {Status::fail, std::nullopt, Action::drain_and_inspect},  // a failure takes the node out for a person
      {Status::fail, Action::reset_gpu, Action::reset_gpu},
      {Status::fail, Action::none, Action::none},  // from data: a failure that needs no action
  };
  for (const Row& row : rows) {
    CAPTURE(gpuenv::report::to_string(row.status), row.own ? gpuenv::report::to_string(*row.own) : "unset");
    CHECK(gpuenv::report::action_of(finding_with(row.status, row.own)) == row.expected);
  }
}

TEST_CASE("report: the node's action is the most disruptive of its findings' actions", "[report]") {
  struct Row {
    const char* what;
    std::vector<Finding> findings;
    Action expected;
  };
  const Row rows[] = {
      {"no findings", {}, Action::none},
      {"all pass", {finding_with(Status::pass), finding_with(Status::pass, Action::reboot)}, Action::none},
      {"a warning", {finding_with(Status::pass), finding_with(Status::warn)}, Action::none},
      {"a failure", {finding_with(Status::warn), finding_with(Status::fail)}, Action::drain_and_inspect},
      {"a failure's own action above the default",
       {finding_with(Status::fail), finding_with(Status::fail, Action::replace_hardware)},
       Action::replace_hardware},
      {"the default above a lesser own action",
       {finding_with(Status::fail, Action::reboot), finding_with(Status::fail)},
       Action::drain_and_inspect},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    CHECK(gpuenv::report::node_action(row.findings) == row.expected);
  }
}

TEST_CASE("report: the verdict, the worst status and the counts of a list of findings", "[report]") {
  struct Row {
    std::vector<Status> statuses;
    Verdict verdict;
    Status worst;  ///< skip never is the worst: it says nothing was judged
  };
  const Row rows[] = {
      {{}, Verdict::ok, Status::pass},
      {{Status::pass}, Verdict::ok, Status::pass},
      {{Status::skip}, Verdict::ok, Status::pass},
      {{Status::skip, Status::pass}, Verdict::ok, Status::pass},
      {{Status::pass, Status::warn, Status::skip}, Verdict::degraded, Status::warn},
      {{Status::warn, Status::fail, Status::pass}, Verdict::not_ok, Status::fail},
      {{Status::fail, Status::skip}, Verdict::not_ok, Status::fail},
  };
  for (const Row& row : rows) {
    std::vector<Finding> findings;
    for (Status status : row.statuses) findings.push_back(finding_with(status));
    CAPTURE(row.statuses.size(), gpuenv::report::to_string(row.worst));
    CHECK(gpuenv::report::verdict_of(findings) == row.verdict);
    CHECK(gpuenv::report::worst_status(findings) == row.worst);
    for (Status status : {Status::pass, Status::skip, Status::warn, Status::fail}) {
      CHECK(gpuenv::report::count_status(findings, status) ==
            static_cast<std::size_t>(std::count(row.statuses.begin(), row.statuses.end(), status)));
    }
  }
}
