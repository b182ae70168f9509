#pragma once
// Matrix expansion with GitHub Actions semantics: the product of the axes, minus exclude, plus include.

#include <string>
#include <vector>

#include "profile/profile.hpp"
#include "util/expected.hpp"

namespace gpuenv::profile {

/// Expands a document into its cells; a document without a matrix yields one cell with no assignments.
/// Order is deterministic: axes in alphabetical key order (toml++ tables are sorted), values in listed order,
/// cells added by include last.
std::vector<Cell> expand_matrix(const ProfileDocument& document);

/// Applies `--set FIELD=VALUE` overrides to a profile; an input Error for an unknown field or a bad value.
util::Expected<Profile> apply_overrides(Profile profile, const Assignments& overrides);

/// Parses "FIELD=VALUE" strings from the command line.
util::Expected<Assignments> parse_assignments(const std::vector<std::string>& items);

/// The cells whose assignments include every override (used to pick a cell with --set).
std::vector<Cell> select_cells(const std::vector<Cell>& cells, const Assignments& overrides);

/// The cells `--set` picks, and the assignments that picked them.
struct CellPick {
  std::vector<Cell> cells;  ///< in matrix order; empty when no cell has the values asked for
  Assignments selectors;    ///< the assignments to fields the matrix sets
};

/// The one matrix-cell rule of every command: an assignment to a field the matrix sets (an axis, or a field an
/// include entry adds) picks the cells with that value, an assignment to any other field overrides (apply it after).
/// When no cell has every picked value, the axis values alone pick. No assignments: every cell.
CellPick pick_cells(const ProfileDocument& document, const Assignments& assignments);

/// The one environment a node gets (doctor, cloud-init, install with --set): the single cell `assignments` pick, with
/// every assignment applied; a usage Error naming how many cells match when that is not one (`name` is the profile as
/// given).
util::Expected<Profile> resolve_cell(const ProfileDocument& document, const Assignments& assignments,
                                     const std::string& name);

}  // namespace gpuenv::profile
