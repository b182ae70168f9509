#include "install/checkpoint.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpuenv::install {

bool InstallState::is_completed(const std::string& id) const {
  return std::find(completed.begin(), completed.end(), id) != completed.end();
}

std::string state_json(const InstallState& state) {
  nlohmann::json json = {{"profile", state.profile},
                         {"target", state.target},
                         {"completed", state.completed},
                         {"failed", state.failed.empty() ? nlohmann::json() : nlohmann::json(state.failed)},
                         {"reboots", state.reboots},
                         {"updated", state.updated}};
  return json.dump(2) + "\n";
}

util::Expected<InstallState> parse_state(const std::string& text, const std::string& path) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  const auto bad = [&path](const std::string& why) {
    return util::Error::input(path + ": not a gpuenv install state file (" + why + ")",
                              "remove it and run `gpuenv install` without --resume");
  };
  if (!json.is_object()) return bad("not a JSON object");
  InstallState state;
  if (!json.contains("profile") || !json["profile"].is_string()) return bad("no \"profile\"");
  if (!json.contains("target") || !json["target"].is_string()) return bad("no \"target\"");
  if (!json.contains("completed") || !json["completed"].is_array()) return bad("no \"completed\" list");
  state.profile = json["profile"].get<std::string>();
  state.target = json["target"].get<std::string>();
  for (const nlohmann::json& id : json["completed"]) {
    if (!id.is_string()) return bad("\"completed\" holds a non-string");
    state.completed.push_back(id.get<std::string>());
  }
  if (json.contains("failed") && json["failed"].is_string()) state.failed = json["failed"].get<std::string>();
  if (json.contains("reboots") && json["reboots"].is_array()) {
    for (const nlohmann::json& id : json["reboots"]) {
      if (!id.is_string()) return bad("\"reboots\" holds a non-string");
      state.reboots.push_back(id.get<std::string>());
    }
  }
  if (json.contains("updated") && json["updated"].is_string()) state.updated = json["updated"].get<std::string>();
  return state;
}

util::Expected<std::optional<InstallState>> load_state(system::System& system, const std::string& path) {
  if (!system.exists(path)) return std::optional<InstallState>();
  // The state decides which steps root skips on --resume: one that another user could have written is not ours.
  if (auto problem = system.trust_problem(path)) {
    return util::Error::input(path + ": not trusted: " + *problem +
                                  ", so someone other than root could mark steps "
                                  "as done",
                              "keep the state directory owned by root and not writable by group or others "
                              "(`chown root: DIR && chmod go-w DIR`), or give --state-dir one that is");
  }
  GPUENV_TRY_ASSIGN(auto text, system.read_file(path));
  GPUENV_TRY_ASSIGN(auto state, parse_state(text, path));
  return std::optional<InstallState>(std::move(state));
}

util::Expected<util::Ok> save_state(system::System& system, const std::string& path, const InstallState& state) {
  return system.write_file_atomic(path, state_json(state));
}

}  // namespace gpuenv::install
