#pragma once
// What to do about each finding (data/doctor/actions.toml, compiled in): one report::Action per finding id and
// status, and per case a rule tells apart ("gpu.row_remap/failure"). Docs: docs/doctor-json.md "Actions".

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/finding.hpp"
#include "util/data_table.hpp"
#include "util/expected.hpp"

namespace gpuenv::doctor {

/// One row: a finding id ("gpu.ecc"), an id with a case ("gpu.row_remap/failure") or a prefix ("profile.*").
struct ActionRow {
  std::string id;
  std::optional<report::Action> fail;  ///< unset: report::action_of's default
  std::optional<report::Action> warn;
  std::string status;
  std::string source;
};

struct ActionTable {
  std::vector<ActionRow> rows;
  /// The row for `id` (exact, else the longest "prefix.*" row that matches), or nullptr.
  const ActionRow* find(std::string_view id) const;
  /// The action the table gives `id` at `status`, or nullopt (no row, no column for that status, pass, skip).
  std::optional<report::Action> action(std::string_view id, report::Status status) const;
};

/// Parses actions.toml text with `overlay` merged; an Error names the row and key.
util::Expected<ActionTable> parse_actions(std::string_view text, const util::Overlay& overlay = {});
/// The embedded table with the installed overlay, parsed once; an Error only if the shipped data is broken.
/// The embedded actions.toml with `overlay` merged (parsed at each call).
util::Expected<ActionTable> load_actions(const util::Overlay& overlay);
util::Expected<const ActionTable*> builtin_actions();
/// How overlay rows of actions.toml are keyed (by `id`).
std::vector<util::RowKey> action_row_keys();

/// The builtin table's action for a case a rule tells apart: `case_action("gpu.row_remap", "failure")` reads the row
/// "gpu.row_remap/failure" at fail; nullopt when there is none (the finding then takes its id's row).
std::optional<report::Action> case_action(std::string_view id, std::string_view case_name,
                                          report::Status status = report::Status::fail);

/// Gives each finding that has no action yet (Xid findings bring theirs) the table's action for its id and status.
void assign_actions(std::vector<report::Finding>& findings, const ActionTable& table);

}  // namespace gpuenv::doctor
