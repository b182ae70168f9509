#pragma once
// Helpers for the install planner tests: a profile from a few lines, a plan for a target and node, steps by id.

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compat/knowledge_base.hpp"
#include "install/planner.hpp"
#include "profile/parser.hpp"
#include "support/minimal_profile.hpp"
#include "util/strings.hpp"

namespace gpuenv::testing {

/// A profile with `[cuda] version = cuda` and the given extra TOML, for `os` (default Ubuntu 22.04).
inline profile::Profile install_profile(const std::string& extra, const std::string& distro = "ubuntu",
                                        const std::string& version = "22.04", const std::string& cuda = "12.4.1") {
  const std::string text = minimal_profile(distro, version, cuda) + extra;
  auto parsed = profile::parse_profile(text, "t.toml");
  REQUIRE(parsed.has_value());
  return parsed->base;
}

inline install::InstallPlan make_plan(const profile::Profile& profile, install::Target target,
                                      install::NodeFacts node = {}, std::string cuda_repo = "",
                                      std::string toolkit_repo = "") {
  auto data = install::builtin_install_data();
  REQUIRE(data.has_value());
  auto kb = compat::builtin_knowledge_base();
  REQUIRE(kb.has_value());
  auto result = install::plan_install(
      profile, install::PlanRequest{std::move(target), std::move(node), std::move(cuda_repo), std::move(toolkit_repo)},
      **data, **kb);
  REQUIRE(result.has_value());
  return *result;
}

inline const install::Step* find_step(const install::InstallPlan& plan, const std::string& id) {
  const auto it =
      std::find_if(plan.steps.begin(), plan.steps.end(), [&id](const install::Step& s) { return s.id == id; });
  return it == plan.steps.end() ? nullptr : &*it;
}

inline std::vector<std::string> step_ids(const install::InstallPlan& plan) {
  std::vector<std::string> out;
  for (const install::Step& s : plan.steps) out.push_back(s.id);
  return out;
}

inline std::string refusal_ids(const install::InstallPlan& plan) {
  std::string out;
  for (const auto& f : plan.refusals) out += f.id + " ";
  return out;
}

inline std::string note_ids(const install::InstallPlan& plan) {
  std::string out;
  for (const auto& f : plan.notes) out += f.id + " ";
  return out;
}

/// Every argv of a step joined with spaces, one per element.
inline std::vector<std::string> commands_of(const install::Step& step) {
  std::vector<std::string> out;
  for (const auto& argv : step.commands) out.push_back(util::join(argv, " "));
  return out;
}

/// True when some command of the step is exactly `command` (argv joined with spaces).
inline bool runs(const install::Step& step, const std::string& command) {
  const auto all = commands_of(step);
  return std::find(all.begin(), all.end(), command) != all.end();
}

/// The content of the file a step writes at `path` ("" when it writes none there).
inline std::string file_of(const install::Step& step, const std::string& path) {
  for (const auto& file : step.files) {
    if (file.path == path) return file.content;
  }
  return "";
}

/// apt-get install argv prefix the apt backend writes, joined with spaces.
inline std::string apt_install(const std::string& packages) {
  return "env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -o "
         "Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold install -y " +
         packages;
}

}  // namespace gpuenv::testing
