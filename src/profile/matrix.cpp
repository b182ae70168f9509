#include "profile/matrix.hpp"

#include <algorithm>
#include <set>

#include "profile/fields.hpp"

namespace gpuenv::profile {
namespace {

bool cell_matches(const Assignments& cell, const std::map<std::string, std::string>& pattern) {
  return std::all_of(pattern.begin(), pattern.end(), [&cell](const auto& wanted) {
    return std::any_of(cell.begin(), cell.end(), [&wanted](const auto& have) {
      return have.first == wanted.first && have.second == wanted.second;
    });
  });
}

bool is_axis(const Matrix& matrix, const std::string& key) {
  return std::any_of(matrix.axes.begin(), matrix.axes.end(), [&key](const auto& axis) { return axis.first == key; });
}

std::vector<Assignments> cartesian_product(const Matrix& matrix) {
  std::vector<Assignments> cells;
  if (matrix.axes.empty()) return cells;
  cells.emplace_back();
  for (const auto& [key, values] : matrix.axes) {
    std::vector<Assignments> next;
    for (const Assignments& partial : cells) {
      for (const std::string& value : values) {
        Assignments extended = partial;
        extended.emplace_back(key, value);
        next.push_back(std::move(extended));
      }
    }
    cells = std::move(next);
  }
  return cells;
}

/// GitHub's include rule: an entry is added to every *original* combination (from the product) whose axis values
/// it does not contradict — its other fields are added, overwriting values earlier includes added; an entry that
/// fits no original combination becomes a new cell. Cells added by include are never extended by later entries.
void apply_includes(const Matrix& matrix, std::vector<Assignments>& cells) {
  const std::size_t originals = cells.size();
  for (const auto& entry : matrix.include) {
    bool added = false;
    for (std::size_t i = 0; i < originals; ++i) {
      Assignments& cell = cells[i];
      const bool contradicts = std::any_of(entry.begin(), entry.end(), [&](const auto& field) {
        if (!is_axis(matrix, field.first)) return false;
        const auto have = std::find_if(cell.begin(), cell.end(), [&](const auto& a) { return a.first == field.first; });
        return have != cell.end() && have->second != field.second;
      });
      if (contradicts) continue;
      added = true;
      for (const auto& field : entry) {
        if (is_axis(matrix, field.first)) continue;
        auto existing =
            std::find_if(cell.begin(), cell.end(), [&field](const auto& a) { return a.first == field.first; });
        if (existing == cell.end()) {
          cell.push_back(field);
        } else {
          existing->second = field.second;
        }
      }
    }
    if (!added) cells.emplace_back(entry.begin(), entry.end());
  }
}

Profile apply_assignments(const Profile& base, const Assignments& assignments) {
  Profile profile = base;
  for (const auto& [key, value] : assignments) {
    // Values were validated when the matrix was parsed.
    (void)set_field(profile, key, value);
  }
  return profile;
}

}  // namespace

std::string Cell::label() const {
  std::string out;
  for (const auto& [key, value] : assignments) {
    if (!out.empty()) out += ',';
    out += key + "=" + value;
  }
  return out;
}

std::vector<Cell> expand_matrix(const ProfileDocument& document) {
  if (document.matrix.empty()) return {Cell{{}, document.base, true}};
  std::vector<Assignments> cells = cartesian_product(document.matrix);
  std::erase_if(cells, [&document](const Assignments& cell) {
    return std::any_of(document.matrix.exclude.begin(), document.matrix.exclude.end(),
                       [&cell](const auto& pattern) { return cell_matches(cell, pattern); });
  });
  const std::size_t product_size = cells.size();
  apply_includes(document.matrix, cells);
  std::vector<Cell> out;
  out.reserve(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    Profile profile = apply_assignments(document.base, cells[i]);
    out.push_back(Cell{std::move(cells[i]), std::move(profile), i >= product_size});
  }
  return out;
}

util::Expected<Profile> apply_overrides(Profile profile, const Assignments& overrides) {
  for (const auto& [key, value] : overrides) {
    if (auto set = set_field(profile, key, value); !set) {
      util::Error error = set.error();
      error.message = "--set " + key + "=" + value + ": " + error.message;
      return error;
    }
  }
  return profile;
}

util::Expected<Assignments> parse_assignments(const std::vector<std::string>& items) {
  Assignments out;
  for (const std::string& item : items) {
    const std::size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0) {
      return util::Error::usage("--set " + item + ": expected FIELD=VALUE", "e.g. --set cuda.version=12.4.1");
    }
    const std::string key = item.substr(0, equals);
    const std::string value = item.substr(equals + 1);
    if (auto valid = validate_field(key, value); !valid) {
      util::Error error = valid.error();
      error.kind = util::ErrorKind::usage;
      error.message = "--set " + item + ": " + error.message;
      return error;
    }
    out.emplace_back(key, value);
  }
  return out;
}

std::vector<Cell> select_cells(const std::vector<Cell>& cells, const Assignments& overrides) {
  std::vector<Cell> out;
  for (const Cell& cell : cells) {
    const bool all = std::all_of(overrides.begin(), overrides.end(), [&cell](const auto& wanted) {
      return get_field(cell.profile, wanted.first) == wanted.second;
    });
    if (all) out.push_back(cell);
  }
  return out;
}

CellPick pick_cells(const ProfileDocument& document, const Assignments& assignments) {
  const std::vector<Cell> cells = expand_matrix(document);
  std::set<std::string> matrix_fields;
  for (const Cell& cell : cells) {
    for (const auto& [field, value] : cell.assignments) matrix_fields.insert(field);
  }
  CellPick pick;
  Assignments axis_selectors;
  for (const auto& assignment : assignments) {
    if (matrix_fields.contains(assignment.first)) pick.selectors.push_back(assignment);
    if (is_axis(document.matrix, assignment.first)) axis_selectors.push_back(assignment);
  }
  pick.cells = select_cells(cells, pick.selectors);
  // A value only an include entry sets (a field of its own) must not hide the cells the axes name.
  if (pick.cells.empty() && axis_selectors.size() < pick.selectors.size())
    pick.cells = select_cells(cells, axis_selectors);
  return pick;
}

util::Expected<Profile> resolve_cell(const ProfileDocument& document, const Assignments& assignments,
                                     const std::string& name) {
  const CellPick pick = pick_cells(document, assignments);
  if (pick.cells.size() != 1) {
    return util::Error::usage(name + ": " + std::to_string(pick.cells.size()) + " matrix cells match; a node is one",
                              "pick one cell with --set FIELD=VALUE (see `gpuenv matrix " + name + "`)");
  }
  return apply_overrides(pick.cells.front().profile, assignments);
}

}  // namespace gpuenv::profile
