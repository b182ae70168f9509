#include "doctor/thresholds.hpp"

#include <toml++/toml.h>

#include <stdexcept>

namespace gpuenv::doctor {

std::span<const util::EmbeddedFile> embedded_doctor_data();  // generated from data/doctor/*.toml

namespace {

std::optional<double> number(const toml::table& row, const char* key) {
  if (const toml::node* node = row.get(key)) {
    if (auto value = node->value<double>()) return *value;
  }
  return std::nullopt;
}

}  // namespace

const Threshold& Thresholds::at(const std::string& id) const {
  const auto it = values.find(id);
  if (it == values.end()) throw std::logic_error("threshold " + id + " missing from data/doctor/thresholds.toml");
  return it->second;
}

util::Expected<Thresholds> parse_thresholds(std::string_view text) {
  toml::parse_result parsed = toml::parse(text, std::string_view("thresholds.toml"));
  if (!parsed) return util::Error::internal("thresholds.toml: " + std::string(parsed.error().description()));
  Thresholds out;
  const toml::table& root = parsed.table();
  if (const toml::array* rows = root["threshold"].as_array()) {
    for (const toml::node& node : *rows) {
      const toml::table* row = node.as_table();
      const auto id = row ? row->get_as<std::string>("id") : nullptr;
      const auto source = row ? row->get_as<std::string>("source") : nullptr;
      if (id == nullptr || source == nullptr)
        return util::Error::internal("thresholds.toml: a [[threshold]] lacks id or source");
      Threshold threshold{number(*row, "warn_below"), number(*row, "warn_at"), number(*row, "fail_at"), source->get()};
      if (!threshold.warn_below && !threshold.warn_at && !threshold.fail_at) {
        return util::Error::internal("thresholds.toml: " + id->get() + " has no warn_below, warn_at or fail_at");
      }
      out.values[id->get()] = threshold;
    }
  }
  if (const toml::array* rows = root["throttle_reason"].as_array()) {
    for (const toml::node& node : *rows) {
      const toml::table* row = node.as_table();
      const auto name = row ? row->get_as<std::string>("name") : nullptr;
      const auto status = row ? row->get_as<std::string>("status_on") : nullptr;
      const auto meaning = row ? row->get_as<std::string>("meaning") : nullptr;
      const auto source = row ? row->get_as<std::string>("source") : nullptr;
      if (!name || !status || !meaning || !source || (status->get() != "warn" && status->get() != "fail")) {
        return util::Error::internal(
            "thresholds.toml: a [[throttle_reason]] needs name, status_on (warn|fail), meaning, source");
      }
      out.throttle_reasons[name->get()] = {status->get() == "fail" ? report::Status::fail : report::Status::warn,
                                           meaning->get(), source->get()};
    }
  }
  return out;
}

util::Expected<const Thresholds*> builtin_thresholds() {
  static const util::Expected<Thresholds> thresholds = [] {
    for (const util::EmbeddedFile& file : embedded_doctor_data()) {
      if (file.name == "thresholds.toml") return parse_thresholds(file.contents);
    }
    return util::Expected<Thresholds>(util::Error::internal("thresholds.toml is not compiled in"));
  }();
  if (!thresholds) return thresholds.error();
  return &thresholds.value();
}

}  // namespace gpuenv::doctor
