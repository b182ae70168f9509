#include "doctor/actions.hpp"

#include <span>

#include "util/data_table.hpp"
#include "util/embedded_file.hpp"
#include "util/strings.hpp"
#include "util/toml_rows.hpp"

namespace gpuenv::doctor {

std::span<const util::EmbeddedFile> embedded_doctor_data();  // generated from data/doctor/*.toml

namespace {

std::optional<report::Action> read_action(util::TomlRow& row, std::string_view key) {
  if (row.optional_text(key).empty()) return std::nullopt;
  return report::parse_action(
      row.one_of(key, {"none", "restart_job", "reset_gpu", "reboot", "drain_and_inspect", "replace_hardware"}));
}

}  // namespace

std::vector<util::RowKey> action_row_keys() { return {{"action", {"id"}}}; }

const ActionRow* ActionTable::find(std::string_view id) const {
  const ActionRow* best = nullptr;
  std::size_t best_prefix = 0;
  for (const ActionRow& row : rows) {
    if (row.id == id) return &row;
    if (util::ends_with(row.id, ".*")) {
      const std::string_view prefix = std::string_view(row.id).substr(0, row.id.size() - 1);  // "profile."
      if (util::starts_with(id, prefix) && prefix.size() > best_prefix) {
        best = &row;
        best_prefix = prefix.size();
      }
    }
  }
  return best;
}

std::optional<report::Action> ActionTable::action(std::string_view id, report::Status status) const {
  const ActionRow* row = find(id);
  if (row == nullptr) return std::nullopt;
  if (status == report::Status::fail) return row->fail;
  if (status == report::Status::warn) return row->warn;
  return std::nullopt;
}

util::Expected<ActionTable> parse_actions(std::string_view text, const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto parsed,
                    util::read_data_table({"actions.toml", {"actions.toml", text}, action_row_keys()}, overlay));
  ActionTable out;
  GPUENV_TRY(parsed.read_rows("action", [&out](util::TomlRow& row) {
    ActionRow action;
    action.id = row.text("id");
    action.fail = read_action(row, "fail");
    action.warn = read_action(row, "warn");
    action.status = row.one_of("status", {"verified", "secondary", "unverified", "policy"});
    action.source = row.text("source");
    out.rows.push_back(std::move(action));
  }));
  return out;
}

util::Expected<ActionTable> load_actions(const util::Overlay& overlay) {
  GPUENV_TRY_ASSIGN(const auto text, util::embedded_text(embedded_doctor_data(), "actions.toml"));
  return parse_actions(text, overlay);
}

util::Expected<const ActionTable*> builtin_actions() { return util::builtin_table<&load_actions>(); }

std::optional<report::Action> case_action(std::string_view id, std::string_view case_name, report::Status status) {
  const auto table = builtin_actions();
  if (!table) return std::nullopt;
  const std::string key = std::string(id) + "/" + std::string(case_name);
  const ActionRow* row = (*table)->find(key);
  if (row == nullptr || row->id != key) return std::nullopt;
  return (*table)->action(key, status);
}

void assign_actions(std::vector<report::Finding>& findings, const ActionTable& table) {
  for (report::Finding& finding : findings) {
    if (!finding.action) finding.action = table.action(finding.id, finding.status);
  }
}

}  // namespace gpuenv::doctor
