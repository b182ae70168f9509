#include "doctor/thresholds.hpp"

#include <stdexcept>

#include "doctor/actions.hpp"
#include "doctor/instances.hpp"
#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::doctor {

std::span<const util::EmbeddedFile> embedded_doctor_data();  // generated from data/doctor/*.toml

namespace {

/// A row's `source`, after checking its `status` (the knowledge base's statuses, or a gpuenv "policy").
std::string read_source(util::TomlRow& row) {
  row.one_of("status", {"verified", "secondary", "unverified", "policy"});
  return row.text("source");
}

}  // namespace

const Threshold& Thresholds::at(const std::string& id) const {
  const auto it = values.find(id);
  if (it == values.end()) throw std::logic_error("threshold " + id + " missing from data/doctor/thresholds.toml");
  return it->second;
}

namespace {

const std::vector<util::RowKey> k_threshold_keys = {{"threshold", {"id"}}, {"throttle_reason", {"name"}}};

}  // namespace

std::vector<util::DataTable> data_tables() {
  std::vector<util::DataTable> tables;
  for (const util::EmbeddedFile& file : embedded_doctor_data()) {
    if (file.name == "thresholds.toml") tables.push_back({"thresholds.toml", file, k_threshold_keys});
    if (file.name == "instances.toml") tables.push_back({"instances.toml", file, instance_row_keys()});
    if (file.name == "actions.toml") tables.push_back({"actions.toml", file, action_row_keys()});
  }
  return tables;
}

util::Expected<util::Ok> check_data(const util::Overlay& overlay) {
  GPUENV_TRY(load_thresholds(overlay));
  GPUENV_TRY(load_actions(overlay));
  GPUENV_TRY(load_instances(overlay));
  return util::Ok{};
}

util::Expected<Thresholds> parse_thresholds(std::string_view text, const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto parsed,
                    util::read_data_table({"thresholds.toml", {"thresholds.toml", text}, k_threshold_keys}, overlay));
  Thresholds out;
  GPUENV_TRY(parsed.read_rows("threshold", [&out](util::TomlRow& row) {
    const std::string id = row.text("id");
    Threshold threshold{row.optional_number("warn_below"), row.optional_number("warn_at"),
                        row.optional_number("fail_at"), read_source(row)};
    if (!threshold.warn_below && !threshold.warn_at && !threshold.fail_at) {
      row.fail(id + " has no warn_below, warn_at or fail_at");
    }
    out.values[id] = threshold;
  }));
  GPUENV_TRY(parsed.read_rows("throttle_reason", [&out](util::TomlRow& row) {
    const std::string name = row.text("name");
    const std::string status_on = row.one_of("status_on", {"warn", "fail"});
    out.throttle_reasons[name] = {status_on == "fail" ? report::Status::fail : report::Status::warn,
                                  row.text("meaning"), read_source(row)};
  }));
  return out;
}

util::Expected<Thresholds> load_thresholds(const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto text, util::embedded_text(embedded_doctor_data(), "thresholds.toml"));
  return parse_thresholds(text, overlay);
}

util::Expected<const Thresholds*> builtin_thresholds() { return util::builtin_table<&load_thresholds>(); }

}  // namespace gpuenv::doctor
