// watch's own numbers (data/watch/watch_rules.toml, compiled in) and the thresholds it shares with doctor.

#include <functional>
#include <initializer_list>
#include <span>
#include <tuple>

#include "doctor/thresholds.hpp"
#include "util/toml_rows.hpp"
#include "watch/rules.hpp"

namespace gpuenv::watch {

std::span<const util::EmbeddedFile> embedded_watch_data();  // generated from data/watch/*.toml

namespace {

const std::vector<util::RowKey> k_keys = {{"setting", {"id"}}};

struct Row {
  std::string id;
  double value = 0;
  std::string source;
};

constexpr std::int64_t seconds_ms(double seconds) { return static_cast<std::int64_t>(seconds * 1000); }

/// Fills `settings` from doctor's thresholds: the temperature limit and the throttle reasons that fail or warn.
/// doctor's thresholds with the same `overlay` as watch's rules: checking an overlay directory must not read (and
/// so cache) the built-in table before the overlay is installed (util::builtin_table).
util::Expected<util::Ok> add_doctor_thresholds(RuleSettings& settings, const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto thresholds, doctor::load_thresholds(overlay));
  const doctor::Threshold& temperature = thresholds.at("gpu.temperature_c");
  if (!temperature.warn_at) return util::Error::internal("thresholds.toml: gpu.temperature_c has no warn_at");
  settings.temperature_warn_c = *temperature.warn_at;
  settings.sources["watch.temperature"] = temperature.source;
  settings.sources["watch.ecc_uncorrected"] = thresholds.at("gpu.ecc_uncorrected_volatile").source;
  settings.sources["watch.remapped_rows"] = thresholds.at("gpu.row_remap_uncorrectable").source;
  std::string throttle_sources;
  for (const auto& [name, reason] : thresholds.throttle_reasons) {
    const unsigned bit = throttle_bits({name});
    if (reason.status_on == report::Status::fail) settings.throttle_fail_bits |= bit;
    if (reason.status_on == report::Status::warn) settings.throttle_warn_bits |= bit;
    if (throttle_sources.empty()) throttle_sources = reason.source;
  }
  settings.sources["watch.throttle"] += "; " + throttle_sources;
  return util::Ok{};
}

}  // namespace

std::vector<util::DataTable> data_tables() {
  std::vector<util::DataTable> tables;
  for (const util::EmbeddedFile& file : embedded_watch_data()) tables.push_back({"watch_rules.toml", file, k_keys});
  return tables;
}

util::Expected<RuleSettings> parse_rule_settings(std::string_view toml_text, const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto parsed,
                    util::read_data_table({"watch_rules.toml", {"watch_rules.toml", toml_text}, k_keys}, overlay));
  if (const auto key = parsed.unexpected_key({"setting"}))
    return util::Error::internal("watch_rules.toml: unknown top-level key `" + *key + "`");
  std::vector<Row> rows;
  GPUENV_TRY(parsed.append_rows("setting", rows, [](util::TomlRow& row) {
    Row out;
    out.id = row.text("id");
    const auto value = row.optional_number("value");
    if (!value || *value < 0) row.fail("`value` must be a number of 0 or more");
    out.value = value.value_or(0);
    row.one_of("status", {"verified", "secondary", "unverified", "policy"});
    out.source = row.text("source");
    return out;
  }));
  RuleSettings settings;
  const auto take = [&rows](const std::string& id, std::string& source) -> util::Expected<double> {
    for (const Row& row : rows) {
      if (row.id == id) {
        source += (source.empty() ? "" : "; ") + row.source;
        return row.value;
      }
    }
    return util::Error::internal("watch_rules.toml: no setting `" + id + "`");
  };
  std::string& idle = settings.sources["watch.idle"];
  std::string& throttle = settings.sources["watch.throttle"];
  std::string retention;
  std::string clear;
  for (const auto& [id, source, apply] :
       std::initializer_list<std::tuple<const char*, std::string*, std::function<void(double)>>>{
           {"idle.utilization_below_percent", &idle, [&](double v) { settings.idle_below_percent = v; }},
           {"idle.window_seconds", &idle, [&](double v) { settings.idle_window_ms = seconds_ms(v); }},
           {"throttle.window_seconds", &throttle, [&](double v) { settings.throttle_window_ms = seconds_ms(v); }},
           {"throttle.active_fraction", &throttle, [&](double v) { settings.throttle_fraction = v; }},
           {"clear.quiet_seconds", &clear, [&](double v) { settings.clear_after_ms = seconds_ms(v); }},
           {"retention.raw_days", &retention, [&](double v) { settings.raw_retention_ms = seconds_ms(v * 86400); }},
           {"retention.hourly_days", &retention,
            [&](double v) { settings.hourly_retention_ms = seconds_ms(v * 86400); }},
       }) {
    GPUENV_TRY_ASSIGN(auto value, take(id, *source));
    apply(value);
  }
  if (settings.throttle_fraction > 1)
    return util::Error::internal("watch_rules.toml: throttle.active_fraction must be at most 1");
  GPUENV_TRY(add_doctor_thresholds(settings, overlay));
  return settings;
}

namespace {

util::Expected<RuleSettings> load_rule_settings(const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto text, util::embedded_text(embedded_watch_data(), "watch_rules.toml"));
  return parse_rule_settings(text, overlay);
}

}  // namespace

util::Expected<RuleSettings> builtin_rule_settings() { return load_rule_settings(util::installed_overlay()); }

util::Expected<util::Ok> check_data(const util::Overlay& overlay) {
  GPUENV_TRY(load_rule_settings(overlay));
  return util::Ok{};
}

}  // namespace gpuenv::watch
