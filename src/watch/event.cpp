#include "watch/event.hpp"

#include <nlohmann/json.hpp>

namespace gpuenv::watch {

std::string RuleState::to_json() const {
  nlohmann::json open_conditions = nlohmann::json::object();
  for (const auto& [key, condition] : open) {
    open_conditions[key] = {{"since_ms", condition.since_ms},
                            {"last_seen_ms", condition.last_seen_ms},
                            {"status", std::string(report::to_string(condition.status))}};
  }
  nlohmann::json out{{"open", open_conditions}};
  if (most_gpus) out["most_gpus"] = *most_gpus;
  return out.dump();
}

RuleState RuleState::from_json(const std::string& text) {
  RuleState state;
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_object()) return state;
  if (parsed.contains("most_gpus") && parsed["most_gpus"].is_number_unsigned())
    state.most_gpus = parsed["most_gpus"].get<unsigned>();
  if (!parsed.contains("open") || !parsed["open"].is_object()) return state;
  for (const auto& [key, value] : parsed["open"].items()) {
    if (!value.is_object() || !value.contains("since_ms") || !value.contains("last_seen_ms")) continue;
    if (!value["since_ms"].is_number_integer() || !value["last_seen_ms"].is_number_integer()) continue;
    Condition condition;
    condition.since_ms = value["since_ms"].get<std::int64_t>();
    condition.last_seen_ms = value["last_seen_ms"].get<std::int64_t>();
    const std::string status = value.value("status", "warn");
    condition.status = status == "fail" ? report::Status::fail
                       : status == "pass" ? report::Status::pass
                                          : report::Status::warn;
    state.open.emplace(key, condition);
  }
  return state;
}

}  // namespace gpuenv::watch
