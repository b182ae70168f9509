// TomlFile::merge (data overlays) and the writers `gpuenv data show` prints a merged table with.

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include "util/strings.hpp"
#include "util/toml_internal.hpp"

namespace gpuenv::util {

namespace {

std::string at(const std::string& path, const toml::node& node) {
  return path + ":" + std::to_string(node.source().begin.line);
}

/// The row's key fields as one comparable text, or nullopt when a field is missing (the reader reports it).
std::optional<std::string> key_text(const toml::table& row, const RowKey& key) {
  std::string out;
  for (const std::string_view field : key.fields) {
    const toml::node* node = row.get(field);
    if (node == nullptr) return std::nullopt;
    if (const auto* text = node->as_string()) {
      out += text->get();
    } else if (const auto* number = node->as_integer()) {
      out += std::to_string(number->get());
    } else if (const auto* array = node->as_array()) {
      for (const toml::node& item : *array) out += item.value_or(std::string("?")) + ",";
    } else {
      return std::nullopt;
    }
    out += '\x1f';
  }
  return out;
}

/// Replaces the row of `base` with the same key as `row`, or appends `row`.
void merge_row(toml::array& base, toml::table&& row, const RowKey* key) {
  const std::optional<std::string> wanted = key != nullptr ? key_text(row, *key) : std::nullopt;
  if (wanted) {
    for (auto it = base.begin(); it != base.end(); ++it) {
      const toml::table* existing = it->as_table();
      if (existing != nullptr && key_text(*existing, *key) == wanted) {
        base.replace(it, std::move(row));
        return;
      }
    }
  }
  base.push_back(std::move(row));
}

Expected<Ok> merge_array(toml::array& base, toml::node& overlay, const std::string& path, std::string_view name,
                         const std::vector<RowKey>& keys) {
  toml::array* rows = overlay.as_array();
  if (rows == nullptr || !rows->is_array_of_tables()) {
    return Error::input(at(path, overlay) + ": `" + std::string(name) + "` must be rows ([[" + std::string(name) +
                            "]]), as in the built-in table",
                        "write each row as a [[" + std::string(name) + "]] table");
  }
  const auto key = std::find_if(keys.begin(), keys.end(), [name](const RowKey& k) { return k.array == name; });
  for (toml::node& row : *rows) merge_row(base, std::move(*row.as_table()), key == keys.end() ? nullptr : &*key);
  return Ok{};
}

Expected<Ok> merge_table(toml::table& base, toml::node& overlay, const std::string& path, std::string_view name) {
  toml::table* values = overlay.as_table();
  if (values == nullptr)
    return Error::input(at(path, overlay) + ": `" + std::string(name) + "` must be a [" + std::string(name) + "] table",
                        "write it as in the built-in table");
  for (auto&& [key, value] : *values) {
    if (!base.contains(key.str())) {
      return Error::input(at(path, value) + ": [" + std::string(name) + "] has no key `" + std::string(key.str()) + "`",
                          "an overlay replaces the keys of [" + std::string(name) + "]; check the spelling");
    }
    // A named reference, not the structured binding: clang 14 (the fuzz build) cannot capture bindings.
    const toml::key& replaced = key;
    value.visit([&base, &replaced](auto&& concrete) { base.insert_or_assign(replaced, std::move(concrete)); });
  }
  return Ok{};
}

std::string known_keys(const toml::table& root) {
  std::vector<std::string> names;
  for (const auto& [key, node] : root) names.emplace_back(key.str());
  return join(names, ", ");
}

// ---- writers ----------------------------------------------------------------------------------------------------

std::string quoted_string(std::string_view text, bool json) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, json ? "\\u%04x" : "\\u%04X", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string scalar(const toml::node& node, bool json) {
  if (const auto* text = node.as_string()) return quoted_string(text->get(), json);
  if (const auto* number = node.as_integer()) return std::to_string(number->get());
  if (const auto* flag = node.as_boolean()) return flag->get() ? "true" : "false";
  if (const auto* real = node.as_floating_point()) {
    std::ostringstream out;
    out << real->get();
    const std::string text = out.str();
    return text.find_first_of(".e") == std::string::npos ? text + ".0" : text;
  }
  if (const auto* array = node.as_array()) {
    std::vector<std::string> items;
    for (const toml::node& item : *array) items.push_back(scalar(item, json));
    return "[" + join(items, ", ") + "]";
  }
  if (const auto* table = node.as_table()) {
    std::vector<std::string> items;
    for (const auto& [key, value] : *table)
      items.push_back((json ? quoted_string(key.str(), true) + ": " : std::string(key.str()) + " = ") +
                      scalar(value, json));
    return "{" + join(items, ", ") + "}";
  }
  return "\"\"";  // dates and times: no data table uses them
}

void write_toml_table(std::ostringstream& out, const toml::table& table) {
  for (const auto& [key, value] : table) out << key.str() << " = " << scalar(value, false) << "\n";
}

std::string json_table(const toml::table& table, const std::string& overlay, const std::string& line) {
  std::vector<std::string> items;
  for (const auto& [key, value] : table) items.push_back(quoted_string(key.str(), true) + ": " + scalar(value, true));
  if (!overlay.empty()) items.push_back("\"overlay\": " + quoted_string(overlay + ":" + line, true));
  return "{" + join(items, ", ") + "}";
}

}  // namespace

Expected<Ok> TomlFile::merge(std::string_view text, const std::string& path, const std::vector<RowKey>& keys) {
  toml::parse_result parsed = toml::parse(text, std::string_view(path));
  if (!parsed) {
    return Error::input(path + ":" + std::to_string(parsed.error().source().begin.line) + ": " +
                            std::string(parsed.error().description()),
                        "fix the TOML syntax");
  }
  m_parsed->overlay_paths.insert(path);
  toml::table overlay = std::move(parsed).table();
  toml::table& root = m_parsed->root;
  for (auto&& [key, node] : overlay) {
    const std::string name(key.str());
    toml::node* base = root.get(name);
    if (name == "as_of") {
      if (!node.is_string())
        return Error::input(at(path, node) + ": `as_of` must be a date \"YYYY-MM-DD\"",
                            "quote it: as_of = \"2026-12-01\"");
      // The later date wins: an overlay extends the data, it does not make it older.
      if (base == nullptr || base->value_or(std::string()) < node.as_string()->get())
        root.insert_or_assign(key, std::move(*node.as_string()));
      continue;
    }
    if (base == nullptr) {
      return Error::input(at(path, node) + ": unexpected key `" + name + "`; " + m_file + " has " + known_keys(root),
                          "an overlay file uses exactly its table's row format (docs/knowledge-base.md)");
    }
    Expected<Ok> merged = base->is_array() ? merge_array(*base->as_array(), node, path, name, keys)
                          : base->is_table()
                              ? merge_table(*base->as_table(), node, path, name)
                              : Expected<Ok>(Error::input(at(path, node) + ": `" + name +
                                                          "` is a built-in setting an overlay cannot change"));
    if (!merged) return merged;
  }
  return Ok{};
}

Expected<std::string> TomlFile::top_level_text(std::string_view key) const {
  const toml::node* node = m_parsed->root.get(key);
  if (node == nullptr) return std::string();
  if (!node->is_string()) return Error::internal(m_file + ": `" + std::string(key) + "` must be a string");
  return node->as_string()->get();
}

std::string TomlFile::to_toml() const {
  std::ostringstream out;
  for (const auto& [key, node] : m_parsed->root) {
    if (!node.is_table() && !node.is_array_of_tables()) out << key.str() << " = " << scalar(node, false) << "\n";
  }
  for (const auto& [key, node] : m_parsed->root) {
    if (const toml::table* table = node.as_table()) {
      out << "\n[" << key.str() << "]\n";
      write_toml_table(out, *table);
    } else if (node.is_array_of_tables()) {
      for (const toml::node& row : *node.as_array()) {
        const std::string overlay = m_parsed->overlay_path_of(row);
        out << "\n";
        if (!overlay.empty()) out << "# from overlay " << overlay << ":" << row.source().begin.line << "\n";
        out << "[[" << key.str() << "]]\n";
        write_toml_table(out, *row.as_table());
      }
    }
  }
  return out.str();
}

std::string TomlFile::to_json() const {
  std::vector<std::string> members;
  for (const auto& [key, node] : m_parsed->root) {
    std::string value;
    if (node.is_array_of_tables()) {
      std::vector<std::string> rows;
      for (const toml::node& row : *node.as_array())
        rows.push_back(
            json_table(*row.as_table(), m_parsed->overlay_path_of(row), std::to_string(row.source().begin.line)));
      value = "[" + join(rows, ",\n  ") + "]";
    } else {
      value = scalar(node, true);
    }
    members.push_back(quoted_string(key.str(), true) + ": " + value);
  }
  return "{" + join(members, ",\n ") + "}\n";
}

}  // namespace gpuenv::util
