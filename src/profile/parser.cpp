#include "profile/parser.hpp"

#include <toml++/toml.h>

#include <algorithm>

#include "profile/fields.hpp"
#include "profile/key_depth.hpp"
#include "util/strings.hpp"

namespace gpuenv::profile {
namespace {

using util::Error;
using util::Expected;

/// Builds errors that point at a place in the file.
class Locator {
 public:
  explicit Locator(std::string_view origin) : m_origin(origin) {}

  Error at(const toml::node& node, std::string message, std::string remedy = {}) const {
    return at(node.source(), std::move(message), std::move(remedy));
  }
  Error at(const toml::source_region& region, std::string message, std::string remedy = {}) const {
    return Error::input(
        m_origin + ":" + std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column) + ": " + message,
        std::move(remedy));
  }
  Error whole(std::string message, std::string remedy = {}) const {
    return Error::input(m_origin + ": " + message, std::move(remedy));
  }

 private:
  std::string m_origin;
};

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

Error unknown_key(const Locator& where, const toml::node& node, std::string_view section, std::string_view key) {
  const std::string shown = section.empty() ? std::string(key) : std::string(section) + "." + std::string(key);
  std::string message = "unknown key `" + shown + "`";
  if (auto suggestion = util::closest_match(key, keys_in_section(section))) {
    message += "; did you mean `" + *suggestion + "`?";
  }
  return where.at(node, message, "see docs/profile-format.md for the keys of schema 1");
}

/// A string-typed scalar field, validated against its grammar.
Expected<util::Ok> read_scalar(const Locator& where, Profile& profile, const toml::node& node, const std::string& key) {
  if (is_boolean_field(key)) {
    const auto* flag = node.as_boolean();
    if (flag == nullptr) {
      return where.at(node, "`" + key + "` must be true or false, not " + type_name(node),
                      "write true or false, unquoted");
    }
    return set_field(profile, key, flag->get() ? "true" : "false");
  }
  const auto* text = node.as_string();
  if (text == nullptr) {
    std::string remedy = "quote the value";
    if (node.is_floating_point() || node.is_integer()) remedy += " (versions are strings: write \"12.4\", not 12.4)";
    return where.at(node, "`" + key + "` must be a string, not " + type_name(node), remedy);
  }
  if (auto set = set_field(profile, key, text->get()); !set) {
    return where.at(node, set.error().message, set.error().remedy);
  }
  return util::Ok{};
}

Expected<std::vector<std::string>> read_string_array(const Locator& where, const toml::node& node,
                                                     const std::string& key) {
  const auto* array = node.as_array();
  if (array == nullptr) return where.at(node, "`" + key + "` must be an array of strings, not " + type_name(node));
  std::vector<std::string> values;
  for (const toml::node& item : *array) {
    const auto* text = item.as_string();
    if (text == nullptr) {
      return where.at(item, "`" + key + "` must hold strings, found " + type_name(item), "quote each value");
    }
    values.push_back(text->get());
  }
  return values;
}

Expected<util::Ok> read_gpu(const Locator& where, Profile& profile, const toml::table& gpu) {
  for (const auto& [key, node] : gpu) {
    const std::string name(key.str());
    const std::string dotted = "gpu." + name;
    if (name != "compute_capabilities" && name != "models") return unknown_key(where, node, "gpu", name);
    GPUENV_TRY_ASSIGN(auto values, read_string_array(where, node, dotted));
    if (values.empty()) return where.at(node, "`" + dotted + "` is empty", "list at least one value or remove the key");
    if (name == "compute_capabilities") {
      for (const std::string& cc : values) {
        if (!is_compute_capability(cc)) {
          return where.at(node, "`gpu.compute_capabilities` holds \"" + cc + "\", which is not a compute capability",
                          "write X.Y, e.g. \"8.0\" or \"9.0\"");
        }
      }
      profile.gpu_compute_capabilities = std::move(values);
    } else {
      profile.gpu_models = std::move(values);
    }
  }
  return util::Ok{};
}

/// `pytorch` and `pytorch_style` come together: the style decides pip's flag, and a wrong one fails the build.
Expected<util::Ok> check_mirror_style(const Locator& where, const Mirrors& mirrors, const toml::table& table) {
  if (!mirrors.pytorch.empty() && mirrors.pytorch_style.empty()) {
    return where.at(*table.get("pytorch"), "`mirrors.pytorch` needs `mirrors.pytorch_style`",
                    "add `pytorch_style = \"find-links\"` under [mirrors] for a flat listing of wheel files (as Aliyun "
                    "serves) or `pytorch_style = \"index\"` for a PEP 503 index (as download.pytorch.org)");
  }
  if (mirrors.pytorch.empty() && !mirrors.pytorch_style.empty()) {
    return where.at(*table.get("pytorch_style"), "`mirrors.pytorch_style` is set without `mirrors.pytorch`",
                    "add `pytorch = \"https://...\"` under [mirrors], or remove `pytorch_style`");
  }
  return util::Ok{};
}

Expected<util::Ok> read_section(const Locator& where, Profile& profile, const std::string& section,
                                const toml::node& node) {
  if (section == "gpu") {
    if (!node.is_table()) return where.at(node, "`gpu` must be a table, not " + type_name(node));
    return read_gpu(where, profile, *node.as_table());
  }
  const auto* table = node.as_table();
  if (table == nullptr) {
    return where.at(node, "`" + section + "` must be a table, not " + type_name(node),
                    "write [" + section + "] followed by its keys");
  }
  for (const auto& [key, value] : *table) {
    const std::string name(key.str());
    const std::vector<std::string> allowed = keys_in_section(section);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      return unknown_key(where, value, section, name);
    GPUENV_TRY(read_scalar(where, profile, value, section + "." + name));
  }
  if (section == "mirrors") return check_mirror_style(where, profile.mirrors, *table);
  return util::Ok{};
}

/// The error for a matrix of more than k_max_matrix_cells cells (`cells` is a lower bound once over the limit).
util::Error too_many_cells(const Locator& where, const toml::node& node, std::size_t cells) {
  return where.at(
      node,
      "matrix: " + std::to_string(cells) + " cells or more, over the limit of " + std::to_string(k_max_matrix_cells),
      "split the matrix into several profiles, or list fewer values per axis");
}

/// A scalar matrix value as text: strings as they are; numbers are refused (12.4 is not "12.4").
Expected<std::string> matrix_value(const Locator& where, const toml::node& node, const std::string& key) {
  if (const auto* text = node.as_string()) {
    if (auto valid = validate_field(key, text->get()); !valid) {
      return where.at(node, "matrix: " + valid.error().message, valid.error().remedy);
    }
    return text->get();
  }
  return where.at(node, "matrix: values of `" + key + "` must be strings, not " + type_name(node), "quote the value");
}

Expected<std::string> matrix_key(const Locator& where, const toml::node& node, std::string_view key) {
  for (const FieldSpec& field : scalar_fields()) {
    if (field.key == key) {
      if (key == "name" || key == "description") {
        return where.at(node, "matrix: `" + std::string(key) + "` cannot vary", "vary a version field instead");
      }
      return std::string(key);
    }
  }
  if (key == "gpu.compute_capabilities" || key == "gpu.models") {
    return where.at(node, "matrix: `" + std::string(key) + "` is an array field and cannot be a matrix axis",
                    "set it in [gpu] for every cell, or make one profile per GPU target");
  }
  std::string message = "matrix: `" + std::string(key) + "` is not a profile field";
  if (auto suggestion = util::closest_match(key, all_field_keys())) message += "; did you mean `" + *suggestion + "`?";
  return where.at(node, message,
                  "matrix keys are dotted scalar fields such as \"cuda.version\" or \"framework.python\"");
}

Expected<std::vector<std::map<std::string, std::string>>> read_cell_list(const Locator& where, const toml::node& node,
                                                                         const std::string& what) {
  const auto* array = node.as_array();
  if (array == nullptr)
    return where.at(node, "matrix." + what + " must be an array of tables",
                    "write " + what + " = [ { \"cuda.version\" = \"12.4.1\" } ]");
  std::vector<std::map<std::string, std::string>> cells;
  for (const toml::node& item : *array) {
    const auto* table = item.as_table();
    if (table == nullptr) return where.at(item, "matrix." + what + " entries must be tables, not " + type_name(item));
    if (table->empty()) return where.at(item, "matrix." + what + " holds an empty entry", "name at least one field");
    std::map<std::string, std::string> cell;
    for (const auto& [key, value] : *table) {
      GPUENV_TRY_ASSIGN(auto field, matrix_key(where, value, key.str()));
      GPUENV_TRY_ASSIGN(auto text, matrix_value(where, value, field));
      cell[field] = text;
    }
    cells.push_back(std::move(cell));
  }
  return cells;
}

Expected<Matrix> read_matrix(const Locator& where, const toml::node& node) {
  const auto* table = node.as_table();
  if (table == nullptr) return where.at(node, "`matrix` must be a table, not " + type_name(node));
  Matrix matrix;
  for (const auto& [key, value] : *table) {
    const std::string name(key.str());
    if (name == "exclude" || name == "include") {
      GPUENV_TRY_ASSIGN(auto cells, read_cell_list(where, value, name));
      (name == "exclude" ? matrix.exclude : matrix.include) = std::move(cells);
      continue;
    }
    GPUENV_TRY_ASSIGN(auto field, matrix_key(where, value, name));
    const auto* array = value.as_array();
    if (array == nullptr) {
      return where.at(value, "matrix: `" + name + "` must be an array of values, not " + type_name(value),
                      "write \"" + name + "\" = [\"...\", \"...\"]");
    }
    if (array->empty()) return where.at(value, "matrix: `" + name + "` has no values", "list at least one value");
    if (array->size() > k_max_matrix_cells) return too_many_cells(where, value, array->size());
    std::vector<std::string> values;
    for (const toml::node& item : *array) {
      GPUENV_TRY_ASSIGN(auto text, matrix_value(where, item, field));
      if (std::find(values.begin(), values.end(), text) != values.end()) {
        return where.at(item, "matrix: `" + name + "` lists \"" + text + "\" twice", "remove the duplicate");
      }
      values.push_back(text);
    }
    matrix.axes.emplace_back(field, std::move(values));
  }
  std::size_t cells = matrix.axes.empty() ? 0 : 1;
  for (const auto& axis : matrix.axes) {
    // Each factor is at most k_max_matrix_cells (checked above), so the product cannot overflow before the check.
    cells *= axis.second.size();
    if (cells > k_max_matrix_cells) return too_many_cells(where, node, cells);
  }
  if (cells + matrix.include.size() > k_max_matrix_cells)
    return too_many_cells(where, node, cells + matrix.include.size());
  if (matrix.empty()) {
    return where.at(node, "the matrix is empty",
                    "give at least one axis (\"cuda.version\" = [...]) or remove [matrix]");
  }
  return matrix;
}

bool is_axis(const Matrix& matrix, std::string_view key) {
  return std::any_of(matrix.axes.begin(), matrix.axes.end(), [key](const auto& axis) { return axis.first == key; });
}

/// Required fields may come from a matrix axis instead of the base profile.
Expected<util::Ok> check_required(const Locator& where, const toml::table& root, const ProfileDocument& document) {
  const Profile& profile = document.base;
  if (!root.contains("schema")) return where.whole("missing required key `schema`", "add `schema = 1` at the top");
  for (const FieldSpec& field : scalar_fields()) {
    if (field.required && get_field(profile, field.key).empty() && !is_axis(document.matrix, field.key)) {
      const std::string key(field.key);
      const std::size_t dot = key.find('.');
      const std::string remedy = dot == std::string::npos
                                     ? "add `" + key + " = \"...\"` (" + std::string(field.grammar) + ")"
                                     : "add `" + key.substr(dot + 1) + " = \"...\"` under [" + key.substr(0, dot) +
                                           "] (" + std::string(field.grammar) + ")";
      return where.whole("missing required field `" + key + "`", remedy);
    }
  }
  if (!profile.framework_name.empty() || !profile.framework_version.empty() || !profile.framework_python.empty() ||
      !profile.framework_variant.empty()) {
    for (const char* key : {"name", "version", "python"}) {
      if (get_field(profile, std::string("framework.") + key).empty()) {
        return where.whole(std::string("[framework] is missing `") + key + "`",
                           std::string("add `") + key + " = \"...\"` under [framework]");
      }
    }
    if (!profile.framework_variant.empty() && profile.framework_name != "pytorch") {
      return where.whole("`framework.variant` applies to pytorch only", "remove `variant` from [framework]");
    }
  }
  return util::Ok{};
}

}  // namespace

Expected<ProfileDocument> parse_profile(std::string_view text, std::string_view origin) {
  const Locator where(origin);
  GPUENV_TRY(check_key_depth(text, origin));
  toml::parse_result parsed = toml::parse(text, origin);
  if (!parsed) {
    const toml::parse_error& error = parsed.error();
    return where.at(error.source(), std::string(error.description()), "fix the TOML syntax at that position");
  }
  const toml::table& root = parsed.table();
  ProfileDocument document;
  Profile& profile = document.base;
  profile.origin = std::string(origin);
  for (const auto& [key, node] : root) {
    const std::string name(key.str());
    if (name == "schema") {
      const auto* schema = node.as_integer();
      if (schema == nullptr || schema->get() != 1) {
        return where.at(node, "unsupported schema " + (schema ? std::to_string(schema->get()) : type_name(node)),
                        "this gpuenv reads `schema = 1`");
      }
    } else if (name == "name" || name == "description") {
      GPUENV_TRY(read_scalar(where, profile, node, name));
    } else if (name == "matrix") {
      GPUENV_TRY_ASSIGN(auto matrix, read_matrix(where, node));
      document.matrix = std::move(matrix);
    } else if (name == "os" || name == "cuda" || name == "cudnn" || name == "driver" || name == "image" ||
               name == "framework" || name == "gpu" || name == "mirrors" || name == "install") {
      GPUENV_TRY(read_section(where, profile, name, node));
    } else {
      return unknown_key(where, node, "", name);
    }
  }
  GPUENV_TRY(check_required(where, root, document));
  return document;
}

}  // namespace gpuenv::profile
