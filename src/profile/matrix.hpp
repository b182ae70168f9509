#pragma once
// Matrix expansion with GitHub Actions semantics: the product of the axes, minus exclude, plus include.

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

}  // namespace gpuenv::profile
