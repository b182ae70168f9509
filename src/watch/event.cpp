#include "watch/event.hpp"

#include <nlohmann/json.hpp>

namespace gpuenv::watch {

namespace {

using nlohmann::json;

json optional_number(const std::optional<std::uint64_t>& value) { return value ? json(*value) : json(nullptr); }

std::optional<std::uint64_t> number_at(const json& array, std::size_t at) {
  if (!array.is_array() || at >= array.size() || !array[at].is_number_unsigned()) return std::nullopt;
  return array[at].get<std::uint64_t>();
}

/// {"links": [[link, replay, recovery, crc flit, crc data], ...], "counts": [replay, recovery, crc]}, null for a
/// value not read: compact, as the state is written with every interval. NVLink5 adds to a link the pairs
/// [[field, value], ...] of its counters as a sixth element, and to the counts its two sums (a state written before
/// has neither: they read as not known).
json baseline_json(const NvLinkBaseline& baseline) {
  json links = json::array();
  for (const probe::NvLinkCounters& link : baseline.links) {
    json entry = {link.link, optional_number(link.replay), optional_number(link.recovery),
                  optional_number(link.crc_flit), optional_number(link.crc_data)};
    if (!link.nvlink5.empty()) {
      json counters = json::array();
      for (const probe::NvLink5Counter& counter : link.nvlink5) counters.push_back({counter.field, counter.value});
      entry.push_back(counters);
    }
    links.push_back(entry);
  }
  json counts = {optional_number(baseline.replay), optional_number(baseline.recovery), optional_number(baseline.crc)};
  if (baseline.nvlink5_errors || baseline.nvlink5_warnings) {
    counts.push_back(optional_number(baseline.nvlink5_errors));
    counts.push_back(optional_number(baseline.nvlink5_warnings));
  }
  json out = {{"links", links}, {"counts", counts}};
  if (!baseline.boot.empty()) out["boot"] = baseline.boot;
  return out;
}

NvLinkBaseline baseline_from(const json& value) {
  NvLinkBaseline baseline;
  if (!value.is_object()) return baseline;
  if (value.contains("links") && value["links"].is_array()) {
    for (const json& link : value["links"]) {
      const auto number = number_at(link, 0);
      if (!number) continue;
      probe::NvLinkCounters read{static_cast<unsigned>(*number),
                                 true,
                                 number_at(link, 1),
                                 number_at(link, 2),
                                 number_at(link, 3),
                                 number_at(link, 4)};
      if (link.size() > 5 && link[5].is_array()) {
        for (const json& pair : link[5]) {
          const auto field = number_at(pair, 0), count = number_at(pair, 1);
          if (field && count) read.nvlink5.push_back({static_cast<unsigned>(*field), *count});
        }
      }
      baseline.links.push_back(std::move(read));
    }
  }
  if (value.contains("boot") && value["boot"].is_string()) baseline.boot = value["boot"].get<std::string>();
  if (value.contains("counts")) {
    baseline.replay = number_at(value["counts"], 0);
    baseline.recovery = number_at(value["counts"], 1);
    baseline.crc = number_at(value["counts"], 2);
    baseline.nvlink5_errors = number_at(value["counts"], 3);
    baseline.nvlink5_warnings = number_at(value["counts"], 4);
  }
  return baseline;
}

}  // namespace

std::string RuleState::to_json() const {
  json open_conditions = json::object();
  for (const auto& [key, condition] : open) {
    open_conditions[key] = {{"since_ms", condition.since_ms},
                            {"last_seen_ms", condition.last_seen_ms},
                            {"status", std::string(report::to_string(condition.status))}};
  }
  json out{{"open", open_conditions}};
  if (most_gpus) out["most_gpus"] = *most_gpus;
  out["most_gpus_boot"] = most_gpus_boot;
  out["idle_since_ms"] = idle_since_ms;
  json links = json::object();
  for (const auto& [key, baseline] : nvlink) links[key] = baseline_json(baseline);
  out["nvlink"] = links;
  return out.dump();
}

RuleState RuleState::from_json(const std::string& text) {
  RuleState state;
  const json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_object()) return state;
  if (parsed.contains("most_gpus") && parsed["most_gpus"].is_number_unsigned())
    state.most_gpus = parsed["most_gpus"].get<unsigned>();
  if (parsed.contains("most_gpus_boot") && parsed["most_gpus_boot"].is_string())
    state.most_gpus_boot = parsed["most_gpus_boot"].get<std::string>();
  if (parsed.contains("idle_since_ms") && parsed["idle_since_ms"].is_object()) {
    for (const auto& [key, value] : parsed["idle_since_ms"].items()) {
      if (value.is_number_integer()) state.idle_since_ms[key] = value.get<std::int64_t>();
    }
  }
  if (parsed.contains("nvlink") && parsed["nvlink"].is_object()) {
    for (const auto& [key, value] : parsed["nvlink"].items()) state.nvlink[key] = baseline_from(value);
  }
  if (!parsed.contains("open") || !parsed["open"].is_object()) return state;
  for (const auto& [key, value] : parsed["open"].items()) {
    if (!value.is_object() || !value.contains("since_ms") || !value.contains("last_seen_ms")) continue;
    if (!value["since_ms"].is_number_integer() || !value["last_seen_ms"].is_number_integer()) continue;
    Condition condition;
    condition.since_ms = value["since_ms"].get<std::int64_t>();
    condition.last_seen_ms = value["last_seen_ms"].get<std::int64_t>();
    const std::string status = value.value("status", "warn");
    condition.status = status == "fail"   ? report::Status::fail
                       : status == "pass" ? report::Status::pass
                                          : report::Status::warn;
    state.open.emplace(key, condition);
  }
  return state;
}

}  // namespace gpuenv::watch
